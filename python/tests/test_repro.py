"""The papers' experiments from Python: listed, run, their tables read."""

import isola


def test_experiments_are_listed():
    names = [e.name for e in isola.experiments()]
    assert "osmosis-compute" in names and "astraea" in names


def test_an_experiment_runs_and_gives_tables():
    fractions = []
    (outcome,) = isola.repro("osmosis-compute", progress=lambda f, what: fractions.append(f))
    assert outcome.name == "osmosis-compute" and outcome.mode == "simulated"
    assert outcome.tables, "no tables"
    table = outcome.tables[0]
    rows = table.to_rows()
    assert rows and set(rows[0]) == set(table.header)
    assert all(isinstance(g.met, bool) for g in outcome.goals)


def test_an_unknown_experiment_is_an_error():
    try:
        isola.repro("no-such-paper")
    except isola.SimulationError as e:
        assert "unknown experiment" in str(e)
    else:
        raise AssertionError("no error")
