"""How this process runs its trainings: device, precision, dry run. Not what a run *is* (that is its configs).

`make reproduce` (romae.runner.reproduce) sets these for a notebook's kernel through environment variables, which the
compendium reads (`romae.compendium.settings`) and installs here (`use`), so that every `fit` in the kernel honours
them without a notebook parameter of its own (the library reads no environment variable itself):

    ROMAE_DEVICE=cpu|cuda        where to train (unset: an accelerator if there is one, else the CPU)
    ROMAE_MAX_STEPS=2            a dry run: every training stops after 2 optimiser steps, the results cache
                                 is neither read nor written, micro-batches are capped on the CPU
    ROMAE_PRECISION=fp32|tf32|bf16   a named deviation from the profile's precision (the paper: FP32)
    ROMAE_GPU_MEMORY=80          GB per device the plan fits micro-batches into (unset: the device's own)
    ROMAE_DEADLINE=1795000000    a time budget: the Unix time by which every training has stopped cleanly at a step
                                 boundary, its checkpoint written (`fit` returns it `paused`; the same call continues)
    ROMAE_STOP_FILE=/tmp/x       a training stops the same way once this file exists (the runner's SIGTERM)
`request_stop` (a signal handler: `stopping_on_signals`) asks the same of this process's trainings.

`current()` gives them; `describe()` is what runs.csv and every result row record about the machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from dataclasses import dataclass

import torch

PRECISIONS = ("fp32", "tf32", "bf16")
DEVICES = ("cpu", "cuda")
ENV = ("ROMAE_DEVICE", "ROMAE_MAX_STEPS", "ROMAE_PRECISION", "ROMAE_GPU_MEMORY", "ROMAE_DEADLINE", "ROMAE_STOP_FILE")
DRY_MICRO_CPU = 4  # a dry run on the CPU: at most this many samples per micro-batch, two micro-batches a step


@dataclass(frozen=True)
class Runtime:
    device: str | None = None  # "cpu" | "cuda" | None (an accelerator if available)
    max_steps: int | None = None  # a dry run: optimiser steps per training
    precision: str | None = None  # None: each TrainConfig's own (fp32 unless bf16=True)
    gpu_memory_gb: float | None = None  # the plan's memory per device (None: the device's own)
    deadline: float | None = None  # Unix time by which trainings stop cleanly (a time budget), None: none
    stop_file: str | None = None  # trainings stop cleanly once this file exists

    def __post_init__(self):
        if self.device not in (None, *DEVICES):
            raise ValueError(f"device must be one of {DEVICES} (or unset), got {self.device!r}")
        if self.precision not in (None, *PRECISIONS):
            raise ValueError(f"precision must be one of {PRECISIONS} (or unset), got {self.precision!r}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        if self.gpu_memory_gb is not None and not self.gpu_memory_gb > 0:
            raise ValueError(f"gpu memory must be > 0 GB, got {self.gpu_memory_gb}")
        if self.deadline is not None and not self.deadline > 0:
            raise ValueError(f"deadline must be a Unix time (> 0), got {self.deadline}")

    @property
    def dry_run(self) -> bool:
        return self.max_steps is not None

    def env(self) -> dict[str, str]:
        """The environment variables that give a child process (a notebook's kernel) this runtime."""
        values = dict(zip(ENV, (self.device, self.max_steps, self.precision, self.gpu_memory_gb,
                                self.deadline and f"{self.deadline:.3f}", self.stop_file)))
        return {k: str(v) for k, v in values.items() if v is not None}


_SOURCE = None  # what `current` returns: None (defaults), a Runtime, or a function giving one (`use`)


def use(source) -> None:
    """Set this process's runtime: a `Runtime`, a function returning one (called at every `current()`), or None for
    the defaults. The library never reads the environment itself: the compendium (`romae.compendium`, imported by
    every experiment) installs `romae.compendium.settings.from_env`, which reads the ROMAE_* variables above."""
    global _SOURCE
    if source is not None and not isinstance(source, Runtime) and not callable(source):
        raise TypeError(f"runtime.use takes a Runtime, a function returning one, or None, got {type(source).__name__}")
    _SOURCE = source


def current() -> Runtime:
    """This process's runtime (`use`): the defaults (an accelerator if there is one, the profile's precision, no dry
    run) unless a caller set another; under `make reproduce`, what the environment asks for."""
    if _SOURCE is None:
        return Runtime()
    return _SOURCE if isinstance(_SOURCE, Runtime) else _SOURCE()


def dry_run() -> bool:
    return current().dry_run


# ----------------------------------------------------------------------------- asking trainings to stop cleanly

_STOP: list[str] = []  # why this process's trainings were asked to stop (newest last): `request_stop`
STOP_SIGNALS = ("SIGTERM", "SIGUSR1")  # what a cluster sends before a job's limit (SLURM's --signal, a pre-emption)


def request_stop(why: str) -> None:
    """Ask every training of this process to stop at its next step boundary, its checkpoint written (`fit` returns
    it `paused`). Safe in a signal handler."""
    _STOP.append(str(why))


def clear_stop() -> None:
    """Forget the requests: a later `fit` in this process trains again."""
    _STOP.clear()


def stop_requested() -> str | None:
    """Why this process's trainings were asked to stop (`request_stop`), or None."""
    return _STOP[-1] if _STOP else None


_EAGER: list[str] = []  # why every training of this process steps eagerly on CUDA (`cuda_graphs_off`)


def cuda_graphs_off(why: str | None) -> None:
    """Every training of this process steps eagerly, whatever its TrainConfig says (no CUDA graphs: `romae.graphs`),
    for `why` ('CUDA_GRAPHS=0', which `make reproduce` passes to its kernels); None: graphs where they apply."""
    if why is not None and not (isinstance(why, str) and why.strip()):
        raise ValueError(f"cuda_graphs_off takes a reason (a non-empty string) or None, got {why!r}")
    _EAGER[:] = [] if why is None else [why.strip()]


def cuda_graphs_barred() -> str | None:
    """Why CUDA graphs are off for every training of this process (`cuda_graphs_off`), or None."""
    return _EAGER[-1] if _EAGER else None


@contextlib.contextmanager
def stopping_on_signals():
    """While the block runs, SIGTERM and SIGUSR1 ask its trainings to stop cleanly (`request_stop`) instead of
    killing the process; the handlers before are put back after. Only in the main thread (Python's signals), and
    only over a default handler (a handler someone else installed, e.g. the runner's, is left alone)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {}
    for name in STOP_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) in (signal.SIG_DFL, _on_signal):
            saved[sig] = signal.signal(sig, _on_signal)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _on_signal(signum, frame) -> None:
    request_stop(signal.Signals(signum).name)


def accelerator_name() -> str | None:
    """The accelerator torch sees ("NVIDIA H100 80GB HBM3"), or None."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "Apple MPS"
    return None


def processes() -> int:
    """How many processes this run has (`accelerate launch` / torchrun set WORLD_SIZE)."""
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def stack(precision: str | None = None) -> dict:
    """torch and CUDA versions, precision and process count: what runs.csv and every result row record."""
    return {"torch": torch.__version__, "cuda": torch.version.cuda or "none",
            "precision": precision or current().precision or "fp32", "processes": processes()}


def stack_label(precision: str | None = None) -> str:
    s = stack(precision)
    return (f"torch {s['torch']}, CUDA {s['cuda']}, {s['precision']}, {s['processes']} process"
            + ("es" if s["processes"] > 1 else ""))


def notes() -> str:
    """What a result row must say about how this process ran: a dry run, a precision other than FP32."""
    rt, parts = current(), []
    if rt.dry_run:
        parts.append(f"DRY RUN: {rt.max_steps} optimiser steps per training (micro-batches capped on the CPU), "
                     "not a result")
    if rt.precision not in (None, "fp32"):
        parts.append(f"precision {rt.precision}: a deviation (the paper's runs are FP32)")
    return "; ".join(parts)


def install_hint() -> str:
    return ("This torch is a CPU build (torch.version.cuda is None)." if torch.version.cuda is None else
            f"torch {torch.__version__} was built for CUDA {torch.version.cuda} but sees no GPU (driver? "
            "CUDA_VISIBLE_DEVICES?).") + (
        " For a GPU: a CUDA build of torch in the venv (on Linux x86-64 pip's default torch wheel is one; else "
        "`make distclean venv TORCH_INDEX=https://download.pytorch.org/whl/cu128`, the CUDA version your driver "
        "supports, or the conda route in environment.yml), then check "
        "`.venv/bin/python -c 'import torch; print(torch.cuda.is_available())'`")


class NoAccelerator(RuntimeError):
    """The paper profile was asked for without an accelerator and without DEVICE=cpu."""


def require_accelerator(profile: str, what: str = "the paper profile") -> None:
    """For profile 'paper': raise NoAccelerator (before any training) unless an accelerator is there or the
    CPU was asked for explicitly (ROMAE_DEVICE=cpu, `make reproduce DEVICE=cpu`)."""
    if profile != "paper" or current().device == "cpu" or accelerator_name() is not None:
        return
    raise NoAccelerator(f"{what} trains at the paper's settings, which needs an accelerator, and torch sees none. "
                        f"{install_hint()}. To run it on the CPU anyway (days; or a dry run with MAX_STEPS=2), "
                        "say so: `make reproduce PROFILE=paper DEVICE=cpu`.")


def dry_batch(batch_size: int, micro_batch: int | None, device: str) -> tuple[int, int | None]:
    """(per-process batch, micro-batch) of a dry run: two micro-batches per step, so the accumulation path runs;
    on the CPU each micro-batch holds at most DRY_MICRO_CPU samples, on an accelerator the planned one."""
    micro = micro_batch or batch_size
    if device == "cpu":
        micro = min(micro, DRY_MICRO_CPU)
    micro = max(1, min(micro, batch_size))
    return min(batch_size, 2 * micro), micro


DRY_EVAL = 32  # a dry run evaluates at most this many samples per set
DRY_LABEL = "dry run: generated tokens of the paper's shapes, not data"


def dry_seeds(seeds) -> tuple:
    """A dry run trains each configuration once: the first seed."""
    seeds = tuple(seeds)
    return seeds[:1] if dry_run() else seeds


def dry_count(n: int, at_most: int = DRY_EVAL) -> int:
    """How many of n samples a set keeps: all of them, or in a dry run at most `at_most`."""
    return min(n, at_most) if dry_run() else n


def device_label(device: str | torch.device | None = None) -> str:
    """A readable name of the device results were computed on, e.g. 'cpu (AMD EPYC, 2 threads)'."""
    dev = torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    import platform
    from pathlib import Path

    name = platform.processor() or platform.machine()
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        name = next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"cpu ({name}, {torch.get_num_threads()} threads)"
