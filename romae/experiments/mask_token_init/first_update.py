"""The first optimiser step from each initialisation."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import torch

from ... import runtime
from ...config import RoMAEConfig, TrainConfig
from ...data import spiral as S
from ...data import synthetic as Y
from ...data.sines import sine_series
from ...masking import random_mask
from ...model import RoMAEForPreTraining
from ...train import ArrayDataset, _make_optimizer, fit, lr_at
from .. import frequency, interpolation

from .settings import interpolation_profile, control_config


@dataclasses.dataclass(frozen=True)
class Start:
    """Where one run starts: its model config, training config, training data and init seed."""

    name: str
    model: RoMAEConfig
    train: TrainConfig
    data: dict
    seed: int


def starts(profile: str, init: str) -> list[Start]:
    """The first model of each piece (Spiral, Synthetic's first seed, the raw-t control), built as the
    source modules build them (`run_spiral`, `run_synthetic`, `frequency.train_model`)."""
    prof = interpolation_profile(profile, init)
    sp, spd = prof.spiral, prof.spiral_data
    sp_data = interpolation.spiral_tensors(S.spirals("train", spd), sp.position_scale)
    sp_data.pop("mask")  # a fresh random mask per training item, as run_spiral
    sy, syd = prof.synthetic, prof.synthetic_data
    sy_data = interpolation.synthetic_tensors(Y.split("train", syd), sy.position_scale, syd.obs_min, syd.obs_max)
    c = control_config(profile, init)
    c_data = frequency.to_tensors(sine_series(c.n_train, c.train_seed, c.sines), c.position_scale)
    return [
        Start("Spiral", interpolation.model_config(sp, 2, 1 - spd.n_obs / spd.n_points),
              sp.train_config(sp.seeds[0]), sp_data, sp.seeds[0]),
        Start("Synthetic", interpolation.model_config(sy, 1), sy.train_config(sy.seeds[0]), sy_data, sy.seeds[0]),
        Start("raw-t control", c.model_config(), c.train_config(), c_data, c.seed),
    ]


# ----------------------------------------------------------------------------- the mechanism

def _first_batch(start: Start) -> dict:
    """The batch `fit` trains on first (epoch 0's permutation), with a mask fixed once (seed 0) where the
    model would draw a random one."""
    data = ArrayDataset(**start.data)
    perm = torch.randperm(len(data), generator=torch.Generator().manual_seed(start.train.seed))
    batch = data.batch(perm[: runtime.dry_count(start.train.batch_size, 8)])  # a dry run: at most 8 samples
    if "mask" not in batch:
        B, N = batch["values"].shape[:2]
        batch["mask"] = random_mask(B, N, start.model.mask_ratio, batch.get("pad_mask"),
                                    generator=torch.Generator().manual_seed(0))
    return batch


def first_step(start: Start) -> dict:
    """Loss, gradient norms and the loss after one optimiser step, on the run's first batch (see module doc)."""
    torch.manual_seed(start.seed)  # as fit_cached: the model the run starts from
    model = RoMAEForPreTraining(start.model).train()
    batch = _first_batch(start)
    cfg = start.train
    total = math.ceil(len(start.data["values"]) / cfg.batch_size) * cfg.epochs
    optimizer = _make_optimizer(model.parameters(), cfg)
    for group in optimizer.param_groups:
        group["lr"] = lr_at(0, total, cfg.warmup(total), cfg.lr)
    _, loss = model(**batch)
    loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    total_norm = float(torch.nn.utils.get_total_norm([p.grad for p in params]))
    mask_norm = float(model.mask_token.grad.norm())
    rest_norm = float(torch.nn.utils.get_total_norm([p.grad for p in params if p is not model.mask_token]))
    if cfg.grad_clip:
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
    optimizer.step()
    with torch.no_grad():
        _, after = model(**batch)
    return dict(loss_step0=loss.item(), grad_norm_step1=total_norm, grad_norm_mask_token_step1=mask_norm,
                grad_norm_rest_step1=rest_norm, loss_after_1_step=after.item(), lr_step1=optimizer.param_groups[0]["lr"])


def first_steps(start: Start, steps: int) -> pd.DataFrame:
    """The run's first `steps` optimiser steps with `fit`, logged every step (loss, grad_norm before clipping)."""
    torch.manual_seed(start.seed)
    model = RoMAEForPreTraining(start.model)
    cfg = dataclasses.replace(start.train, log_every=1, progress=False)
    res = fit(model, ArrayDataset(**start.data), cfg, max_steps=steps, device="cpu")
    return res.frame()[["step", "loss", "grad_norm"]]
