"""What `make reproduce` shows in its terminal while a notebook's kernel runs.

A notebook's output goes into its executed copy; a few lines also go to the terminal that started the run:
the notebook's plan (sizes, the estimate on the reference CPU and on this device), a line when each training
starts and ends (trainings done / expected, elapsed time, time left), a line a minute in long trainings, and
the results. `romae.reproduce` names a file in $ROMAE_ECHO and prints every line appended to it as it comes;
`say` appends. Outside such a run (a notebook opened in JupyterLab, a script) `say` does nothing.
"""

from __future__ import annotations

import contextlib
import os
import time

ECHO = "ROMAE_ECHO"
EVERY_SECONDS = 60.0  # a line at most this often during one training

_state = {"done": 0, "expected": None, "seconds": 0.0, "trained": 0, "label": None}


def active() -> bool:
    return bool(os.environ.get(ECHO))


def say(line: str) -> None:
    """Append `line` to $ROMAE_ECHO (the runner prints it in its terminal); nothing when it is not set."""
    path = os.environ.get(ECHO)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(" ".join(str(line).split("\n")) + "\n")
    except OSError:  # the terminal is a courtesy: never the reason a run fails
        pass


def duration(seconds: float) -> str:
    """'45 s', '12 min', '3.4 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def expect(trainings: int, more: bool = False) -> None:
    """This notebook's run will do about `trainings` trainings (cached ones included): progress lines say
    'k/total'. Each call replaces the count (`more`: adds to it, e.g. one dataset's trainings at a time);
    trainings already counted stay counted."""
    _state["expected"] = max(int(trainings) + ((_state["expected"] or 0) if more else 0), 0) or None


def _count() -> str:
    n, total = _state["done"], _state["expected"]
    return f"{n}/{total}" if total and n <= total else str(n)


def _left_overall() -> str:
    """The notebook's time left, from the mean time of the trainings that really trained (none: unknown)."""
    total, done = _state["expected"], _state["done"]
    if not total or not _state["trained"] or done >= total:
        return ""
    return f"; about {duration((total - done) * _state['seconds'] / _state['trained'])} left in this notebook"


def cached(name: str) -> None:
    """A training whose result came from the results cache."""
    _state["done"] += 1
    say(f"  training {_count()} {name}: from the results cache{_left_overall()}")


@contextlib.contextmanager
def named(name: str):
    """The trainings `fit` runs inside the block are called `name` in the terminal."""
    before, _state["label"] = _state["label"], name
    try:
        yield
    finally:
        _state["label"] = before


class Training:
    """The lines of one training: `start(steps)`, `step(k)` each optimiser step, `end()`."""

    def __init__(self):
        self.name = _state["label"] or "training"
        self.t0 = self.last = time.perf_counter()
        self.first = self.stop = 0

    def start(self, first: int, stop: int) -> None:
        self.first, self.stop = first, stop
        resumed = f", resumed at step {first}" if first else ""
        say(f"  training {_state['done'] + 1}{'/' + str(_state['expected']) if _state['expected'] else ''} "
            f"{self.name}: {stop:,} optimiser steps{resumed}")

    def step(self, k: int) -> None:
        now = time.perf_counter()
        if now - self.last < EVERY_SECONDS or not active():
            return
        self.last = now
        done = k - self.first
        left = (now - self.t0) / done * (self.stop - k) if done > 0 else 0.0
        say(f"    {self.name}: step {k:,}/{self.stop:,} ({100 * k / max(self.stop, 1):.0f} %), "
            f"{duration(now - self.t0)} elapsed, about {duration(left)} left")

    def end(self) -> None:
        seconds = time.perf_counter() - self.t0
        _state["done"] += 1
        _state["trained"] += 1
        _state["seconds"] += seconds
        say(f"  training {_count()} {self.name}: done in {duration(seconds)}{_left_overall()}")
