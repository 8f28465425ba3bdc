"""The M/M/1 of scenarios/mm1.toml driven from Python (scripts/python_mm1.sh,
issue 35): the scenario built here as a dict, run by the `isola` package,
the mean sojourn read back and printed (ns).

Usage: python3 python_mm1.py CUSTOMERS
"""

import sys

import isola

customers = int(sys.argv[1])
report = isola.simulate(
    {
        "run": {"seed": 7, "policies": ["fcfs"], "window": "1ms"},
        "engine": [
            {
                "name": "server",
                "kind": "accelerator",
                "slots": 1,
                "queue_depth": 1,
                "service": {"dist": "exponential", "mean": "1us"},
            }
        ],
        "tenant": [
            {
                "name": "poisson",
                "queue_cap": 1000000,
                "workload": {
                    "engine": "server",
                    "size": "64B",
                    "arrival": {"poisson": "800k/s"},
                    "count": customers,
                },
            }
        ],
    }
)
print(report.policies[0].tenants[0].latency_ns.mean)
