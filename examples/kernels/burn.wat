;; burn: loops forever on every packet, so that each one runs to its
;; flow's fuel limit and is stopped there: a neighbour whose every packet
;; costs the most the daemon lets it cost (scripts/sockperf_neighbour.py).
(module
  (memory (export "memory") 1)

  (func (export "packet_buffer") (param $len i32) (result i32)
    (i32.const 0))

  (func (export "process") (param $ptr i32) (param $len i32) (result i32)
    (loop $forever (br $forever))
    (i32.const 0)))
