"""Progress that fits its place: a tqdm bar on a terminal, plain lines anywhere else.

A bar redraws itself with carriage returns; written to a log file, a notebook kernel's stream or a CI log, each redraw
stays, and one training left tens of kilobytes of them (issue 53). So `bar` gives tqdm's bar where the stream is a
terminal, and elsewhere a `Lines` object with the same methods (`update`, `set_postfix`, `close`, iteration) that
writes one plain line, in tqdm's words, each `EVERY` of the run or each `SECONDS`, whichever comes first, and one at
the end:

    train:   9%|9         | 23043/250000 [1:00:00<10:24:18,  6.06it/s, loss=0.0123, lr=0.000498]

(`romae.runner.staging` drops such lines from the executed notebooks it publishes, as it drops bars.) Nothing here
computes a number a result holds (`romae.compendium.staleness.NEVER_COMPUTES`).
"""

from __future__ import annotations

import sys
import time

EVERY = 0.05  # a line each 5 % of the run ...
SECONDS = 60.0  # ... or each minute, whichever comes first


def is_terminal(stream) -> bool:
    """Whether `stream` is a terminal (a notebook kernel's streams, files and pipes are not)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed file
        return False


def bar(iterable=None, *, total: int | None = None, initial: int = 0, desc: str = "", disable: bool = False,
        file=None, leave: bool = True):
    """A progress bar over `iterable` (or updated by hand: `update(n)`) writing to `file` (default: sys.stderr):
    tqdm's on a terminal (or when disabled: nothing is written), else `Lines`."""
    stream = sys.stderr if file is None else file
    if disable or is_terminal(stream):
        from tqdm import tqdm  # plain text bars: no ipywidgets needed in notebooks

        return tqdm(iterable, total=total, initial=initial, desc=desc, disable=disable, file=file, leave=leave)
    return Lines(iterable, total=total, initial=initial, desc=desc, file=stream)


class Lines:
    """tqdm's interface, written as whole lines (no carriage return): one at the start, one each `every` of `total`
    or `seconds` (whichever comes first; without a total, by time only), one at the end. `clock` is for tests."""

    def __init__(self, iterable=None, *, total: int | None = None, initial: int = 0, desc: str = "", file=None,
                 every: float = EVERY, seconds: float = SECONDS, clock=time.monotonic):
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.iterable, self.total, self.desc = iterable, total, desc
        self.file = sys.stderr if file is None else file
        self.n = self.initial = initial
        self.every, self.seconds, self.clock = every, seconds, clock
        self.postfix: dict = {}
        self.disable, self.closed = False, False
        self.start = self.clock()
        self._line()

    def _line(self) -> None:
        from tqdm import tqdm

        now = self.clock()
        postfix = ", ".join(f"{k}={v}" for k, v in self.postfix.items()) or None
        text = tqdm.format_meter(self.n, self.total, now - self.start, prefix=self.desc, ascii=True, postfix=postfix,
                                 initial=self.initial)
        self.last_n, self.last_t = self.n, now
        try:
            self.file.write(text + "\n")
            self.file.flush()
        except (OSError, ValueError):  # a closed or broken stream: progress is not worth failing a run for
            pass

    def update(self, n: int = 1) -> None:
        self.n += n
        step = self.every * self.total if self.total else None
        if (step is not None and self.n - self.last_n >= step) or self.clock() - self.last_t >= self.seconds:
            self._line()

    def set_postfix(self, ordered_dict=None, refresh: bool = True, **kwargs) -> None:
        """What follows the counts on the next line (tqdm's `set_postfix`: numbers as they are, no line now)."""
        self.postfix = {**(ordered_dict or {}), **kwargs}

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.n != self.last_n:
                self._line()

    def __iter__(self):
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __len__(self) -> int:
        return self.total or 0

    def __enter__(self) -> "Lines":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
