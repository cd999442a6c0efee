"""Ablation: the [MASK] token's initialisation, the authors' zeros against MAE's N(0, 0.02).

`RoMAEForPreTraining` starts its [MASK] token at zeros (the authors; the decoder tells hidden tokens apart
only through RoPE). The decoder's first RMSNorm (epsilon 1e-12) divides by sqrt(eps + mean(x^2)), so at
x = 0 its gradient is ~1e6 times the incoming one: the first step's gradient norm is dominated by the
[MASK] token, and AdamW's first update (about lr * sign(g) per element) takes the token from zero to a
vector that the norm then blows up to unit RMS. MAE (facebookresearch/mae, `models_mae.py`) draws its
mask token from N(0, 0.02) instead (`RoMAEConfig.mask_token_init="normal"`); the norm then sees a token
of ordinary size from the start.

What is compared: the quick settings of notebook 15 (Spiral and Synthetic interpolation, the
interpolation module's own profile configs) and of notebook 02's raw-t control (the frequency module's
quick config with `frequency.control_config`), each replaced with `mask_token_init="normal"` and nothing
else: same seeds, data, schedules, model sizes and position scales. The normal draw comes from a side
generator (see `RoMAEForPreTraining`), so every other initial weight and every later random draw equal
the zeros run's: the two runs differ in the [MASK] token only.

Where the zeros numbers come from:

* `smoke` and `paper`: a fresh run of each piece with `mask_token_init="zeros"`, the same code path.
* `quick` (to save CPU): the committed quick numbers of `reports/results.csv` (rows
  `table7_interpolation` and `fig3_frequency_retention` "... raw t (control)"), except one Synthetic seed
  (seed 0, the cheapest piece), which is trained fresh with zeros to show that the code still reproduces
  the committed run: its numbers are compared with the committed per-seed values (recovered exactly from
  the committed 2-seed mean and std: mean +- std / sqrt(2)), and the fresh seed-0 pair (zeros, normal)
  gets its own rows.

Mechanism (fresh for both inits in every profile): the model each run starts from (same seed, same
config) on its first training batch, with one fixed mask: the loss, the gradient norm before clipping
(total and of the [MASK] token alone), one optimiser step exactly as `fit` takes it (AdamW, the
schedule's first learning rate, clipping), and the loss on the same batch after it. The first steps of
each run are also trained with `fit` and logged every step (`fig_init_ablation_mask_token`).

Output: the table `init_ablation_mask_token` (experiment, setting, metric, zeros, normal, better, ratio
normal / zeros, zeros_source) and `record` rows under the experiment id `init_ablation_mask_token` with
the source experiments' setting and metric names and the init appended to the setting. Zeros numbers taken
from the committed results are not recorded again (they are not computed by this code).
"""

from __future__ import annotations

import dataclasses
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ...compendium import plan, report
from ... import runtime
from ...config import RoMAEConfig, TrainConfig, check_profile
from ...data import spiral as S
from ...data import synthetic as Y
from ...data.sines import sine_series
from ...masking import random_mask
from ...model import RoMAEForPreTraining
from ...compendium.report import REPORTS, difference, difference_text, learned, loss_flags, record, save_figure, save_table, scale
from ...train import ArrayDataset, _make_optimizer, fit, lr_at
from .. import frequency, interpolation

# the experiment's definitions, moved verbatim into one module per job, importable from here as before
from .settings import (
    EXPERIMENT, INITS, SOURCES, CURVE_STEPS, CHECK_SEED, CONTROL, TOLERANCE, NOT_COMPARED,
    interpolation_profile, control_config, paper_trainings)
from .first_update import Start, starts, _first_batch, first_step, first_steps
from .training import _spiral_metrics, _synthetic_metrics, _control_metrics, predict_zero_mse, train_pieces
from .reading import (
    committed_quick, committed_per_seed, _source, _better, _piece, _positions, piece_scale, _losses, MARGIN,
    _zeros_per_seed, difference_table, _reproduction_check)
from .experiment import run
from .figures import plot_first_steps, plot_learning_curves
from .verdict import training_flags, LEARNED, CLOSE, conclusion

plan.register("04", paper_trainings)  # the whole-paper plan lists it
