"""The optimiser and its learning-rate schedule (as MAE's util/lr_sched.py): one parameter group, linear warm-up and
a cosine decay to zero, stepped once per optimiser step by `romae.train.fit`."""

from __future__ import annotations

import math
from functools import partial

import torch

from .config import TrainConfig


def lr_at(step: int, total_steps: int, warmup_steps: int, lr: float) -> float:
    """Learning rate of optimiser step `step` (0-based) of `total_steps`.

    Linear warm-up: step s < W uses lr * (s + 1) / W, so the peak lr is used at step W - 1 and no step
    is wasted at lr 0. Then a cosine from the peak to exactly 0 at the last step, total_steps - 1.
    The authors' schedule differs slightly (warm-up from 1e-5 lr, switch one step early, cosine phase
    counted from step 0 so the peak is never quite reached); this is the clean version.
    """
    if step < warmup_steps:
        return lr * (step + 1) / warmup_steps
    peak = max(warmup_steps, 1) - 1  # with no warm-up, step 0 runs at the peak
    span = total_steps - 1 - peak
    if span <= 0:
        return lr
    progress = min((step - peak) / span, 1.0)
    return 0.5 * lr * (1.0 + math.cos(math.pi * progress))


def _lr_factor(step: int, total_steps: int, warmup_steps: int) -> float:
    # LambdaLR wants a multiplier; a partial (not a lambda) keeps the scheduler's state_dict picklable.
    return lr_at(step, total_steps, warmup_steps, 1.0)


def make_optimizer(params, cfg: TrainConfig) -> torch.optim.Optimizer:
    # One parameter group for everything, as the authors: weight decay also hits norms, biases, [CLS].
    if cfg.optimizer == "adamw":
        # fused: one kernel for the whole update (on this CPU ~5x faster than the per-tensor loop)
        return torch.optim.AdamW(params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay, eps=1e-8,
                                 fused=True)
    return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)


def apply_settings(optimizer, scheduler, cfg: TrainConfig, step: int, total_steps: int, warmup: int) -> None:
    """After loading a checkpoint's optimiser and scheduler state under a changed TrainConfig: use cfg's
    learning rate, schedule, betas / momentum and weight decay from here on (the loaded state keeps the
    saved ones: a resume would otherwise record the new lr and train at the old)."""
    for group in optimizer.param_groups:
        group["initial_lr"] = cfg.lr
        group["weight_decay"] = cfg.weight_decay
        if "betas" in group:
            group["betas"] = tuple(cfg.betas)
        if "momentum" in group:
            group["momentum"] = cfg.momentum
        group["lr"] = lr_at(step, total_steps, warmup, cfg.lr)  # what step `step` (0-based) runs at
    scheduler.base_lrs = [cfg.lr] * len(optimizer.param_groups)
    scheduler.lr_lambdas = [partial(_lr_factor, total_steps=total_steps, warmup_steps=warmup)] * len(optimizer.param_groups)



_make_optimizer = make_optimizer  # the name `romae.compendium.cost` and older code use

__all__ = ["apply_settings", "lr_at", "make_optimizer"]
