"""The harness of scripts/python_mm1.sh (issue 35): the `isola` binary's
`sim scenarios/mm1.toml --json` and scripts/python_mm1.py (the same M/M/1
driven from Python) as whole processes, taking turns for ROUNDS rounds,
each timed in wall-clock time and in CPU time (user + system, from the
kernel's accounting of finished children: what the process itself used,
whatever else the machine runs); then SimPy (scripts/simpy_mm1.py) for
SIMPY_ROUNDS rounds. Prints every round, and the ranges and medians of
the ratios Python / binary.

Usage: python3 python_mm1_bench.py ISOLA_BIN CUSTOMERS ROUNDS SIMPY_ROUNDS
"""

import json
import os
import resource
import statistics
import subprocess
import sys
import time


def timed(cmd):
    """Runs `cmd`; its stdout, wall time and CPU time (s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, wall, cpu


def span(values):
    return f"{min(values):.3f}-{max(values):.3f} (median {statistics.median(values):.3f})"


def main():
    isola_bin, customers, rounds, simpy_rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    here = os.path.dirname(os.path.abspath(__file__))
    binary_cmd = [isola_bin, "sim", "scenarios/mm1.toml", "--json"]
    python_cmd = [sys.executable, os.path.join(here, "python_mm1.py"), customers]
    walls, cpus, binary_cpu, python_cpu = [], [], [], []
    for r in range(rounds):
        out, bw, bc = timed(binary_cmd)
        binary_mean = json.loads(out)["policies"][0]["tenants"][0]["latency_ns"]["mean"]
        out, pw, pc = timed(python_cmd)
        python_mean = float(out)
        walls.append(pw / bw)
        cpus.append(pc / bc)
        binary_cpu.append(bc)
        python_cpu.append(pc)
        print(
            f"round {r + 1}: isola sim {bw:.3f} s wall {bc:.3f} s CPU (mean {binary_mean:.1f} ns)  "
            f"python {pw:.3f} s wall {pc:.3f} s CPU (mean {python_mean:.1f} ns)  "
            f"python/binary wall {pw / bw:.3f} CPU {pc / bc:.3f}",
            flush=True,
        )
    print(f"python / binary over {rounds} rounds: wall {span(walls)}, CPU {span(cpus)}")
    print(f"least CPU time: isola sim {min(binary_cpu):.3f} s, python {min(python_cpu):.3f} s: "
          f"{min(python_cpu) / min(binary_cpu):.3f}")
    for r in range(simpy_rounds):
        out, sw, sc = timed([sys.executable, os.path.join(here, "simpy_mm1.py"), customers])
        print(
            f"simpy round {r + 1}: {sw:.3f} s wall {sc:.3f} s CPU {out.strip()}  "
            f"simpy/binary CPU {sc / min(binary_cpu):.1f}  simpy/python CPU {sc / min(python_cpu):.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
