"""Absolute-position reconstruction (Sec. 5.1 / Table 1 and App. B.1 / Figure 2).

Can RoMAE recover a token's absolute position when RoPE only ever shows it relative positions?
Every token carries the value 1, so the position enters only through the rotary attention; one shared
linear head on every non-[CLS] token regresses the token's position (`RoMAEForPrediction`, head
"tokens", task "regression", MSE). Corollary 4.1: without [CLS] the encoder is translation-invariant
(shifting all positions by c changes nothing), so the best it can do is predict the mean position and
its MSE is the variance of the positions. Proposition 4.2: a [CLS] token pinned at the origin breaks
that invariance, and the model can learn absolute positions.

* Table 1: 10 tokens at positions U(1, 50) (authors' code), with and without [CLS], RoMAE-tiny depth
  (12), heads (3) and feed-forward (720) with d_model 180 / 432 / 720 ("tiny", "small", "base"), p-RoPE
  p = 0.75, Table 17's AdamW schedule, 20,000 / 4,000 samples, seeds 42-46. Metric: mean over the
  test samples of the per-sample MSE.
* Figure 2 (App. B.1): one token + [CLS], positions U(0, 100) or U(0, 1000), d_model 960, Table 16's
  SGD schedule, seeds 40-44, evaluated at 500 evenly spaced positions. Plotted: the absolute error
  |p - p_hat| against (p - low) / (high - low), averaged over seeds (the authors plotted this mean
  absolute error under an "MSE" label).

Every row records its scale (`table1_scale`, `fig2_scale`: what the run used beside the `paper` profile's)
and the trivial predictor of its task (`report.learned`): the constant mean training position for Table 1
(MSE), the constant median training position for Figure 2 (mean absolute error over the grid). Figure 2's
claim (edge errors above the interior's) is tested only when the model's error is at most 0.8x the
constant's (`report.learned`: LEARN_FACTOR): a constant output has larger edge errors too. With vs without
[CLS] is compared per size as a paired difference over seeds (`difference_table`).

Every trained run is cached (`romae.compendium.cache.cached`), keyed by its resolved model, training and data
config, so re-running the notebook to restyle a figure does not retrain.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import pandas as pd
import torch

from ...compendium import plan, report, terminal
from ... import runtime
from ...compendium.cache import cached
from ...config import EncoderConfig, RoMAEConfig, TrainConfig, check_profile
from ...data.position import position_grid, position_samples, uniform_variance
from ...model import RoMAEForPrediction
from ...compendium.reference import paper_values
from ...compendium.report import difference, difference_text, learned, learned_text, loss_flags, record, reference_name, row_status, save_table, scale
from ...train import ArrayDataset, fit

# the experiment's definitions, moved verbatim into one module per job, importable from here as before
from .profiles import (
    EXPERIMENT, FIG2, SizeRun, PAPER_SIZES, Table1Config, Fig2Config, PositionProfile, PROFILES, config,
    paper_trainings, setting_name)
from .training import predict, per_sample_mse, _train, _kept, _planned, _key, train_table1_run, train_fig2_run
from .table1 import (
    run_table1, _model_label, table1_scale, constant_mse, DIFFERENCE_SHARE, difference_table, _note,
    table1_reading)
from .fig2 import status_table, run_fig2, fig2_paper_steps, fig2_scale, constant_abs_error, fig2_reading
from .speed import measure_speed, step_cost, estimate_runtime
from .figures import plot_learning_curves, plot_fig2

plan.register("01", paper_trainings)  # the whole-paper plan lists it
