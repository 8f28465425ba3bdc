;; grow: grows its memory by as many 64 KiB pages as the packet's first byte
;; says, and replies with what memory.grow returned (the old size in pages,
;; or -1) and the size after it, both as i32 little-endian. Growing past the
;; tenant's memory cap stops the packet (KernelError::MemoryCap).
(module
  (import "isola" "reply" (func $reply (param i32 i32)))
  (memory (export "memory") 1)

  (func (export "packet_buffer") (param $len i32) (result i32)
    (i32.const 16))

  (func (export "process") (param $ptr i32) (param $len i32) (result i32)
    (local $delta i32)
    (if (local.get $len)
      (then (local.set $delta (i32.load8_u (local.get $ptr)))))
    (i32.store (i32.const 0) (memory.grow (local.get $delta)))
    (i32.store (i32.const 4) (memory.size))
    (call $reply (i32.const 0) (i32.const 8))
    (i32.const 0)))
