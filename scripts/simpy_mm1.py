"""An M/M/1 queue in SimPy, the reference for `isola sim`'s speed (docs/perf.md,
issue 17): the same queue as scenarios/mm1.toml (Poisson arrivals at 800k/s,
exponential service with a 1 us mean on one server, FIFO), run for the
same number of customers, written as SimPy's documentation writes a queue:
a source process, one process per customer, a Resource of capacity 1.

Usage: python3 simpy_mm1.py CUSTOMERS [SEED]
Prints one JSON line: customers served, mean sojourn (us) and the wall time
of the simulation itself (s); the caller times the whole process too.
"""

import json
import random
import sys
import time

import simpy

ARRIVAL_RATE = 800e3  # per second
SERVICE_MEAN = 1e-6  # seconds


def customer(env, server, rng, sojourns):
    arrived = env.now
    with server.request() as slot:
        yield slot
        yield env.timeout(rng.expovariate(1.0 / SERVICE_MEAN))
    sojourns.append(env.now - arrived)


def source(env, server, rng, customers, sojourns):
    for _ in range(customers):
        env.process(customer(env, server, rng, sojourns))
        yield env.timeout(rng.expovariate(ARRIVAL_RATE))


def main():
    customers = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
    env = simpy.Environment()
    server = simpy.Resource(env, capacity=1)
    sojourns = []
    start = time.perf_counter()
    env.process(source(env, server, rng, customers, sojourns))
    env.run()
    elapsed = time.perf_counter() - start
    print(
        json.dumps(
            {
                "customers": len(sojourns),
                "mean_sojourn_us": sum(sojourns) / len(sojourns) * 1e6,
                "simulation_s": elapsed,
            }
        )
    )


if __name__ == "__main__":
    main()
