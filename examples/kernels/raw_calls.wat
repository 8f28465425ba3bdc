;; raw_calls: passes the host whatever ranges the packet names, unchecked:
;; a hostile kernel for tests. The packet (little-endian) is read as
;;   0   op (u8): 1 = reply, 2 = dma_write, anything else = return it as the
;;       kernel's error code
;;   4   ptr (i32)
;;   8   len (i32)
;;   12  host offset (i64), for dma_write
;; Shorter packets read zeros past their end (the buffer is zeroed first).
(module
  (import "isola" "reply" (func $reply (param i32 i32)))
  (import "isola" "dma_write" (func $dma_write (param i64 i32 i32)))
  (memory (export "memory") 1)

  (func (export "packet_buffer") (param $len i32) (result i32)
    ;; zero the 20 bytes the kernel reads, then take the packet at 0
    (memory.fill (i32.const 0) (i32.const 0) (i32.const 20))
    (i32.const 0))

  (func (export "process") (param $ptr i32) (param $len i32) (result i32)
    (local $op i32)
    (local.set $op (i32.load8_u (i32.const 0)))
    (if (i32.eq (local.get $op) (i32.const 1))
      (then
        (call $reply (i32.load (i32.const 4)) (i32.load (i32.const 8)))
        (return (i32.const 0))))
    (if (i32.eq (local.get $op) (i32.const 2))
      (then
        (call $dma_write (i64.load (i32.const 12)) (i32.load (i32.const 4)) (i32.load (i32.const 8)))
        (return (i32.const 0))))
    (local.get $op)))
