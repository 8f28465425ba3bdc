#!/usr/bin/env python3
"""Summarises repeated `isola demo --json` runs (docs/perf.md, issue 13).

Usage: scripts/demo_runs.py RUN.json [RUN.json ...]

Prints one Markdown row per run: the best policy, its LS SLA violations
(median [min-max] over the run's rounds), whether the verdict held, the
LS mean latency breakdown of the best policy, how much CPU other programs
used, and the warnings' first words; then how many runs held.
"""
import json
import sys


def pct(x):
    return f"{x * 100:.2f}%"


def us(ns):
    return f"{ns / 1000:.0f}"


def main(paths):
    print("| run | best | LS viol median [range] | verdict | LS mean: service / behind BS / engine idle (us) | others' CPUs | warnings |")
    print("| --- | --- | ---: | --- | ---: | ---: | --- |")
    held = 0
    for i, path in enumerate(paths, 1):
        with open(path) as f:
            r = json.load(f)
        best = r.get("best_policy")
        p = r["policies"].get(best) if best else None
        if p is None:
            print(f"| {i} | - | - | no policy | - | - | - |")
            continue
        s = p["spread"]["ls_sla_violation_rate"]
        b = p["ls_breakdown"]["mean_all"]
        rounds = [x for q in r["policies"].values() for x in q["rounds"]]
        wall = sum(x["host"]["wall_ns"] for x in rounds) or 1
        others = sum(x["host"]["others_cpu_ns"] for x in rounds) / wall
        warns = "; ".join(w.split(":")[0][:60] for w in r["warnings"]) or "-"
        held += r["verdict"]["held"]
        print(
            f"| {i} | {best} | {pct(s['median'])} [{pct(s['min'])}-{pct(s['max'])}] | "
            f"{'held' if r['verdict']['held'] else 'not held'} | "
            f"{us(b['service_ns'])} / {us(b['behind_others_ns'])} / {us(b['engine_idle_ns'])} | "
            f"{others:.2f} | {warns} |"
        )
    print(f"\nheld in {held} of {len(paths)} runs")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
