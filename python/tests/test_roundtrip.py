"""A scenario dict gives what `isola sim FILE --json` gives, every field."""

import json

import isola
import pytest
from conftest import REPO, cli_json, toml_dict

SCENARIOS = sorted((REPO / "scenarios").glob("*.toml"))


def test_the_shipped_scenarios_are_found():
    assert len(SCENARIOS) >= 5


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_dict_round_trips_to_the_cli_results(path):
    relative = str(path.relative_to(REPO))
    want = json.loads(cli_json("sim", relative, "--json"))
    # The dict as Python's own TOML parser reads the file, named as the
    # CLI names it (results carry the scenario's name).
    scenario = isola.Scenario.from_dict(toml_dict(path), name=relative)
    got = isola.simulate(scenario)
    assert got.to_dict() == want
    # And loaded from the file.
    assert isola.simulate(isola.load(path)).to_dict()["policies"] == want["policies"]


def test_attributes_and_rows_read_the_same_figures():
    path = REPO / "scenarios" / "osmosis-pu-contention.toml"
    report = isola.simulate(isola.load(path))
    raw = report.to_dict()
    first = raw["policies"][0]
    assert report.policies[0].tenants[1].latency_ns.p99 == first["tenants"][1]["latency_ns"]["p99"]
    assert report.policy(first["policy"]).jain == first["jain"]
    rows = report.rows()
    assert len(rows) == sum(len(p["tenants"]) for p in raw["policies"])
    assert rows[1]["latency_p99_ns"] == first["tenants"][1]["latency_ns"]["p99"]
    windows = report.window_rows()
    assert len(windows) == sum(len(p["series"]) * len(p["tenants"]) for p in raw["policies"])
    # Shares of each window over tenants: what the engine gave, at most 1 per slot.
    assert all(0.0 <= w["engine_share"] <= 1.0 + 1e-9 for w in windows)


def test_results_copy_and_pickle_as_their_fields():
    import copy
    import pickle

    report = isola.simulate(isola.load(REPO / "scenarios" / "osmosis-pu-contention.toml"))
    for again in (copy.copy(report), copy.deepcopy(report), pickle.loads(pickle.dumps(report))):
        assert type(again) is type(report)
        assert again.to_dict() == report.to_dict()
        assert again.policies[0].tenants[0].latency_ns.p99 == report.policies[0].tenants[0].latency_ns.p99
