"""Threads: simulations in two Python threads at once give what they give
one after the other, and the GIL is released while they run."""

import threading
import time

import isola
from conftest import queue

EXP_1US = {"dist": "exponential", "mean": "1us"}


def test_two_threads_give_the_serial_results():
    scenarios = [
        isola.Scenario.from_dict(queue(0.6e6, EXP_1US, 1, 1_000_000)),
        isola.Scenario.from_dict(queue(2.0e6, EXP_1US, 3, 1_000_000)),
    ]
    serial, took = [], []
    for s in scenarios:
        start = time.perf_counter()
        serial.append(isola.simulate(s, seed=5).to_dict())
        took.append(time.perf_counter() - start)
    together = [None, None]

    def run(i):
        together[i] = isola.simulate(scenarios[i], seed=5).to_dict()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    # While they run, this thread runs Python: were the GIL held by a
    # simulation, it would stand still for that whole simulation.
    longest_gap, last = 0.0, time.perf_counter()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        now = time.perf_counter()
        longest_gap, last = max(longest_gap, now - last), now
    for t in threads:
        t.join()
    assert together == serial
    assert longest_gap < min(took) / 2, (
        f"this thread stood still for {longest_gap:.3f} s while simulations of {took} s ran"
    )


def test_several_seeds():
    d = queue(0.5e6, EXP_1US, 1, 50_000)
    reports = isola.simulate(d, seeds=[1, 2, 3])
    assert [r.seed for r in reports] == [1, 2, 3]
    means = [r.policies[0].tenants[0].latency_ns.mean for r in reports]
    assert len(set(means)) == 3
    assert reports[1].to_dict() == isola.simulate(d, seed=2).to_dict()
    assert len(isola.rows(reports)) == 3
