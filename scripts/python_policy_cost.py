"""What a policy written in Python costs per decision (docs/python.md,
docs/perf.md, issue 35): the same two-tenant scenario under the core's
`fcfs` and under the same rule written in Python (`py-fcfs`, which gives
identical results: python/tests/test_policy.py), taking turns for ROUNDS
rounds in one process; the difference in run time divided by the
dispatches is the Python policy's cost per decision (an `on_ready`, a
`pick` and an `on_dispatch` each, every call taking the GIL).

Usage: python3 python_policy_cost.py [ROUNDS] (default 5)
"""

import sys
import time

import isola


class PythonFcfs:
    """First come, first served, in Python."""

    def __init__(self, setup):
        self.heads = {}

    def on_ready(self, now, tenant, head, cx):
        self.heads[tenant] = head.seq

    def pick(self, now, cx):
        return min(self.heads, key=self.heads.get) if self.heads else None

    def on_dispatch(self, now, tenant, served, next, cx):
        if next is None:
            del self.heads[tenant]
        else:
            self.heads[tenant] = next.seq


def scenario(customers: int) -> isola.Scenario:
    tenant = lambda name, rate: {  # noqa: E731
        "name": name,
        "queue_cap": 100_000,
        "workload": {"engine": "acc", "size": "64B", "arrival": {"poisson": rate}, "count": customers},
    }
    return isola.Scenario.from_dict(
        {
            "run": {"seed": 3, "window": "10ms", "policies": ["fcfs"]},
            "engine": [
                {
                    "name": "acc",
                    "kind": "accelerator",
                    "slots": 2,
                    "queue_depth": 2,
                    "service": {"dist": "exponential", "mean": "1us"},
                }
            ],
            "tenant": [tenant("a", "700k/s"), tenant("b", "900k/s")],
        }
    )


def timed(sc: isola.Scenario, policy: str):
    start = time.perf_counter()
    report = isola.simulate(sc, policies=[policy])
    took = time.perf_counter() - start
    return took, sum(t.completed for t in report.policies[0].tenants), report


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    isola.register_policy("py-fcfs", PythonFcfs)
    sc = scenario(200_000)
    costs = []
    for r in range(rounds):
        rust, dispatches, a = timed(sc, "fcfs")
        python, _, b = timed(sc, "py-fcfs")
        assert a.policies[0].tenants == b.policies[0].tenants, "py-fcfs must decide as fcfs does"
        cost = (python - rust) / dispatches * 1e9
        costs.append(cost)
        print(
            f"round {r + 1}: fcfs {rust:.3f} s, py-fcfs {python:.3f} s, {dispatches} dispatches: "
            f"{rust / dispatches * 1e9:.0f} ns against {python / dispatches * 1e9:.0f} ns a task, "
            f"Python policy {cost:.0f} ns a decision"
        )
    print(f"Python policy's cost per decision: {min(costs):.0f}-{max(costs):.0f} ns over {rounds} rounds")


if __name__ == "__main__":
    main()
