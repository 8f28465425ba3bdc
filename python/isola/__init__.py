"""Isola from Python: build scenarios, run them under Isola's scheduling
policies (or your own, written in Python) in its discrete-event simulator,
and run the papers' experiments. See docs/python.md.

    import isola
    sc = isola.Scenario.from_dict({...})        # or isola.load("file.toml")
    report = isola.simulate(sc, policies=["fcfs", "sfq"])
    report.policy("sfq").tenants[0].latency_ns.p99
    pandas.DataFrame(report.rows())
"""

from __future__ import annotations

import os
import sys

# Annotations only (typing is not imported at run time: `import isola`
# stays cheap, docs/perf.md "Isola from Python").
TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing

from . import _native
from ._native import (
    Context,
    Head,
    PolicyError,
    Scenario,
    ScenarioError,
    Setup,
    SimulationError,
)
from ._results import ExperimentResult, Record, Report, Table, rows

__all__ = [
    "Context",
    "ExperimentResult",
    "Head",
    "PolicyError",
    "Record",
    "Report",
    "Scenario",
    "ScenarioError",
    "Setup",
    "SimulationError",
    "Table",
    "experiments",
    "load",
    "policies",
    "register_policy",
    "repro",
    "rows",
    "simulate",
    "unregister_policy",
]

if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

    ScenarioLike = Union[Scenario, Dict[str, Any], str, "os.PathLike[str]"]
    Progress = Union[None, bool, Callable[[int, int, float], Any]]


def load(path: Union[str, "os.PathLike[str]"]) -> Scenario:
    """The scenario file at ``path`` (TOML, docs/scenario-format.md)."""
    return Scenario.load(os.fspath(path))


def _scenario(scenario: ScenarioLike) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, dict):
        return Scenario.from_dict(scenario)
    if isinstance(scenario, (str, os.PathLike)):
        return load(scenario)
    raise TypeError(
        f"scenario: a Scenario, a dict or a path, not {type(scenario).__name__}"
    )


class _TextBar:
    """Progress on standard error where tqdm is not installed."""

    def __init__(self) -> None:
        self.shown = -1

    def __call__(self, run: int, runs: int, fraction: float) -> None:
        percent = int(100 * (run + fraction) / max(runs, 1))
        if percent != self.shown:
            self.shown = percent
            print(f"\risola: run {min(run + 1, runs)}/{runs} {percent:3d}%", end="", file=sys.stderr)

    def close(self) -> None:
        print(file=sys.stderr)


class _TqdmBar:
    """Progress as a tqdm bar (percent of all runs)."""

    def __init__(self, tqdm: Any) -> None:
        self.bar = tqdm(total=100, unit="%", desc="isola")
        self.at = 0

    def __call__(self, run: int, runs: int, fraction: float) -> None:
        percent = int(100 * (run + fraction) / max(runs, 1))
        if percent > self.at:
            self.bar.update(percent - self.at)
            self.at = percent
        self.bar.set_postfix_str(f"run {min(run + 1, runs)}/{runs}")

    def close(self) -> None:
        self.bar.close()


def _progress_bar(progress: Progress) -> Any:
    if progress is None or progress is False:
        return None
    if progress is True:
        try:
            from tqdm.auto import tqdm  # type: ignore[import-not-found]
        except ImportError:
            return _TextBar()
        return _TqdmBar(tqdm)
    if callable(progress):
        return progress
    raise TypeError("progress: None, True (a bar) or a callable(run, runs, fraction)")


def simulate(
    scenario: ScenarioLike,
    policies: Optional[Sequence[str]] = None,
    seed: Optional[int] = None,
    seeds: Optional[Iterable[int]] = None,
    progress: Progress = None,
) -> Any:
    """Runs ``scenario`` (a Scenario, a dict or a path) in the simulator.

    ``policies``: the runs to do, each a label or policy name of the
    scenario's ``[run] policies`` (as ``isola sim --policy``), or a policy
    registered with :func:`register_policy`; default: every run the
    scenario lists. ``seed``: the seed of every random stream (default:
    the scenario's). ``seeds``: several seeds, one report each (a list is
    returned). ``progress``: True for a bar (tqdm when installed), or a
    callable ``(run, runs, fraction)``, called about every 50 ms.

    The GIL is released while the simulator runs, so threads can run
    simulations at once; Ctrl-C stops the run with KeyboardInterrupt (also
    when it lands inside a Python policy's hook).
    Returns a :class:`Report` (the JSON ``isola sim --json`` prints, as
    objects), or a list of them with ``seeds``.
    """
    sc = _scenario(scenario)
    names = [policies] if isinstance(policies, str) else list(policies or [])
    if seeds is not None:
        if seed is not None:
            raise TypeError("give seed or seeds, not both")
        # One bar (or callback's count) per seed: each run starts from 0.
        return [_simulate_one(sc, names, int(s), progress) for s in seeds]
    return _simulate_one(sc, names, seed, progress)


def _simulate_one(sc, names, seed, progress) -> "Report":
    bar = _progress_bar(progress)
    try:
        return Report(_native.simulate_report(sc, names, seed, bar))
    finally:
        if bar is not None and hasattr(bar, "close"):
            bar.close()


def policies() -> List[Record]:
    """Every policy (built-in, then registered from Python): ``name``,
    ``aliases``, ``description``, ``source``, ``work_conserving`` and
    ``params`` (each ``name``, ``default``, ``description``)."""
    return [Record(p) for p in _native.policies_list()]


def register_policy(
    name: str,
    cls: Optional[type] = None,
    *,
    description: str = "",
    work_conserving: bool = True,
) -> Any:
    """Registers ``cls``, a policy written in Python, as ``name``; usable
    as a decorator (``@isola.register_policy("mine")``).

    ``cls(setup)`` is built once per engine (``setup``: ``weights``,
    ``classes``, ``slots``) and called as the core calls a policy:
    ``on_ready(now, tenant, head, cx)``, ``pick(now, cx)`` (a ready
    tenant's index, or None to leave the slot idle),
    ``on_dispatch(now, tenant, served, next, cx)`` (``next`` None when
    the tenant is no longer ready), and optionally
    ``on_complete(now, tenant, served, measured, cx)`` and
    ``admits(tenant, cx)``. A hook that raises ends the run with
    :class:`PolicyError`. Each call costs a Python call (docs/python.md).
    """

    def register(c: type) -> type:
        _native.register_policy(name, c, description or (c.__doc__ or "").strip().split("\n")[0], work_conserving)
        return c

    return register if cls is None else register(cls)


def unregister_policy(name: str) -> bool:
    """Forgets the Python policy ``name``; whether it was registered."""
    return _native.unregister_policy(name)


def experiments() -> List[Record]:
    """The papers' experiments ``repro`` runs: ``name``, ``paper``,
    ``title``, ``claims``."""
    return [Record(e) for e in _native.experiments_list()]


def repro(
    name: str,
    seed: Optional[int] = None,
    full: bool = False,
    progress: Union[None, Callable[[float, str], Any]] = None,
) -> List[ExperimentResult]:
    """Runs experiment ``name`` (or ``"all"``) as ``isola repro`` does,
    simulated; returns each outcome with its ``tables`` (``to_rows()`` for
    pandas), goals and notes. ``progress(fraction, what)`` hears how far.
    Ctrl-C is acted on between experiments."""
    return [ExperimentResult(o) for o in _native.repro_outcomes(name, seed, full, progress)]
