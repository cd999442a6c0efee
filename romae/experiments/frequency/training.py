"""One model's training (cached) and loading."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from ...compendium import plan
from ...data.sines import sine_series
from ...model import RoMAEForPreTraining
from ...compendium.kept import fit_cached

from .profiles import FrequencyConfig


# ----------------------------------------------------------------------------- data and model

def to_tensors(series: dict[str, np.ndarray], position_scale: float = 1.0) -> dict[str, torch.Tensor]:
    """Generator output -> model inputs: values [n, T, 1], positions [n, 1, T] (t * position_scale),
    mask [n, T] (True = hidden)."""
    if not position_scale > 0:
        raise ValueError(f"position_scale must be > 0, got {position_scale}")
    n, T = series["values"].shape
    t = torch.as_tensor(series["t"] * position_scale, dtype=torch.float32)
    return dict(values=torch.as_tensor(series["values"]).unsqueeze(-1),
                positions=t.expand(n, 1, T).contiguous(),
                mask=~torch.as_tensor(series["observed"]))


def train_model(cfg: FrequencyConfig, cache_dir=None, refresh: bool = False, checkpoints: bool = False,
                profile: str = "") -> dict:
    """Train (or load from the cache) the interpolation model -> {state_dict, history, seconds, steps}.

    `checkpoints`: keep checkpoints and history.jsonl in <repo>/runs/frequency_model-<config hash>/, so
    an interrupted run resumes where it stopped (the hash keeps runs of different configs apart).
    """
    key = dict(n_train=cfg.n_train, train_seed=cfg.train_seed, sines=dataclasses.asdict(cfg.sines))
    if cfg.position_scale != 1.0:  # only then, so raw-t entries cached before the option existed stay valid
        key["position_scale"] = cfg.position_scale
    data = to_tensors(sine_series(cfg.n_train, cfg.train_seed, cfg.sines), cfg.position_scale)
    train = plan.fit_memory(cfg.train_config(), cfg.model_config(), cfg.sines.T, "pretrain", profile,
                            hidden=1 - cfg.sines.n_obs / cfg.sines.T)  # paper: the planned micro-batch
    return fit_cached("frequency_model", RoMAEForPreTraining, cfg.model_config(), data, train, key,
                      seed=cfg.seed, cache_dir=cache_dir, refresh=refresh, checkpoints=checkpoints)


def load_model(cfg: FrequencyConfig, trained: dict) -> RoMAEForPreTraining:
    model = RoMAEForPreTraining(cfg.model_config())
    model.load_state_dict(trained["state_dict"])
    return model.eval()
