"""The speed measured here and the runtime estimated from it."""

from __future__ import annotations

import pandas as pd
import torch

from ...data.position import position_samples
from ...model import RoMAEForPrediction
from ...train import ArrayDataset, fit

from .profiles import config


# ----------------------------------------------------------------------------- speed

def measure_speed(profile: str = "quick", size: str = "tiny", use_cls: bool = True, n_steps: int = 40,
                  device=None) -> float:
    """Optimiser steps per second of one Table 1 run of `size` in `profile`, timed inside `romae.train.fit`
    between step 10 and step n_steps (first steps excluded: allocation and warm-up of the kernels)."""
    cfg = config(profile).table1
    run = next(r for r in cfg.sizes if r.size == size)
    train = position_samples(max(run.n_train, cfg.batch_size * n_steps), cfg.n_tokens, cfg.low, cfg.high, 0)
    torch.manual_seed(0)
    model = RoMAEForPrediction(cfg.model_config(run, use_cls))
    res = fit(model, ArrayDataset(**train), cfg.train_config(run, 0), device=device, max_steps=n_steps)
    t = {row["step"]: row["seconds"] for row in res.history if "seconds" in row}
    return (n_steps - 10) / (t[n_steps] - t[10])


def step_cost(d_model: int, depth: int, d_ff: int, tokens: int, batch: int) -> float:
    """Relative cost of one training step: ~6 x block parameters x tokens per batch (matmul FLOPs)."""
    return 6.0 * depth * (4 * d_model ** 2 + 2 * d_model * d_ff) * tokens * batch


def estimate_runtime(profile: str, tiny_steps_per_s: float) -> pd.DataFrame:
    """Rough wall-clock estimate of every part of a profile from tiny's measured speed (with [CLS]),
    scaling by matmul FLOPs per step; evaluation passes counted as 1/3 of a training step per batch."""
    p = config(profile)
    t1 = p.table1
    ref = step_cost(180, 12, t1.d_ff, t1.n_tokens + 1, t1.batch_size)
    rows = []
    for run in t1.sizes:
        steps = -(-run.n_train // t1.batch_size) * run.epochs
        evals = -(-run.n_test // t1.batch_size) * run.epochs / 3
        n = len(run.seeds) * len(t1.with_cls)
        cost = step_cost(run.d_model, run.depth, t1.d_ff, t1.n_tokens + 1, t1.batch_size) / ref
        rows.append(dict(part=f"Table 1, {run.size}", runs=n, steps_per_run=steps,
                         minutes=n * (steps + evals) * cost / tiny_steps_per_s / 60))
    f2 = p.fig2
    steps = -(-f2.n_train // f2.batch_size) * f2.epochs
    evals = -(-f2.n_test // f2.batch_size) * f2.epochs / 3
    n = len(f2.seeds) * len(f2.ranges)
    cost = step_cost(f2.d_model, f2.depth, f2.d_ff, 2, f2.batch_size) / ref
    rows.append(dict(part="Figure 2", runs=n, steps_per_run=steps,
                     minutes=n * (steps + evals) * cost / tiny_steps_per_s / 60))
    out = pd.DataFrame(rows)
    return pd.concat([out, pd.DataFrame([dict(part="total", runs=out.runs.sum(), steps_per_run=None,
                                              minutes=out.minutes.sum())])], ignore_index=True)
