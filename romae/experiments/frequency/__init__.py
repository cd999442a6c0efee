"""Frequency retention (App. B.4, Figures 3-5): how well does RoMAE interpolate sines of growing frequency?

RoMAE-tiny is trained MAE-style on noisy sums of one or two sines (`romae.data.sines`): one token per
point (token_dim 1), 1-D positions = the times t in [0, 1] times `position_scale` (1 = the authors'
raw t; see below), [CLS] on, and a task-given mask: the 50 observed points are visible, the 50 others are hidden and predicted;
the loss is the MSE on the hidden points against the noisy values. Evaluation, per test frequency
(single mode, Figure 3) and per pair of test frequencies (two modes, Figure 4):

* time-domain MSE on the hidden points, against the noisy values (the training loss; the authors'
  metric) and against the clean signal;
* FFT error: the full series is reconstructed (observed noisy points + predictions, `model.reconstruct`)
  and its one-sided FFT magnitude compared with the clean signal's: the MSE over all bins ("MSE on the
  full FFT") and the squared error at the bin(s) of the series' frequencies ("MSE at the frequency bin").

Positions. With raw t in [0, 1] the fastest RoPE pair turns less than 1 radian across a whole series,
so neighbouring points are nearly indistinguishable to attention (`authors-code.md` 3.4). On this CPU a
1,000-step probe with raw t stayed at the loss of predicting zero (about the signal variance), while
t x 100 learned; the quick profile therefore scales t by T - 1 = 99 (positions = sample index, spacing 1)
and also evaluates the raw-t model as a control, both labelled in the results. The paper profile keeps
raw t, as the authors ran it.

The claim of Figures 3 and 4 (the FFT error grows with frequency above 9 Hz) is recorded with the trivial
predictor's error on the same series (`trivial`: the observed points kept, every hidden point filled with 0
or with the series' observed mean, whichever scores lower); the summary counts the claim only when the
model's time-domain MSE is at most 0.8x of it (`report.learned`: LEARN_FACTOR). Every row records its scale
(`run_scale`: series, epochs, model and positions beside the `paper` profile's), so rescaled positions show as
such.

Figure 5 is one 1 + 5 Hz realisation with its spectrum. Trained models and evaluations are cached
(`romae.compendium.cache.cached`), keyed by the resolved config.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ...compendium import plan, report
from ... import runtime
from ...compendium.cache import cached
from ...config import RoMAEConfig, TrainConfig, check_profile, size
from ...data.sines import SineConfig, one_mode_freqs, sine_series, snr, two_mode_freqs
from ...model import RoMAEForPreTraining
from ...compendium.report import learned, loss_flags, record, save_table, scale
from ...compendium.kept import fit_cached

# the experiment's definitions, moved verbatim into one module per job, importable from here as before
from .profiles import (
    EXPERIMENT, FIG4, AUTHORS_TEST_FREQS, FrequencyConfig, PROFILES, config, paper_trainings, control_config)
from .training import to_tensors, train_model, load_model
from .scoring import (
    one_sided_spectrum, frequency_bin, fft_errors, evaluate, series_metrics, TRIVIAL, trivial_reconstruction,
    METRICS, per_case, trend_fit, linear_trend, high_pair_preference, trend_table, test_series, trivial,
    evaluate_config)
from .experiment import (
    positions_label, run_scale, METRIC_COLUMNS, _record_variant, status_table, run, reading)
from .figures import plot_control, _tag, plot_fig3, plot_fig4, plot_fig5

plan.register("02", paper_trainings)  # the whole-paper plan lists it
