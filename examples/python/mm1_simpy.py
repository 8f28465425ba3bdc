"""The same M/M/1 queue in SimPy and in Isola, side by side, both timed.

The queue of scenarios/mm1.toml and scripts/simpy_mm1.py: Poisson arrivals
at 800k/s, exponential service with a 1 us mean on one FIFO server. SimPy
runs it as its documentation writes a queue (a source process, one
process per customer, a Resource of capacity 1); Isola gets the scenario
built in Python and its results read back. Both should land near queueing
theory's mean sojourn, 1 / (mu - lambda) = 5 us.

Usage: python mm1_simpy.py [CUSTOMERS] (default 200000)
"""

import random
import sys
import time

import isola
import simpy

ARRIVAL_RATE = 800e3  # per second
SERVICE_MEAN = 1e-6  # seconds


def simpy_mm1(customers: int, seed: int = 7) -> float:
    """Mean sojourn (s) of `customers` customers, in SimPy."""
    rng = random.Random(seed)
    env = simpy.Environment()
    server = simpy.Resource(env, capacity=1)
    sojourns = []

    def customer():
        arrived = env.now
        with server.request() as slot:
            yield slot
            yield env.timeout(rng.expovariate(1.0 / SERVICE_MEAN))
        sojourns.append(env.now - arrived)

    def source():
        for _ in range(customers):
            env.process(customer())
            yield env.timeout(rng.expovariate(ARRIVAL_RATE))

    env.process(source())
    env.run()
    return sum(sojourns) / len(sojourns)


def mm1_scenario(customers: int) -> dict:
    """scenarios/mm1.toml as a dict, for `customers` customers."""
    return {
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
                "queue_cap": 1_000_000,
                "workload": {
                    "engine": "server",
                    "size": "64B",
                    "arrival": {"poisson": "800k/s"},
                    "count": customers,
                },
            }
        ],
    }


def isola_mm1(customers: int) -> float:
    """Mean sojourn (s) of `customers` customers, in Isola: the scenario
    built here, the report read back."""
    report = isola.simulate(mm1_scenario(customers))
    return report.policies[0].tenants[0].latency_ns.mean * 1e-9


def main() -> None:
    customers = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    theory = 1 / (1 / SERVICE_MEAN - ARRIVAL_RATE)
    print(f"M/M/1 at rho 0.8, {customers} customers; theory: mean sojourn {theory * 1e6:.3f} us")
    times = {}
    for name, run in (("SimPy", simpy_mm1), ("Isola", isola_mm1)):
        start = time.perf_counter()
        mean = run(customers)
        times[name] = time.perf_counter() - start
        print(f"{name:>6}: mean sojourn {mean * 1e6:.3f} us in {times[name]:.3f} s")
        if abs(mean / theory - 1) > 0.05:
            sys.exit(f"{name}'s mean is more than 5% from theory")
    print(f"Isola ran it {times['SimPy'] / times['Isola']:.1f}x faster than SimPy")


if __name__ == "__main__":
    main()
