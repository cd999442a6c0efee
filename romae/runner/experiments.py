"""The registry of the paper's experiments, for the whole-paper plan: which experiment module each numbered notebook
runs. Importing one registers its paper trainings with `romae.compendium.plan` (`plan.register`); `load` imports them
all, so the plan and the promise see every notebook (a notebook's kernel imports its own experiment only)."""

from __future__ import annotations

import functools
import importlib

# notebook -> the experiment module whose paper_trainings() lists its trainings (00 and 03 train nothing)
EXPERIMENTS = {"01": "position", "02": "frequency", "04": "mask_token_init", "10": "tiny_imagenet", "11": "esc50",
               "12": "uea", "13": "elasticc", "14": "pendulum", "15": "interpolation", "16": "physionet"}


@functools.lru_cache(maxsize=1)
def load() -> tuple[str, ...]:
    """Import every experiment module (each registers its paper trainings) -> the notebooks that train."""
    for name in EXPERIMENTS.values():
        importlib.import_module(f"romae.experiments.{name}")
    return tuple(sorted(EXPERIMENTS))
