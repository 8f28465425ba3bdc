"""Shared helpers of the package's tests: the repository's paths, the
`isola` binary built from the same tree, scenarios as dicts."""

import os
import pathlib
import subprocess
import sys

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10
    import tomli as tomllib

REPO = pathlib.Path(__file__).resolve().parents[2]


def isola_bin() -> pathlib.Path:
    """The `isola` binary of this tree: $ISOLA_BIN, else the release (then
    debug) build in $CARGO_TARGET_DIR (default: target/)."""
    given = os.environ.get("ISOLA_BIN")
    if given:
        return pathlib.Path(given)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    for profile in ("release", "debug"):
        path = target / profile / "isola"
        if path.exists():
            return path
    pytest.fail(
        "no isola binary: build it (cargo build --release -p isola-cli) or set ISOLA_BIN"
    )


def cli_json(*args: str) -> str:
    """What `isola ARGS...` prints, run from the repository's root."""
    done = subprocess.run(
        [str(isola_bin()), *args], cwd=REPO, capture_output=True, text=True, check=True
    )
    return done.stdout


def toml_dict(path: pathlib.Path) -> dict:
    """A TOML file as Python reads it (the standard library's parser)."""
    with open(path, "rb") as f:
        return tomllib.load(f)


def queue(lam: float, service: dict, servers: int, count: int) -> dict:
    """`servers` FIFO servers fed by Poisson arrivals at `lam` per second,
    for `count` customers, as a scenario dict."""
    return {
        "run": {"seed": 11, "policies": ["fcfs"], "window": "10ms"},
        "engine": [
            {
                "name": "server",
                "kind": "accelerator",
                "slots": servers,
                "queue_depth": servers,
                "service": service,
            }
        ],
        "tenant": [
            {
                "name": "customers",
                "queue_cap": 1 << 20,
                "workload": {
                    "engine": "server",
                    "arrival": {"poisson": f"{lam}/s"},
                    "count": count,
                },
            }
        ],
    }
