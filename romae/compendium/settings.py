"""The runtime a notebook's kernel is asked for by `make reproduce`, read from the environment (see `romae.runtime`):
installed into the library by `romae.compendium` on import, so every `fit` of an experiment honours it."""

from __future__ import annotations

import os

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
