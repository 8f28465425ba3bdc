;; echo: replies with the packet, unchanged.
;;
;; Packets land at address 0; packet_buffer grows the memory to fit a packet
;; larger than it (up to the cap: the host refuses a packet above the cap
;; before the kernel runs).
(module
  (import "isola" "reply" (func $reply (param i32 i32)))
  (memory (export "memory") 1)

  (func (export "packet_buffer") (param $len i32) (result i32)
    (local $pages i32)
    ;; pages needed = ceil(len / 64 KiB), in 64-bit arithmetic (len is unsigned).
    (local.set $pages
      (i32.wrap_i64
        (i64.shr_u
          (i64.add (i64.extend_i32_u (local.get $len)) (i64.const 65535))
          (i64.const 16))))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (drop (memory.grow (i32.sub (local.get $pages) (memory.size))))))
    (i32.const 0))

  (func (export "process") (param $ptr i32) (param $len i32) (result i32)
    (call $reply (local.get $ptr) (local.get $len))
    (i32.const 0)))
