;; checksum: the Internet checksum (RFC 1071) of the packet, replied as 2
;; bytes, big-endian: a loop over every 16-bit word, so its cost grows with
;; the packet (about 12 instructions a word), unlike echo's.
;;
;; Memory layout: 0..2 the reply, 16.. the packet buffer.
(module
  (import "isola" "reply" (func $reply (param i32 i32)))
  (memory (export "memory") 1)

  (func (export "packet_buffer") (param $len i32) (result i32)
    (local $pages i32)
    ;; pages needed = ceil((16 + len) / 64 KiB)
    (local.set $pages
      (i32.wrap_i64
        (i64.shr_u
          (i64.add (i64.extend_i32_u (local.get $len)) (i64.const 65551))
          (i64.const 16))))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (drop (memory.grow (i32.sub (local.get $pages) (memory.size))))))
    (i32.const 16))

  (func (export "process") (param $ptr i32) (param $len i32) (result i32)
    (local $i i32)
    (local $end i32)
    (local $sum i64)
    (local $folded i32)
    (local.set $i (local.get $ptr))
    (local.set $end (i32.add (local.get $ptr) (i32.and (local.get $len) (i32.const -2))))
    ;; sum the big-endian 16-bit words
    (block $done
      (loop $words
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $sum
          (i64.add (local.get $sum)
            (i64.extend_i32_u
              (i32.or
                (i32.shl (i32.load8_u (local.get $i)) (i32.const 8))
                (i32.load8_u offset=1 (local.get $i))))))
        (local.set $i (i32.add (local.get $i) (i32.const 2)))
        (br $words)))
    ;; an odd last byte is the high byte of a word padded with zero
    (if (i32.and (local.get $len) (i32.const 1))
      (then
        (local.set $sum
          (i64.add (local.get $sum)
            (i64.extend_i32_u (i32.shl (i32.load8_u (local.get $end)) (i32.const 8)))))))
    ;; fold the carries into 16 bits
    (block $done
      (loop $fold
        (br_if $done (i64.eqz (i64.shr_u (local.get $sum) (i64.const 16))))
        (local.set $sum
          (i64.add
            (i64.and (local.get $sum) (i64.const 0xffff))
            (i64.shr_u (local.get $sum) (i64.const 16))))
        (br $fold)))
    ;; its one's complement, big-endian
    (local.set $folded (i32.xor (i32.wrap_i64 (local.get $sum)) (i32.const 0xffff)))
    (i32.store8 (i32.const 0) (i32.shr_u (local.get $folded) (i32.const 8)))
    (i32.store8 (i32.const 1) (local.get $folded))
    (call $reply (i32.const 0) (i32.const 2))
    (i32.const 0)))
