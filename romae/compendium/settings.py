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


def current() -> Runtime:
    """The runtime the environment asks for (see the module's docstring); ValueError naming a bad value."""
    return Runtime(device=os.environ.get("ROMAE_DEVICE", "").strip() or None, max_steps=_number("ROMAE_MAX_STEPS", int),
                   precision=os.environ.get("ROMAE_PRECISION", "").strip() or None,
                   gpu_memory_gb=_number("ROMAE_GPU_MEMORY", float))


def from_env() -> Runtime:
    """The runtime the environment asks for (ROMAE_DEVICE, ROMAE_MAX_STEPS, ROMAE_PRECISION, ROMAE_GPU_MEMORY);
    ValueError naming a bad value."""
    return Runtime(device=os.environ.get("ROMAE_DEVICE", "").strip() or None, max_steps=_number("ROMAE_MAX_STEPS", int),
                   precision=os.environ.get("ROMAE_PRECISION", "").strip() or None,
                   gpu_memory_gb=_number("ROMAE_GPU_MEMORY", float))
