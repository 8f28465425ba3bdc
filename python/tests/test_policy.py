"""Policies written in Python run inside the core scheduler: the same
decisions give the same results as the Rust originals, and the shares the
rule implies."""

import isola
import pytest

EXP_1US = {"dist": "exponential", "mean": "1us"}


def two_tenants(high_rate: str, low_rate: str, slots: int = 1) -> dict:
    """A high-weight and a low-weight tenant on one engine for 100 ms."""
    tenant = lambda name, weight, rate, size: {  # noqa: E731
        "name": name,
        "weight": weight,
        "queue_cap": 100_000,
        "workload": {"engine": "acc", "size": size, "arrival": {"poisson": rate}},
    }
    return {
        "run": {"seed": 3, "duration": "100ms", "window": "10ms", "policies": ["fcfs"]},
        "engine": [
            {"name": "acc", "kind": "accelerator", "slots": slots, "queue_depth": slots, "service": EXP_1US}
        ],
        "tenant": [tenant("batch", 1, low_rate, "4KiB"), tenant("interactive", 8, high_rate, "64B")],
    }


class PythonFcfs:
    """First come, first served: the ready tenant whose head came first."""

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


class PythonStrictPriority:
    """Strict priority by weight, as docs/adding-a-policy.md writes it in Rust."""

    def __init__(self, setup):
        self.priority = list(setup.weights)
        self.ready = [False] * len(setup.weights)

    def on_ready(self, now, tenant, head, cx):
        self.ready[tenant] = True

    def pick(self, now, cx):
        ready = [t for t, r in enumerate(self.ready) if r]
        # Highest priority; the lower index among equals (as the Rust one).
        return max(ready, key=lambda t: (self.priority[t], -t)) if ready else None

    def on_dispatch(self, now, tenant, served, next, cx):
        self.ready[tenant] = next is not None


@pytest.fixture
def registered():
    isola.register_policy("py-fcfs", PythonFcfs)
    isola.register_policy("py-prio", PythonStrictPriority)
    yield
    isola.unregister_policy("py-fcfs")
    isola.unregister_policy("py-prio")


def without_labels(result):
    d = dict(result.to_dict())
    d.pop("policy")
    d.pop("policy_name")
    return d


def test_python_fcfs_equals_the_core_fcfs_field_for_field(registered):
    scenario = isola.Scenario.from_dict(two_tenants("300k/s", "600k/s", slots=2))
    report = isola.simulate(scenario, policies=["fcfs", "py-fcfs"])
    rust, python = report.policies
    assert python.policy == "py-fcfs"
    assert without_labels(python) == without_labels(rust)


def test_python_strict_priority_gives_the_rust_ones_shares(registered):
    scenario = isola.Scenario.from_dict(two_tenants("400k/s", "900k/s"))
    report = isola.simulate(scenario, policies=["strict-priority", "py-prio"])
    rust, python = report.policies
    assert without_labels(python) == without_labels(rust)
    # Closed form: the interactive tenant (priority 8) gets all it offers,
    # 0.4 of the engine; the backlogged batch tenant the rest, 0.6.
    batch, interactive = python.tenants
    assert interactive.throughput_ops == pytest.approx(400_000, rel=0.02)
    assert interactive.engine_time_share == pytest.approx(0.4, rel=0.03)
    assert batch.engine_time_share == pytest.approx(0.6, rel=0.03)
    # And FCFS does not protect it: it waits behind the backlog.
    fcfs = isola.simulate(scenario, policies=["fcfs"]).policies[0]
    assert fcfs.tenants[1].latency_ns.p99 > 10 * interactive.latency_ns.p99


def test_the_listing_has_built_in_rust_and_python_policies(registered):
    names = [p.name for p in isola.policies()]
    assert {"fcfs", "sfq", "drr", "strict-priority", "py-fcfs", "py-prio"} <= set(names)
    sfq = next(p for p in isola.policies() if p.name == "sfq")
    assert any(param.name == "charge" for param in sfq.params)
    mine = next(p for p in isola.policies() if p.name == "py-prio")
    assert mine.description.startswith("Strict priority by weight")


def test_the_hooks_see_what_the_core_knows(registered):
    seen = {"heads": 0, "slots": set(), "weights": None}

    class Watching(PythonFcfs):
        def __init__(self, setup):
            super().__init__(setup)
            seen["weights"] = list(setup.weights)

        def on_ready(self, now, tenant, head, cx):
            assert head.bytes == (4096 if tenant == 0 else 64) and head.cost > 0
            assert cx.queued[tenant] >= 1 and len(cx.in_flight) == 2
            seen["heads"] += 1
            seen["slots"].add(cx.slots)
            super().on_ready(now, tenant, head, cx)

    isola.register_policy("py-watch", Watching)
    try:
        isola.simulate(two_tenants("30k/s", "30k/s", slots=2), policies=["py-watch"])
    finally:
        isola.unregister_policy("py-watch")
    assert seen["weights"] == [1.0, 8.0] and seen["slots"] == {2} and seen["heads"] > 1000
