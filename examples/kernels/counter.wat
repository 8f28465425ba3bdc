;; counter: keeps state across packets in its own memory and replies with it.
;;
;; Memory layout:
;;   0      packets seen (u64)
;;   8      bytes seen (u64)
;;   16     histogram of packets' first bytes: 256 x u32 (1 KiB)
;;   1040   scratch for the reply's last field (u32)
;;   2048   the packet buffer
;;
;; Reply (20 bytes, little-endian): packets seen (u64), bytes seen (u64),
;; then how many packets so far began with this packet's first byte (u32; 0
;; for an empty packet). Every 16th packet also asks for a DMA write of the
;; whole histogram (1 KiB) at offset 0 of the tenant's host region.
(module
  (import "isola" "reply" (func $reply (param i32 i32)))
  (import "isola" "dma_write" (func $dma_write (param i64 i32 i32)))
  (memory (export "memory") 1)

  (func (export "packet_buffer") (param $len i32) (result i32)
    (local $pages i32)
    ;; pages needed = ceil((2048 + len) / 64 KiB)
    (local.set $pages
      (i32.wrap_i64
        (i64.shr_u
          (i64.add (i64.extend_i32_u (local.get $len)) (i64.const 67583))
          (i64.const 16))))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (drop (memory.grow (i32.sub (local.get $pages) (memory.size))))))
    (i32.const 2048))

  (func (export "process") (param $ptr i32) (param $len i32) (result i32)
    (local $packets i64)
    (local $bin i32)
    ;; packets += 1; bytes += len
    (local.set $packets (i64.add (i64.load (i32.const 0)) (i64.const 1)))
    (i64.store (i32.const 0) (local.get $packets))
    (i64.store (i32.const 8)
      (i64.add (i64.load (i32.const 8)) (i64.extend_i32_u (local.get $len))))
    ;; histogram[first byte] += 1, its new value to the scratch word
    (if (local.get $len)
      (then
        (local.set $bin
          (i32.add (i32.const 16) (i32.shl (i32.load8_u (local.get $ptr)) (i32.const 2))))
        (i32.store (local.get $bin) (i32.add (i32.load (local.get $bin)) (i32.const 1)))
        (i32.store (i32.const 1040) (i32.load (local.get $bin))))
      (else
        (i32.store (i32.const 1040) (i32.const 0))))
    ;; the reply in two pieces: the two counters, then the bin
    (call $reply (i32.const 0) (i32.const 16))
    (call $reply (i32.const 1040) (i32.const 4))
    (if (i64.eqz (i64.rem_u (local.get $packets) (i64.const 16)))
      (then (call $dma_write (i64.const 0) (i32.const 16) (i32.const 1024))))
    (i32.const 0)))
