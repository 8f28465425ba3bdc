"""Threads: simulations in two Python threads at once give what they give
one after the other, and the GIL is released while they run."""

import threading

import isola
from conftest import queue

EXP_1US = {"dist": "exponential", "mean": "1us"}


def test_two_threads_give_the_serial_results():
    scenarios = [
        isola.Scenario.from_dict(queue(0.6e6, EXP_1US, 1, 400_000)),
        isola.Scenario.from_dict(queue(2.0e6, EXP_1US, 3, 400_000)),
    ]
    serial = [isola.simulate(s, seed=5).to_dict() for s in scenarios]
    together = [None, None]

    def run(i):
        together[i] = isola.simulate(scenarios[i], seed=5).to_dict()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    # While they run, this thread runs Python: the GIL is free.
    spins = 0
    while any(t.is_alive() for t in threads):
        spins += 1
    for t in threads:
        t.join()
    assert together == serial
    assert spins > 1000, f"the main thread ran only {spins} times while the simulations ran"


def test_several_seeds():
    d = queue(0.5e6, EXP_1US, 1, 50_000)
    reports = isola.simulate(d, seeds=[1, 2, 3])
    assert [r.seed for r in reports] == [1, 2, 3]
    means = [r.policies[0].tenants[0].latency_ns.mean for r in reports]
    assert len(set(means)) == 3
    assert reports[1].to_dict() == isola.simulate(d, seed=2).to_dict()
    assert len(isola.rows(reports)) == 3
