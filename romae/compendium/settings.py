"""The runtime a notebook's kernel is asked for by `make reproduce`, read from the environment (see `romae.runtime`):
installed into the library by `romae.compendium` on import, so every `fit` of an experiment honours it."""

from __future__ import annotations

import os
from pathlib import Path

from ..runtime import Runtime


def _number(name: str, kind):
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a {kind.__name__}") from None


def from_env() -> Runtime:
    """The runtime the environment asks for (ROMAE_DEVICE, ROMAE_MAX_STEPS, ROMAE_PRECISION, ROMAE_GPU_MEMORY,
    ROMAE_DEADLINE, ROMAE_STOP_FILE); ValueError naming a bad value."""
    return Runtime(device=os.environ.get("ROMAE_DEVICE", "").strip() or None, max_steps=_number("ROMAE_MAX_STEPS", int),
                   precision=os.environ.get("ROMAE_PRECISION", "").strip() or None,
                   gpu_memory_gb=_number("ROMAE_GPU_MEMORY", float), deadline=_number("ROMAE_DEADLINE", float),
                   stop_file=os.environ.get("ROMAE_STOP_FILE", "").strip() or None)


def cuda_graphs_from_env() -> None:
    """ROMAE_CUDA_GRAPHS=0 (`make reproduce CUDA_GRAPHS=0`): every training steps eagerly
    (`romae.runtime.cuda_graphs_off`); 1 or unset: CUDA graphs where they apply. ValueError naming another value."""
    from .. import runtime

    text = os.environ.get("ROMAE_CUDA_GRAPHS", "").strip()
    if text not in ("", "0", "1"):
        raise ValueError(f"ROMAE_CUDA_GRAPHS must be 0 or 1, got {text!r}")
    runtime.cuda_graphs_off("CUDA_GRAPHS=0" if text == "0" else None)


def catch_stop_signals() -> None:
    """In a kernel of `make reproduce` (ROMAE_STOP_FILE set), SIGTERM and SIGUSR1 ask its trainings to stop cleanly
    (`romae.runtime.request_stop`) instead of killing it, whether they come during a training or between two: a
    cluster's warning before its limit reaches the kernel with the runner. Elsewhere (a user's kernel) nothing is
    changed. Only from the main thread (Python's signals)."""
    import signal
    import threading

    from .. import runtime

    if not os.environ.get("ROMAE_STOP_FILE", "").strip() or threading.current_thread() is not threading.main_thread():
        return
    for name in runtime.STOP_SIGNALS:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), runtime._on_signal)


# ----------------------------------------------------------------------------- where a run's artefacts go

SCRATCH = Path(__file__).resolve().parents[2] / "runs" / "interactive"  # git-ignored (/runs/)
_TOLD: list[Path] = []


def reports_folder(reports_dir: str | Path | None = None) -> Path:
    """Where this process writes its tables, figures and result rows: `reports_dir` if given (`make reproduce` gives
    each notebook its staging folder and publishes from there), else the ROMAE_REPORTS setting if set (the test
    suite's scratch folder), else `SCRATCH`: a run that `make reproduce` did not start (JupyterLab, nbconvert,
    papermill or a script by hand) never changes the committed reports/ (said once, `tell_destination`)."""
    if reports_dir:
        return Path(reports_dir)
    if os.environ.get("ROMAE_REPORTS", "").strip():
        return Path(os.environ["ROMAE_REPORTS"])
    tell_destination()
    return SCRATCH


def tell_destination() -> None:
    """Say once per process that its artefacts go to `SCRATCH`, not to reports/."""
    if _TOLD:
        return
    _TOLD.append(SCRATCH)
    print(f"An interactive run (not `make reproduce`): its tables, figures and result rows go to runs/interactive/ "
          f"({SCRATCH}, git-ignored); reports/ stays as committed. Only `make reproduce` publishes.", flush=True)


def tell_if_interactive() -> None:
    """In a notebook kernel that `make reproduce` and the test suite did not start (JupyterLab, nbconvert, papermill by
    hand), say where its artefacts go as soon as the compendium is imported: the run's first output."""
    import sys

    started = any(os.environ.get(k, "").strip() for k in ("ROMAE_REPORTS", "ROMAE_STOP_FILE"))
    if "ipykernel" in sys.modules and not started:
        tell_destination()
