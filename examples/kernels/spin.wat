;; spin: echoes, except that a packet whose first byte is 0xff makes it loop
;; forever. The watchdog (fuel) stops that packet; the next is served.
(module
  (import "isola" "reply" (func $reply (param i32 i32)))
  (memory (export "memory") 1)

  (func (export "packet_buffer") (param $len i32) (result i32)
    (i32.const 0))

  (func (export "process") (param $ptr i32) (param $len i32) (result i32)
    (if (i32.and
          (i32.ne (local.get $len) (i32.const 0))
          (i32.eq (i32.load8_u (local.get $ptr)) (i32.const 0xff)))
      (then (loop $forever (br $forever))))
    (call $reply (local.get $ptr) (local.get $len))
    (i32.const 0)))
