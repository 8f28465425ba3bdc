#!/usr/bin/env python3
"""A latency-sensitive tenant that knows nothing of Isola: Python's hashlib.

It hashes REQUEST_BYTES-byte requests with hashlib.sha256 at a fixed rate
(open loop: each request is due at its slot, whatever the previous one
took) for a number of seconds, and prints its latencies as one JSON line:
count, p50, p99, p99.9, max (microseconds) and how many requests started
late. Run it under OPENSSL_CONF naming the isola provider
(scripts/unmodified_isolation.sh does) and its hashes become isolad tasks.
"""
import argparse
import hashlib
import json
import sys
import time


def percentile(sorted_values, q):
    """The q-quantile (0..1) by the nearest rank."""
    if not sorted_values:
        return 0.0
    rank = max(0, min(len(sorted_values) - 1, int(round(q * len(sorted_values) + 0.5)) - 1))
    return sorted_values[rank]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0, help="how long to run (default 5)")
    p.add_argument("--rate", type=float, default=500.0, help="requests per second (default 500)")
    p.add_argument("--bytes", type=int, default=4096, help="bytes per request (default 4096)")
    args = p.parse_args()
    if args.seconds <= 0 or args.rate <= 0 or args.bytes < 0:
        p.error("--seconds and --rate must be positive, --bytes not negative")
    data = bytes(i % 251 for i in range(args.bytes))
    expected = hashlib.sha256(data).hexdigest()
    period = 1.0 / args.rate
    n = int(args.seconds * args.rate)
    latencies = []
    late = 0
    start = time.perf_counter()
    for i in range(n):
        due = start + i * period
        now = time.perf_counter()
        if now < due:
            time.sleep(due - now)
        else:
            late += 1
        t0 = time.perf_counter_ns()
        digest = hashlib.sha256(data).hexdigest()
        latencies.append((time.perf_counter_ns() - t0) / 1000.0)
        if digest != expected:
            print(f"wrong digest at request {i}", file=sys.stderr)
            return 1
    latencies.sort()
    print(json.dumps({
        "count": n,
        "p50_us": round(percentile(latencies, 0.50), 1),
        "p99_us": round(percentile(latencies, 0.99), 1),
        "p999_us": round(percentile(latencies, 0.999), 1),
        "max_us": round(latencies[-1], 1) if latencies else 0.0,
        "late": late,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
