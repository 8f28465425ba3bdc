#!/usr/bin/env python3
"""Python's zlib module, unmodified, for the zlib interposer's test
(crates/isola-capi/tests/zlib_interposer.rs). The test runs this script
with and without LD_PRELOAD=libisola_zlib.so.

  emit DIR     (under the interposer) round trips of every size, kind and
               format, streaming with compressobj/decompressobj, the
               checksums; writes what zlib.compress made to DIR (the test
               checks the gzip files with `gzip -t`) and the checksums to
               DIR/sums.json; prints {"offloadable": N}: the calls that go
               to isolad when ISOLA_MIN_BYTES=0
  verify DIR   (without it) decompresses DIR's files with the stock zlib
               and recomputes the checksums: both must match
  fail         (under ISOLA_FALLBACK=error, isolad absent) prints what
               zlib.compress and zlib.decompress raise, and the checksums
  sums         (either) prints the checksums `fail` prints
  loop SECONDS (under the interposer) compress/decompress round trips of
               256 KiB until SECONDS pass or the file named by $STOP_FILE
               exists; prints {"rounds": N}

Any wrong answer raises (exit status 1).
"""

import json
import os
import random
import sys
import time
import zlib

SIZES = [0, 1, 8191, 8192, 8193, 1 << 20]
KINDS = ["text", "random"]
# wbits of zlib.compress: zlib, raw deflate, gzip
FORMATS = {15: "zz", -15: "raw", 31: "gz"}


def data(size, kind):
    """Deterministic input: text-like (compressible) or random bytes."""
    if kind == "random":
        return random.Random(size).randbytes(size)
    words = b"".join(b"%d the quick brown fox jumps over the lazy dog " % i for i in range(size // 40 + 1))
    return words[:size]


def checksums():
    """Every size and kind's CRC-32 and Adler-32, from the initial values
    and from others, whole and in two pieces."""
    out = {}
    for size in SIZES:
        for kind in KINDS:
            d = data(size, kind)
            half = size // 2
            out[f"{size}-{kind}"] = [
                zlib.crc32(d),
                zlib.crc32(d, 0xDEADBEEF),
                zlib.crc32(d[half:], zlib.crc32(d[:half])),
                zlib.adler32(d),
                zlib.adler32(d, 0x12345678),
                zlib.adler32(d[half:], zlib.adler32(d[:half])),
            ]
    return out


def streaming(d, wbits):
    """compressobj and decompressobj in pieces (the real libz's), mixed with
    the one-shot calls; returns how many one-shot calls had input."""
    calls = 0
    co = zlib.compressobj(6, zlib.DEFLATED, wbits)
    pieces = [co.compress(d[i : i + 1000]) for i in range(0, len(d), 1000)]
    # a copy mid-stream finishes the same stream
    twin = co.copy()
    c = b"".join(pieces) + co.flush()
    assert b"".join(pieces) + twin.flush() == c
    assert zlib.decompress(c, wbits) == d
    calls += 1
    do = zlib.decompressobj(wbits)
    out = b"".join(do.decompress(c[i : i + 777]) for i in range(0, len(c), 777)) + do.flush()
    assert out == d and do.eof and do.unused_data == b""
    # what zlib.compress made, read back in pieces with an output limit
    whole = zlib.compress(d, 6, wbits)
    calls += 1
    do = zlib.decompressobj(wbits)
    out = do.decompress(whole, 4096)
    while do.unconsumed_tail:
        out += do.decompress(do.unconsumed_tail, 4096)
    out += do.flush()
    assert out == d, "decompressobj with max_length"
    return calls


def emit(folder):
    """Round trips under the interposer; files and sums for `verify`."""
    offloadable = 0
    for size in SIZES:
        for kind in KINDS:
            d = data(size, kind)
            for wbits, ext in FORMATS.items():
                c = zlib.compress(d, 6, wbits)
                offloadable += size > 0
                with open(os.path.join(folder, f"{size}-{kind}.{ext}"), "wb") as f:
                    f.write(c)
                assert zlib.decompress(c, wbits) == d, (size, kind, wbits)
                offloadable += 1
                assert zlib.decompress(c, wbits, 1) == d, "growing from a 1-byte buffer"
                offloadable += 1
                if wbits > 0:
                    assert zlib.decompress(c, 47) == d, (size, kind, "auto")
                    offloadable += 1
                offloadable += streaming(d, wbits) - (size == 0)
                # junk after the stream: zlib.decompress ignores it (the
                # real inflate answers; the operator refuses it)
                assert zlib.decompress(c + b"junk", wbits) == d
                # a cut stream is an error, as zlib reports it
                try:
                    zlib.decompress(c[:-3], wbits)
                    raise AssertionError("a cut stream decompressed")
                except zlib.error as e:
                    assert "incomplete or truncated" in str(e) or "invalid" in str(e), e
            for level in (0, 1, 9):
                assert zlib.decompress(zlib.compress(d, level)) == d
                offloadable += (size > 0) + 1
    sums = checksums()
    offloadable += sum(
        (size > 0) * 4 + (size // 2 > 0) * 2 + (size - size // 2 > 0) * 2 for size in SIZES for _ in KINDS
    )
    with open(os.path.join(folder, "sums.json"), "w") as f:
        json.dump(sums, f)
    print(json.dumps({"offloadable": offloadable}))


def verify(folder):
    """The stock zlib decodes every file to its input; the sums match."""
    for size in SIZES:
        for kind in KINDS:
            d = data(size, kind)
            for wbits, ext in FORMATS.items():
                with open(os.path.join(folder, f"{size}-{kind}.{ext}"), "rb") as f:
                    c = f.read()
                do = zlib.decompressobj(wbits)
                assert do.decompress(c) + do.flush() == d, (size, kind, wbits)
                assert do.eof and do.unused_data == b"", (size, kind, wbits, "one whole stream")
    with open(os.path.join(folder, "sums.json")) as f:
        assert json.load(f) == json.loads(json.dumps(checksums())), "checksums differ"
    print(json.dumps({"verified": True}))


def fail():
    """Under ISOLA_FALLBACK=error with isolad absent."""
    d = data(1 << 16, "random")  # above the default thresholds, compressed too
    stock = zlib.compressobj()  # streaming is the real libz's: it works
    c = stock.compress(d) + stock.flush()
    result = {}
    for name, call in (("compress", lambda: zlib.compress(d)), ("decompress", lambda: zlib.decompress(c))):
        try:
            call()
            result[name] = "no error"
        except zlib.error as e:
            result[name] = str(e)
    result["sums"] = checksums()
    print(json.dumps(result))


def loop(seconds):
    """Round trips until told to stop; every one must be right."""
    stop = os.environ.get("STOP_FILE", "")
    d = data(1 << 18, "text")
    r = data(1 << 18, "random")
    rounds = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (stop and os.path.exists(stop)):
        for x in (d, r):
            assert zlib.decompress(zlib.compress(x)) == x
        rounds += 1
        print(json.dumps({"round": rounds}), flush=True)
    print(json.dumps({"rounds": rounds}), flush=True)


def main():
    cmd = sys.argv[1]
    if cmd == "emit":
        emit(sys.argv[2])
    elif cmd == "verify":
        verify(sys.argv[2])
    elif cmd == "fail":
        fail()
    elif cmd == "sums":
        print(json.dumps({"sums": checksums()}))
    elif cmd == "loop":
        loop(float(sys.argv[2]))
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
