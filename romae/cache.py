"""Results cache: heavy work is keyed by a hash of its resolved config, so re-running a notebook to
restyle a figure does not retrain. Entries live under <repo>/.cache/romae/ (git-ignored).

    result = cached("table1", cfg_dict, lambda: train_and_evaluate(cfg))
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

import torch

from .config import to_json

CACHE = Path(__file__).resolve().parents[1] / ".cache" / "romae"


def config_hash(config: Any) -> str:
    """Short stable hash of a (nested) config dataclass or dict."""
    return hashlib.sha256(to_json(config).encode()).hexdigest()[:16]


def cached(name: str, config: Any, compute: Callable[[], Any], cache_dir: str | Path | None = None,
           refresh: bool = False) -> Any:
    """Return compute()'s result for `config`, computing it only if no entry exists (or `refresh`).

    The result (anything torch.save can store: dicts, tensors, lists, numbers) is written atomically
    beside the config it came from, <name>-<hash>.pt + .json.
    """
    folder = Path(cache_dir) if cache_dir else CACHE
    key = f"{name}-{config_hash(config)}"
    path = folder / f"{key}.pt"
    if path.exists() and not refresh:
        return torch.load(path, weights_only=False)
    result = compute()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(result, tmp)
    os.replace(tmp, path)  # atomic: a crash never leaves a half-written entry
    (folder / f"{key}.json").write_text(to_json(config) + "\n")
    return result
