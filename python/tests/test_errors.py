"""Bad input: a Python exception naming the key, never a crash or a hang."""

import copy

import isola
import pytest
from conftest import queue

EXP_1US = {"dist": "exponential", "mean": "1us"}


def base() -> dict:
    return queue(0.5e6, EXP_1US, 1, 1000)


def with_change(path, value):
    """The base scenario with the key at `path` (keys and indexes) set to `value`."""
    d = copy.deepcopy(base())
    node = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return d


@pytest.mark.parametrize(
    "path, value, key",
    [
        # wrong types
        (("tenant", 0, "workload", "count"), "many", "count"),
        (("engine", 0, "slots"), [1, 2], "slots"),
        (("run", "seed"), {"x": 1}, "seed"),
        (("engine", 0, "service"), object(), "engine[0].service"),
        (("run", "policies"), None, "run.policies"),
        # unknown keys
        (("tenant", 0, "colour"), "red", "colour"),
        (("engine", 0, "speed_of_light"), 1, "speed_of_light"),
        # negative quantities
        (("tenant", 0, "queue_cap"), -1, "queue_cap"),
        (("engine", 0, "slots"), -4, "slots"),
        (("tenant", 0, "weight"), -2.0, "weight"),
        # NaN and infinities
        (("tenant", 0, "weight"), float("nan"), "tenant[0].weight"),
        (("tenant", 0, "weight"), float("inf"), "tenant[0].weight"),
        # huge counts
        (("tenant", 0, "workload", "count"), 10**30, "tenant[0].workload.count"),
        (("engine", 0, "slots"), 2**40, "slots"),
    ],
)
def test_bad_values_name_their_key(path, value, key):
    with pytest.raises(isola.ScenarioError) as caught:
        isola.Scenario.from_dict(with_change(path, value))
    assert key in str(caught.value), str(caught.value)
    # The exception's key is the whole path to the value changed.
    dotted = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")
    assert caught.value.key == dotted, (caught.value.key, dotted)


def test_a_scenario_that_is_not_a_dict():
    with pytest.raises(isola.ScenarioError):
        isola.Scenario.from_dict([1, 2, 3])
    with pytest.raises(TypeError):
        isola.simulate(42)


def test_a_file_names_its_line_and_key(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[run]\nseed = 1\nwindow = "fast"\n')
    with pytest.raises(isola.ScenarioError) as caught:
        isola.load(path)
    assert caught.value.key == "window" and caught.value.line == 3
    with pytest.raises(isola.ScenarioError):
        isola.load(tmp_path / "missing.toml")


def test_huge_arrival_counts_stop_at_the_event_budget_not_a_hang():
    d = base()
    d["run"]["duration"] = "10s"
    d["tenant"][0]["workload"]["count"] = 2**62
    d["tenant"][0]["workload"]["arrival"] = {"poisson": "1G/s"}
    with pytest.raises(isola.SimulationError, match="max_events"):
        isola.simulate(d)


def test_unknown_policies_and_seeds():
    with pytest.raises(isola.SimulationError, match="policies"):
        isola.simulate(base(), policies=["no-such-policy"])
    with pytest.raises(OverflowError):
        isola.simulate(base(), seed=-1)


class Raises:
    def __init__(self, setup):
        self.ready = set()

    def on_ready(self, now, tenant, head, cx):
        self.ready.add(tenant)

    def pick(self, now, cx):
        if now > 100_000:
            raise ZeroDivisionError("the idea had a bug")
        return min(self.ready) if self.ready else None

    def on_dispatch(self, now, tenant, served, next, cx):
        if next is None:
            self.ready.discard(tenant)


class PicksNobodyReady(Raises):
    def pick(self, now, cx):
        return 7


class InterruptedInPick(Raises):
    def pick(self, now, cx):
        # What Ctrl-C does while a hook runs Python: the signal's
        # KeyboardInterrupt surfaces inside the hook.
        raise KeyboardInterrupt


class FailsToBuild:
    def __init__(self, setup):
        raise RuntimeError("no")


@pytest.mark.parametrize(
    "cls, cause, words",
    [
        (Raises, ZeroDivisionError, "`pick` raised ZeroDivisionError"),
        (PicksNobodyReady, ValueError, "tenant 7, which is not ready"),
        (FailsToBuild, RuntimeError, "its class raised RuntimeError: no"),
    ],
)
def test_a_python_policy_that_fails_ends_the_run_cleanly(cls, cause, words):
    isola.register_policy("test-fails", cls)
    try:
        scenario = isola.Scenario.from_dict(queue(0.5e6, EXP_1US, 1, 200_000))
        with pytest.raises(isola.PolicyError, match=words) as caught:
            isola.simulate(scenario, policies=["test-fails"])
        assert isinstance(caught.value.__cause__, cause)
        # The module is still usable afterwards.
        assert isola.simulate(scenario, policies=["fcfs"]).policies[0].tenants[0].completed == 200_000
    finally:
        isola.unregister_policy("test-fails")


def test_a_python_policy_cannot_take_a_built_in_name():
    with pytest.raises(isola.PolicyError, match="taken"):
        isola.register_policy("sfq", Raises)


def test_ctrl_c_inside_a_python_policy_is_a_keyboard_interrupt():
    isola.register_policy("test-interrupted", InterruptedInPick)
    try:
        scenario = isola.Scenario.from_dict(queue(0.5e6, EXP_1US, 1, 200_000))
        with pytest.raises(KeyboardInterrupt):
            isola.simulate(scenario, policies=["test-interrupted"])
        assert isola.simulate(scenario, policies=["fcfs"]).policies[0].tenants[0].completed == 200_000
    finally:
        isola.unregister_policy("test-interrupted")
