"""A parameter sweep from Python: an interactive tenant's weight x the
policies, each run in Isola's simulator, its p99 latency and its share of
the engine plotted with matplotlib to a PNG.

Two tenants share one accelerator (2 slots, 2 us a task): a batch
tenant offering 60% of its capacity and an interactive tenant offering
80%, together more than it has. FCFS ignores weights and serves them in
arrival order; the weighted policies give the interactive tenant its
weighted share (half at weight 1, two thirds at 2) up to what it asks
(80%), and so a shorter tail as its weight grows.

Usage: python sweep.py [OUT.png] (default sweep.png)
"""

import sys

import isola
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

WEIGHTS = [1, 2, 4, 8]
POLICIES = ["fcfs", "drr", "sfq", "bvt"]


def scenario(weight: float) -> dict:
    tenant = lambda name, w, rate, size: {  # noqa: E731
        "name": name,
        "weight": w,
        "queue_cap": 10_000,
        "workload": {"engine": "acc", "size": size, "arrival": {"poisson": rate}},
    }
    return {
        "run": {"seed": 1, "duration": "50ms", "window": "5ms", "policies": POLICIES},
        "engine": [
            {
                "name": "acc",
                "kind": "accelerator",
                "slots": 2,
                "queue_depth": 2,
                "service": {"dist": "exponential", "mean": "2us"},
            }
        ],
        "tenant": [
            tenant("batch", 1, "1.2M/s", "4KiB"),
            tenant("interactive", weight, "800k/s", "64B"),
        ],
    }


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "sweep.png"
    rows = []
    for w in WEIGHTS:
        report = isola.simulate(scenario(w))
        rows += [dict(r, interactive_weight=w) for r in report.rows() if r["tenant"] == "interactive"]
    fig, (p99, share) = plt.subplots(1, 2, figsize=(10, 4))
    # Policies that agree draw over each other: each its own marker and dash.
    styles = zip(POLICIES, "osv^", ["-", "--", "-.", ":"])
    for policy, marker, dash in styles:
        mine = [r for r in rows if r["policy"] == policy]
        style = {"marker": marker, "linestyle": dash, "label": policy, "markerfacecolor": "none"}
        p99.plot(WEIGHTS, [r["latency_p99_ns"] / 1e3 for r in mine], **style)
        share.plot(WEIGHTS, [r["engine_time_share"] for r in mine], **style)
    p99.set(ylabel="its p99 latency (us)", yscale="log")
    share.set(ylabel="its share of engine time")
    for ax in (p99, share):
        ax.set_xscale("log", base=2)
        ax.set_xticks(WEIGHTS, [str(w) for w in WEIGHTS])
        ax.set_xlabel("interactive tenant's weight")
    p99.legend()
    fig.suptitle("Weights x policies: an interactive tenant beside a backlogged batch tenant")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    for r in rows:
        print(
            f"weight {r['interactive_weight']:>2}  {r['policy']:<5} p99 {r['latency_p99_ns'] / 1e3:9.1f} us  "
            f"share {r['engine_time_share']:.3f}"
        )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
