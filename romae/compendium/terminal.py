"""What `make reproduce` shows in its terminal while a notebook's kernel runs.

A notebook's output goes into its executed copy; a few lines also go to the terminal that started the run:
the notebook's plan (sizes, the estimate on the reference CPU and on this device), a line when each training
starts and ends (trainings done / expected, elapsed time, time left), a line a minute in long trainings, and
the results. `romae.runner.reproduce` names a file in $ROMAE_ECHO and prints every line appended to it as it comes;
`say` appends. Outside such a run (a notebook opened in JupyterLab, a script) `say` does nothing.
"""

from __future__ import annotations

import contextlib
import os
import time

ECHO = "ROMAE_ECHO"
EVERY_SECONDS = 60.0  # a line at most this often during one training

_state = {"done": 0, "expected": None, "seconds": 0.0, "trained": 0, "label": None, "planned": None,
          "planned_total": None, "planned_done": 0.0, "planned_trained": 0.0, "seconds_planned": 0.0}


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


def expect(trainings: int, more: bool = False, planned: float | None = None) -> None:
    """This notebook's run will do about `trainings` trainings (cached ones included): progress lines say
    'k/total'. Each call replaces the count (`more`: adds to it, e.g. one dataset's trainings at a time);
    trainings already counted stay counted. `planned`: the plan's seconds for all of them (`romae.compendium.plan.show`): the
    time left is then the plan's for the trainings not yet done, scaled by this run's measured / planned."""
    _state["expected"] = max(int(trainings) + ((_state["expected"] or 0) if more else 0), 0) or None
    if planned is not None:
        _state["planned_total"] = planned + ((_state["planned_total"] or 0.0) if more else 0.0)


def _count(ahead: int = 0) -> str:
    n, total = _state["done"] + ahead, _state["expected"]
    return f"{n}/{total}" if total and n <= total else str(n)


def _left_overall() -> str:
    """The notebook's time left: the plan's for what is not done yet (x measured / planned so far), when the plan
    gave its total; else from the mean time of the trainings that really trained (none: unknown)."""
    total, done = _state["expected"], _state["done"]
    if not total or done >= total:
        return ""
    if _state["planned_total"]:
        ratio = _state["seconds_planned"] / _state["planned_trained"] if _state["planned_trained"] else 1.0
        left = max(_state["planned_total"] - _state["planned_done"], 0.0) * ratio
        how = f"x {ratio:.2f} measured / planned so far" if _state["planned_trained"] else "not yet measured here"
        return f"; planned: about {duration(left)} left in this notebook ({how})"
    if not _state["trained"]:
        return ""
    return f"; about {duration((total - done) * _state['seconds'] / _state['trained'])} left in this notebook"


def cached(name: str, planned: float | None = None) -> None:
    """A training already done: found in the results cache or the committed record (`planned`: the plan's seconds)."""
    _state["done"] += 1
    _state["planned_done"] += planned or 0.0
    say(f"  training {_count()} {name}: already done (results cache or committed record){_left_overall()}")


@contextlib.contextmanager
def named(name: str, planned: float | None = None):
    """The trainings `fit` runs inside the block are called `name` in the terminal (`planned`: the plan's seconds
    for it, for the time left)."""
    before = _state["label"], _state["planned"]
    _state["label"], _state["planned"] = name, planned
    try:
        yield
    finally:
        _state["label"], _state["planned"] = before


class Progress:
    """The lines of one training: `start(steps)`, `step(k)` each optimiser step, `end()`; an instance is `fit`'s
    progress callback (`fit(..., on_progress=Progress())`, inside `named`)."""

    def __init__(self):
        self.name = _state["label"] or "training"
        self.planned = _state["planned"]
        self.t0 = self.last = time.perf_counter()
        self.first = self.stop = 0

    def __call__(self, event: str, step: int, stop: int) -> None:
        """`romae.train.fit`'s on_progress: "start", "step", "end" or "paused"."""
        if event == "start":
            self.start(step, stop)
        elif event == "step":
            self.step(step)
        elif event == "end":
            self.end()
        elif event == "paused":
            say(f"  training {_count(ahead=1)} {self.name}: stopped cleanly at step {step:,} of {stop:,} after "
                f"{duration(time.perf_counter() - self.t0)}; its checkpoint continues it")

    def start(self, first: int, stop: int) -> None:
        self.first, self.stop = first, stop
        resumed = f", resumed at step {first}" if first else ""
        plan = f" (planned {duration(self.planned)})" if self.planned else ""
        say(f"  training {_count(ahead=1)} {self.name}: {stop:,} optimiser steps{resumed}{plan}")

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
        if self.planned:
            _state["planned_done"] += self.planned
            _state["planned_trained"] += self.planned
            _state["seconds_planned"] += seconds
        say(f"  training {_count()} {self.name}: done in {duration(seconds)}{_left_overall()}")
