"""Results as Python objects with plain attributes, and as rows for pandas.

A simulation's report crosses from Rust as the objects ``json.loads``
makes of what ``isola sim --json`` prints; :class:`Record` gives them
attribute access (and keeps the
dict: ``to_dict()``), and :class:`Report` adds rows ready for
``pandas.DataFrame`` (one dict per tenant per policy, per window, or per
policy).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing

if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, List


class Record:
    """An object of a result: its fields as attributes (nested objects
    are records, lists of objects lists of records)."""

    __slots__ = ("_data",)

    def __init__(self, data: Dict[str, Any]):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        # Only fields are looked up here: an unset slot (copy and pickle
        # make the object before its state) or a dunder is not a field.
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(
                f"no field {name!r}; fields: {', '.join(self._data)}"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("results are read-only")

    def __reduce__(self):
        # copy, deepcopy and pickle (a ProcessPoolExecutor's sweep) rebuild
        # a record from its fields.
        return (type(self), (self._data,))

    def __dir__(self) -> List[str]:
        return list(self._data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self._data == other._data

    def __repr__(self) -> str:
        inner = ", ".join(
            f"{k}={v!r}" for k, v in self._data.items() if not isinstance(v, (list, dict))
        )
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> Dict[str, Any]:
        """The fields as a plain dict (the JSON's object)."""
        return self._data


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class Report(Record):
    """One simulation: ``scenario``, ``seed`` and ``policies`` (one result
    per policy run: ``policy`` its label, ``jain``, ``tenants`` with
    throughput, ``latency_ns`` percentiles, ``sla_violation_rate``, ...,
    and ``series``, one point per metrics window)."""

    __slots__ = ()

    @classmethod
    def from_json(cls, text: str) -> "Report":
        """A report from the JSON ``isola sim --json`` prints."""
        import json

        return cls(json.loads(text))

    def policy(self, label: str) -> Record:
        """The result of the run labelled (or of the policy named) ``label``."""
        for p in self._data["policies"]:
            if label in (p["policy"], p["policy_name"]):
                return Record(p)
        known = ", ".join(p["policy"] for p in self._data["policies"])
        raise KeyError(f"no run {label!r} in this report; runs: {known}")

    def rows(self) -> List[Dict[str, Any]]:
        """One row per tenant per policy run: its figures, and the run's
        fairness (``jain``, ``fair1``) beside them."""
        rows = []
        for p in self._data["policies"]:
            for t in p["tenants"]:
                lat = t["latency_ns"]
                rows.append(
                    {
                        "seed": self._data["seed"],
                        "policy": p["policy"],
                        "policy_name": p["policy_name"],
                        "tenant": t["name"],
                        "weight": t["weight"],
                        "completed": t["completed"],
                        "rejected": t["rejected"],
                        "incomplete": t["incomplete"],
                        "throughput_ops": t["throughput_ops"],
                        "throughput_bps": t["throughput_bps"],
                        "latency_mean_ns": lat["mean"],
                        "latency_p50_ns": lat["p50"],
                        "latency_p99_ns": lat["p99"],
                        "latency_p999_ns": lat["p999"],
                        "latency_max_ns": lat["max"],
                        "sla_violation_rate": t["sla_violation_rate"],
                        "engine_time_share": t["engine_time_share"],
                        "slowdown": t.get("slowdown"),
                        "jain": p["jain"],
                        "fair1": p["fair1"],
                    }
                )
        return rows

    def window_rows(self) -> List[Dict[str, Any]]:
        """One row per metrics window per tenant per policy run: the
        tenant's throughput, engine share and p99 latency in the window,
        and the window's Jain index (shares over time)."""
        rows = []
        for p in self._data["policies"]:
            names = [t["name"] for t in p["tenants"]]
            for w in p["series"]:
                for i, name in enumerate(names):
                    rows.append(
                        {
                            "seed": self._data["seed"],
                            "policy": p["policy"],
                            "start_ns": w["start_ns"],
                            "tenant": name,
                            "throughput_bps": w["throughput_bps"][i],
                            "engine_share": w["engine_share"][i],
                            "p99_ns": w["p99_ns"][i],
                            "jain": w["jain"],
                        }
                    )
        return rows

    def policy_rows(self) -> List[Dict[str, Any]]:
        """One row per policy run: its fairness and totals."""
        return [
            {
                "seed": self._data["seed"],
                "policy": p["policy"],
                "policy_name": p["policy_name"],
                "jain": p["jain"],
                "fair1": p["fair1"],
                "fair2": p.get("fair2"),
                "mean_in_system": p["mean_in_system"],
                "duration_ns": p["duration_ns"],
                "events": p["events"],
            }
            for p in self._data["policies"]
        ]


def rows(reports: Iterable[Report], kind: str = "tenant") -> List[Dict[str, Any]]:
    """The rows of several reports (several seeds) together: ``kind`` is
    ``"tenant"`` (:meth:`Report.rows`), ``"window"`` or ``"policy"``."""
    method = {"tenant": "rows", "window": "window_rows", "policy": "policy_rows"}.get(kind)
    if method is None:
        raise ValueError(f"kind {kind!r}: use 'tenant', 'window' or 'policy'")
    out: List[Dict[str, Any]] = []
    for r in reports:
        out.extend(getattr(r, method)())
    return out


class Table(Record):
    """A table of an experiment: ``caption``, ``header`` and ``rows`` (cells
    as text, as `isola repro` prints them)."""

    __slots__ = ()

    def to_rows(self) -> List[Dict[str, str]]:
        """Its rows as dicts keyed by the header (for pandas)."""
        header = self._data["header"]
        return [dict(zip(header, row)) for row in self._data["rows"]]


class ExperimentResult(Record):
    """One experiment's outcome: ``name``, ``title``, ``paper``,
    ``best_policy``, ``goals`` and ``directions`` (each ``what``, ``met``,
    ``detail``), ``tables`` and ``notes``."""

    __slots__ = ()

    @property
    def tables(self) -> List[Table]:  # type: ignore[override]
        """Its tables."""
        return [Table(t) for t in self._data["tables"]]
