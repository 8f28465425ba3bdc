#!/usr/bin/env python3
"""Python's zlib.compress (and zlib.decompress) of 4 KiB to 1 MiB, timed:
run it with the stock zlib and under the zlib interposer in one sitting
(docs/perf.md, "Unmodified applications"). One JSON line per size:
{"size": bytes, "compress_us": ..., "decompress_us": ...}, the median of
`rounds` timings of `number` calls each.

  zlib_timing.py [SECONDS_PER_SIZE]
"""

import json
import random
import sys
import time
import zlib

WORDS = [b"alpha ", b"bravo ", b"charlie ", b"delta ", b"echo ", b"foxtrot ", b"golf ", b"hotel "]


def text(size):
    """Text-like data: words at random from a small vocabulary, with digits."""
    rng = random.Random(size)
    out = bytearray()
    while len(out) < size:
        out += rng.choice(WORDS)
        if rng.random() < 0.15:
            out += str(rng.randrange(1000)).encode()
    return bytes(out[:size])


def per_call_us(call, seconds):
    """The median over 5 rounds of microseconds per call."""
    call()
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            call()
        took = time.perf_counter() - start
        if took > seconds / 10:
            break
        number *= 2
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(number):
            call()
        rounds.append((time.perf_counter() - start) / number * 1e6)
    return sorted(rounds)[2]


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    size = 4096
    while size <= 1 << 20:
        d = text(size)
        c = zlib.compress(d)
        assert zlib.decompress(c) == d
        print(
            json.dumps(
                {
                    "size": size,
                    "compressed": len(c),
                    "compress_us": round(per_call_us(lambda: zlib.compress(d), seconds), 1),
                    "decompress_us": round(per_call_us(lambda: zlib.decompress(c), seconds), 1),
                }
            ),
            flush=True,
        )
        size *= 2


if __name__ == "__main__":
    main()
