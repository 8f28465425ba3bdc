;; out_of_bounds: echoes, except that a packet whose first byte is 0x01
;; makes it load from the last 4 bytes of the 32-bit address space, far
;; beyond its one page of memory: a trap.
(module
  (import "isola" "reply" (func $reply (param i32 i32)))
  (memory (export "memory") 1)

  (func (export "packet_buffer") (param $len i32) (result i32)
    (i32.const 0))

  (func (export "process") (param $ptr i32) (param $len i32) (result i32)
    (if (i32.and
          (i32.ne (local.get $len) (i32.const 0))
          (i32.eq (i32.load8_u (local.get $ptr)) (i32.const 0x01)))
      (then (drop (i32.load (i32.const -4)))))
    (call $reply (local.get $ptr) (local.get $len))
    (i32.const 0)))
