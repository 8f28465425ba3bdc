#!/usr/bin/env python3
"""Isola's operators against the fastest reference tools on this machine.

Runs `isola bench ops` and, on the same payload bytes, `openssl speed -evp`
(AES-256-GCM, SHA-256), `lz4 -b` and `zstd -b`, then prints one table of
MB/s with the ratio ours / reference (1.00 = as fast): the median over
several rounds, each measuring ours and then the references, since this
machine's speed drifts by 10-30% from minute to minute. CRC-32C has no stock
tool here: its reference is crc-fast itself called directly through
`cargo bench -p isola-ops --bench ops` (see docs/perf.md).

Usage: scripts/perf_references.py [--seconds S] [--sizes 16KiB,1MiB] [--rounds N]
Needs: a build in the perf profile (`cargo build --profile perf -p isola-cli`), openssl, lz4, zstd.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ISOLA = os.path.join(os.path.dirname(__file__), "..", "target", "perf", "isola")


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True)


def openssl_speed(alg, size, seconds):
    """MB/s (10^6) of `openssl speed -evp ALG` at one block size."""
    out = run(["openssl", "speed", "-mr", "-evp", alg, "-bytes", str(size), "-seconds", str(seconds)])
    # Machine-readable: "+F:<n>:<name>:<bytes per second at each size>".
    for line in (out.stdout + out.stderr).splitlines():
        if line.startswith("+F:"):
            return float(line.split(":")[3]) / 1e6
    raise RuntimeError(f"no result from openssl speed {alg}: {out.stdout}{out.stderr}")


def bench_tool(tool, level, path, seconds):
    """(compress MB/s, decompress MB/s) of `lz4 -b` / `zstd -b` on one file."""
    out = run([tool, f"-b{level}", f"-i{max(1, int(seconds))}", path])
    text = out.stdout + out.stderr
    # Progress lines are overwritten with carriage returns: the result is
    # the last line that carries both speeds.
    for line in reversed(re.split(r"[\r\n]", text)):
        speeds = re.findall(r"([0-9.]+) MB/s", line)
        if len(speeds) >= 2:
            return float(speeds[0]), float(speeds[1])
    raise RuntimeError(f"cannot read {tool} -b output: {text}")


def one_round(args, tmp):
    """{(operation, size): (ours MB/s, reference name, reference MB/s)} of one round."""
    ours = json.loads(
        run(
            [ISOLA, "bench", "ops", "--ops", "aes-gcm-encrypt,sha256,lz4,unlz4,zstd,unzstd",
             "--sizes", args.sizes, "--seconds", str(args.seconds), "--json", "--save-payloads", tmp]
        ).stdout
    )
    mine = {(p["op"], p["size_bytes"]): p["mb_per_s"] for p in ours["points"]}
    rows = {}
    seconds = max(1, int(args.seconds))
    for size in sorted({p["size_bytes"] for p in ours["points"]}):
        payload = os.path.join(tmp, f"payload-{size}.bin")
        rows[("aes-256-gcm encrypt", size)] = (mine[("aes-gcm-encrypt", size)], "openssl speed -evp aes-256-gcm",
                                              openssl_speed("aes-256-gcm", size, seconds))
        rows[("sha256", size)] = (mine[("sha256", size)], "openssl speed -evp sha256",
                                 openssl_speed("sha256", size, seconds))
        for tool, op, level in [("lz4", "lz4", 1), ("zstd", "zstd", 3)]:
            comp, decomp = bench_tool(tool, level, payload, args.seconds)
            rows[(f"{op} compress", size)] = (mine[(op, size)], f"{tool} -b{level}", comp)
            rows[(f"{op} decompress", size)] = (mine[(f"un{op}", size)], f"{tool} -b{level}", decomp)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=1.0, help="seconds per measurement")
    ap.add_argument("--sizes", default="16KiB,1MiB", help="payload sizes (isola bench syntax)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds, ours and the reference alternating; medians are reported (the machine is noisy)")
    args = ap.parse_args()
    if not os.path.exists(ISOLA):
        sys.exit("build first: cargo build --profile perf -p isola-cli")
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
            rounds.append(one_round(args, tmp))
    print(f"{'operation':<22}{'size':>9}{'ours MB/s':>12}{'reference MB/s':>16}  {'ratio':>6}  "
          f"{'ratio range':>12}  reference")
    for key in rounds[0]:
        name, size = key
        ours = statistics.median(r[key][0] for r in rounds)
        ref = statistics.median(r[key][2] for r in rounds)
        ratios = sorted(r[key][0] / r[key][2] for r in rounds)
        print(f"{name:<22}{size:>9}{ours:>12.0f}{ref:>16.0f}  {statistics.median(ratios):>6.2f}  "
              f"{ratios[0]:>5.2f}-{ratios[-1]:<6.2f}  {rounds[0][key][1]}")


if __name__ == "__main__":
    main()
