"""Stopping a notebook of `make reproduce`: its time limit (`_time_limit`: the kernel stopped, a failure), and a run
stopped cleanly before its end, to be continued: by its time budget (`--time-budget`,
`make reproduce TIME_BUDGET=`), or by SIGTERM / SIGUSR1 (what a cluster sends before a job's limit).

The kernel's trainings are asked to stop at their next step boundary (the runtime's deadline, leaving `reserve`
seconds for the rest; its stop file, which `on_signal` writes with the signal's name): each keeps its checkpoint in
the record of trainings (`romae.compendium.travel`) and its notebook ends with `TrainingPaused`, which the runner
logs as "paused", publishing nothing of it. The run then exits PAUSED with `continue_command`. A notebook asked to
stop that does not end within GRACE seconds (it was not training) has its kernel stopped, as an interrupt.
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from .. import runtime

PAUSING: list[str] = []  # SIGTERM / SIGUSR1 received: the run stops cleanly (its trainings at a step boundary)
STOPPED: list[int] = []  # the grace ran out: the kernel was stopped (then an interrupt)
GRACE = 300.0  # seconds a notebook asked to stop cleanly has before its kernel is stopped (SLURM's --signal=USR1@300)
PAUSED = 75  # the exit code of a run stopped cleanly before its end (EX_TEMPFAIL: continue it later)


def on_signal(signum, frame) -> None:
    """SIGTERM / SIGUSR1: ask the kernel's trainings to stop at their next step boundary, their checkpoints kept (the
    runtime's stop file; a kernel signalled with this process group stops the same way), and let the notebook end;
    GRACE seconds later whatever still runs is stopped."""
    PAUSING.append(signal.Signals(signum).name)
    stop = runtime.current().stop_file
    if stop:
        Path(stop).write_text(PAUSING[-1])  # what the kernel's trainings give as their reason
    if len(PAUSING) == 1:
        threading.Thread(target=_grace, name="grace after a stop request", daemon=True).start()


def _grace() -> None:
    time.sleep(GRACE)
    if not PAUSING:  # the run ended (a later run in this process cleared it)
        return
    print(f"== the notebook did not stop within {GRACE:.0f} s of the request: stopping its kernel", flush=True)
    STOPPED.append(signal.SIGTERM)
    stop_children()


def stop_children() -> None:
    """SIGTERM to every descendant of this process: the notebook's kernel (in its own session) and its children."""
    import psutil  # a requirement of accelerate and IPython

    for child in psutil.Process().children(recursive=True):
        try:
            child.terminate()
        except psutil.Error:
            pass


def reserve(budget: float | None) -> float:
    """Seconds of a time budget kept for after the trainings stop: the kernel keeps their checkpoints and ends, the
    run logs and rebuilds its pages (5 % of the budget, between 5 s and 5 min)."""
    return 0.0 if budget is None else min(300.0, max(5.0, 0.05 * budget))


def continue_command(args) -> str:
    """The `make reproduce` line that continues a run stopped cleanly: the same notebooks, profile and settings."""
    parts = [f"PROFILE={args.profile}", f"ONLY={args.only}"]
    given = (("DEVICE", args.device), ("PRECISION", args.precision), ("GPU_MEMORY", args.gpu_memory),
             ("TIMEOUT", args.timeout))
    parts += [f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}" for name, value in given
              if value is not None]
    if args.param:
        parts.append("PARAMS=\"" + " ".join(args.param) + "\"")
    if args.time_budget is not None:
        parts.append(f"TIME_BUDGET={args.time_budget:g}")
    return "make reproduce " + " ".join(parts)


def _stop_new_processes(me, before: set[int], grace: float = 5.0) -> None:
    """Stop this process's descendants that are not in `before` (pids): SIGTERM, SIGKILL to those left after
    `grace` seconds."""
    import psutil

    procs = [p for p in me.children(recursive=True) if p.pid not in before]
    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass


@contextmanager
def _time_limit(seconds: float | None, notebook: str, text=lambda s: f"stopped after {s:g} s (the time limit)"):
    """Yield a list that gets the limit once it is hit. `seconds` after entering (None: never), unless the block has
    ended, a thread prints "notebook <notebook>: stopped after ..." and stops every process started inside the block
    (the notebook's kernel and its children), again each second until the block ends: papermill then fails with a
    dead kernel, which run_notebook reports as the time limit. `text(seconds)`: what the line says."""
    hit: list[float] = []
    if seconds is None:
        yield hit
        return
    import psutil  # a requirement of accelerate and IPython

    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    done = threading.Event()

    def watch():
        if done.wait(seconds):
            return
        hit.append(seconds)
        print(f"notebook {notebook}: {text(seconds)}", flush=True)
        while not done.is_set():
            _stop_new_processes(me, before)
            done.wait(1.0)

    thread = threading.Thread(target=watch, name=f"time limit of {notebook}", daemon=True)
    thread.start()
    try:
        yield hit
    finally:
        done.set()
        thread.join(timeout=15)
