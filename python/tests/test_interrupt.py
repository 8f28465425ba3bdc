"""Progress and Ctrl-C: a long run reports progress, and SIGINT stops it
with KeyboardInterrupt, promptly, without a crash."""

import os
import signal
import subprocess
import sys
import time

import isola
from conftest import queue

EXP_1US = {"dist": "exponential", "mean": "1us"}

LONG_RUN = """
import isola, sys
sys.path.insert(0, {tests!r})
from conftest import queue
scenario = isola.Scenario.from_dict(queue(0.5e6, {{"dist": "exponential", "mean": "1us"}}, 1, 2_000_000_000))
def progress(run, runs, fraction):
    print("progress", flush=True)
try:
    isola.simulate(scenario, progress=progress)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""


def test_progress_is_reported():
    calls = []
    isola.simulate(queue(0.5e6, EXP_1US, 1, 1_000_000), progress=lambda *a: calls.append(a))
    assert calls, "no progress reported"
    runs = {c[1] for c in calls}
    assert runs == {1} and all(0.0 <= c[2] <= 1.0 for c in calls)


def test_ctrl_c_raises_keyboard_interrupt_promptly():
    tests = os.path.dirname(os.path.abspath(__file__))
    child = subprocess.Popen(
        [sys.executable, "-c", LONG_RUN.format(tests=tests)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Wait until the run is under way (its first progress report).
        assert child.stdout.readline().strip() == "progress"
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 3, (child.returncode, err)
    assert "interrupted" in out
    assert took < 2.0, f"took {took:.2f} s to stop"


def test_progress_true_draws_a_bar(capsys, monkeypatch):
    # Without tqdm: a text bar on standard error, ending at 100%.
    monkeypatch.setitem(sys.modules, "tqdm", None)
    isola.simulate(queue(0.5e6, EXP_1US, 1, 1_000_000), progress=True)
    err = capsys.readouterr().err
    assert "isola: run 1/1" in err and "100%" in err


def test_progress_true_uses_tqdm_when_present(monkeypatch):
    import types

    bars = []

    class FakeTqdm:
        def __init__(self, total, unit, desc):
            self.n, self.closed = 0, False
            bars.append(self)

        def update(self, n):
            self.n += n

        def set_postfix_str(self, s):
            pass

        def close(self):
            self.closed = True

    auto = types.ModuleType("tqdm.auto")
    auto.tqdm = FakeTqdm
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    isola.simulate(queue(0.5e6, EXP_1US, 1, 1_000_000), progress=True)
    assert len(bars) == 1 and bars[0].closed and bars[0].n == 100
