"""Queueing theory from Python: the simulator's mean sojourn times within
2% of the closed forms, computed here."""

import math

import isola
from conftest import queue

EXP_1US = {"dist": "exponential", "mean": "1us"}


def mean_sojourn_ns(scenario: dict) -> float:
    report = isola.simulate(isola.Scenario.from_dict(scenario))
    tenant = report.policies[0].tenants[0]
    assert tenant.completed == scenario["tenant"][0]["workload"]["count"]
    return tenant.latency_ns.mean


def erlang_c(c: int, a: float) -> float:
    """Probability that an arrival waits in M/M/c with offered load a = lambda/mu."""
    below = sum(a**k / math.factorial(k) for k in range(c))
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (below + top)


def within(got: float, want: float, what: str) -> None:
    assert abs(got / want - 1) <= 0.02, f"{what}: {got:.1f} ns, theory {want:.1f} ns"


def test_mm1():
    lam, mu = 0.5e6, 1e6
    within(mean_sojourn_ns(queue(lam, EXP_1US, 1, 1_000_000)), 1e9 / (mu - lam), "M/M/1")


def test_md1():
    # Pollaczek-Khinchine, deterministic service: W = S + rho S / (2 (1 - rho)).
    lam, s = 0.6e6, 1e-6
    rho = lam * s
    want = (s + rho * s / (2 * (1 - rho))) * 1e9
    got = mean_sojourn_ns(queue(lam, {"dist": "constant", "time": "1us"}, 1, 600_000))
    within(got, want, "M/D/1")


def test_mmc():
    c, lam, mu = 4, 2.8e6, 1e6
    a = lam / mu
    want = (1 / mu + erlang_c(c, a) / (c * mu - lam)) * 1e9
    within(mean_sojourn_ns(queue(lam, EXP_1US, c, 1_000_000)), want, "M/M/4")


def test_erlang_c_identities():
    # One server: an arrival waits with probability rho.
    assert abs(erlang_c(1, 0.7) - 0.7) < 1e-12
    # Two servers: C(2, a) = a^2 / (2 + a) (from the definition by hand).
    assert abs(erlang_c(2, 1.5) - 1.5**2 / 3.5) < 1e-12
