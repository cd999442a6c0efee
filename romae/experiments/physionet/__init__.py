"""PhysioNet 2012 interpolation (Sec. 5.5, App. D.9, Table 7): RoMAE against simple baselines.

Data: the 8,000 records of set-a and set-b (`romae.data.physionet`), mTAN/HeTVAE preprocessing, the 80/20
split on sorted record ids, times divided by the split's largest time (so in [0, 1]). Every observed
(time, variable) cell is one scalar token with the 2-D position (time x `time_scale`, variable index),
built by `romae.builders.from_long`. RoMAE-tiny with [CLS] is trained as a masked autoencoder (the
paper's App. D.9: 50 % of the observed tokens hidden, MSE on the hidden ones) and evaluated by
interpolation: the test records' hidden observed values are predicted from the visible ones.

Gross recording errors are winsorised (`winsorise`). The records hold a few values in the wrong unit or
field (pH 735 for 7.35, pH 99, a WBC of 6,252, a temperature of -17.8 C); on HeTVAE's trimmed z-score the worst
lie at |z| ~ 9,500. Replaying the training order of the `quick` profile (`training_order`, `batch_extremes`: no
training) measured the cause of the loss spikes of its first run (13 of 64 logged losses, up to ~10^3x, at the
same steps in both trainings): each lies in a logged window whose batch holds one of eight training records with
a recorded pH of 94-735 or that WBC (|z| 830-9,450), and its height is that value's squared z over the batch's
hidden tokens, averaged over the window's 25 steps (e.g. step 124, record 140525 with pH 735 and 734: loss
17,500 or 35,000 for an untrained model as one or both are hidden, 1.05 winsorised); the other windows holding
such a batch are those where the model's random mask left the value visible. Every value is therefore clipped,
per variable, to the training split's anomaly bounds before anything else sees it: HeTVAE's own thresholds
(`filter_anomalies` in `get_mimiciii_data`, reml-lab/hetvae src/utils.py: the 0.1 % and 99.95 % quantiles of
the variable's training values, between which its z-score statistics are taken). Inputs and targets of
training and test, and every baseline, see the clipped values (the largest |z| left is ~20); variables with at
most 10 distinct values (categorical codes, which HeTVAE's z-score leaves unscaled) are not clipped. HeTVAE
applies the bounds to its statistics only; mTAN's min-max ((x - min) / max over the raw values) bounds every
value in [0, 1] by construction but squeezes a variable's normal range to a sliver when its maximum is a gross
error (pH: 7.4 / 735). The paper uses HeTVAE's preprocessed release (`physionet_compressed.npz`), whose
preprocessing script is not public, so ours is a documented stand-in. The scalings' statistics are fitted on the
recorded (unclipped) training values, so they are HeTVAE's and mTAN's exactly.

Both open questions of the protocol are evaluated rather than assumed:

* normalisation: mTAN's min-max ((x - min) / max) and HeTVAE's trimmed z-score, both fitted on the
  training split. Every method predicts in raw units and is scored on both scales (the model is trained
  on one; an affine map per variable takes its predictions to the other);
* masking unit: 50 % of the observed *tokens* hidden (the paper's appendix), or 50 % of the observed
  *time points* hidden with every value at them (HeTVAE's `subsample_timepoints`), the same masks
  for every method, `mask_draws` seeded draws.

Baselines (same split, masks, scale): the training mean of each variable; the record's own mean of the
variable's visible values; linear interpolation in time between the record's visible values of that
variable (nearest at the edges). The last two fall back to the training mean when the record shows no
value of the variable. MSE is pooled over all hidden values of all test records (HeTVAE's
`evaluate_hetvae`: total squared error / number of scored values). Every method is a result row (metric
`mse`; the baselines' and the raw-time control's settings name them), so the summary shows them beside RoMAE.

The headline scoring (`LEAD`), the one compared with the paper's 0.57 (`romae/reference/paper_values.csv`), is
the paper's protocol: every hidden value of the preprocessed (winsorised) data scored on the z-score, as
HeTVAE's `evaluate_hetvae` scores every hidden value of its release. Beside it: the same with the winsorised
values (those recorded beyond the bounds, ~0.1 %) left unscored, which shows whether their treatment moves the
result, and mTAN's min-max.

Rows count trained models (`n_seeds`: one per RoMAE run, none for a baseline) apart from the seeded
evaluation masks (`mask_draws`, said in the note); the +- is the std over mask draws.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ...compendium import plan, report
from ... import runtime
from ...builders import from_long
from ...compendium.cache import cached
from ...config import RoMAEConfig, TrainConfig, check_profile, size
from ...data import physionet as P
from ...data.catalog import Need, require
from ...masking import equalize, keep_groups, trim_padding
from ...model import RoMAEForPreTraining
from ...compendium.reference import peer_values
from ...compendium.report import record, save_table
from ...feeding import bucketed
from ...compendium.kept import fit_cached

# the experiment's definitions, moved verbatim into one module per job, importable from here as before
from .profiles import (
    EXPERIMENT, PAPER_TRAIN_RECORDS, PAPER_TEST_RECORDS, PAPER_POSITIONS, PAPER_MAX_TOKENS, NORMS, LEAD,
    SCORINGS, BOUND_QUANTILES, CATEGORICAL_MAX, GROSS_Z, UNITS, BASELINES, METHODS, SUFFIX, TRIVIAL,
    published, setting, RunConfig, Profile, PROFILES, paper_trainings, config, data_needs)
from .records import dry_records, prepare, anomaly_bounds, winsorise, hidden_rows
from .training import (
    baseline_predictions, scores, tokens, train_transform, train, model_predictions, _load, evaluate,
    _example)
from .spikes import training_order, batch_extremes, gross_batches, spike_text
from .experiment import run, ordered, scale_of, loss_curve, unscored, scoring_note
from .conclusions import wide, conclusion, gross_outliers, gross_error_text
from .figures import (
    title_tag, PUBLISHED_STYLES, _SPARE_STYLES, published_styles, plot_methods, plot_record,
    plot_per_variable, plot_learning_curves)

plan.register("16", paper_trainings)  # the whole-paper plan lists it
