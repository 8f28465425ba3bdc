;; sockperf_server: answers as `sockperf server` does, so that Mellanox's
;; sockperf client can measure a flow's round trip through isolad.
;;
;; A sockperf message starts with a 14-byte header in network byte order:
;; the sequence number (8 bytes), the flags (2 bytes: 1 = sent by a client,
;; 2 = asks for an answer, 4 = warm-up) and the length (4 bytes). The
;; server answers a message that asks for one with the same bytes, its
;; client flag cleared; it ignores every other message (a throughput
;; test's, a header too short).
(module
  (import "isola" "reply" (func $reply (param i32 i32)))
  (memory (export "memory") 1)

  (func (export "packet_buffer") (param $len i32) (result i32)
    (i32.const 0))

  (func (export "process") (param $ptr i32) (param $len i32) (result i32)
    (local $flags i32)
    (if (i32.lt_u (local.get $len) (i32.const 14))
      (then (return (i32.const 0))))
    ;; The flags' low byte (big-endian) is the header's tenth byte.
    (local.set $flags (i32.load8_u offset=9 (local.get $ptr)))
    (if (i32.eqz (i32.and (local.get $flags) (i32.const 2)))
      (then (return (i32.const 0))))
    (i32.store8 offset=9 (local.get $ptr) (i32.and (local.get $flags) (i32.const 0xfe)))
    (call $reply (local.get $ptr) (local.get $len))
    (i32.const 0)))
