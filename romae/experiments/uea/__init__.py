"""UEA irregular classification (Sec. 5.4, Table 6): 30 % of every series' time steps dropped.

Protocol (ContiFormer's, which the authors copied): the official TRAIN/TEST `.ts` files; 30 % of each
series' time steps removed once, when the data is built, with one fixed seed, for the training and the
test file alike; the kept steps keep their true time index as position (1-D). One token per kept
step holding all channels (`romae.from_sequences`). RoMAE-tiny with [CLS] and a tiny-shallow decoder,
pre-trained as an MAE (Table 13: 400 epochs, mask 75 %, AdamW (0.9, 0.95), wd 0.05, lr 3e-4, batch
64, clip 1, warm-up 10 %), then fine-tuned per dataset (Table 12, SGD) through the shared recipe
`romae.recipe.pretrain_finetune`; seeds 69, 84, 1066; accuracy and macro-F1 on the TEST file after
the last epoch. The same classifier trained from scratch is the control for the paper's claim that
pre-training helps.

Any UEA/UCR classification dataset under `<data>/uea/<Name>/` runs; by default the notebook runs Table 6's
five and every other one it finds. Datasets outside Table 12 get `DEFAULT_FINETUNE` (ours, said in every
note). In `quick`, a dataset outside Table 6 is fitted into about 15 minutes on the reference 2-core CPU
(`plan`: fewer seeds, capped steps, and for very long series fewer tokens, in that order; each reduction
is written in the rows' notes). The plan is computed from the analytic cost model of `romae.compendium.cost`, so it
is the same on every machine; the time it will take on this one is measured and printed before training.

The notebook's parameters `drop`, `encoder`, `labels_per_class` and `dropout_at` change the protocol
(`overrides`, checked before a kernel starts); each dataset's protocol, and why it is that one, is printed
first (`protocol`). Beside RoMAE, every dataset is scored with simple standard baselines on exactly the test
series RoMAE is scored on (`baseline_scores`: 1-nearest-neighbour DTW, MiniRocket on the kept steps and MiniRocket
on the kept steps regridded by their times, `romae.baselines`, with all labels and with the label-scarce pair's
labelled series; the majority class), recorded and put into the table.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ... import baselines, metrics, runtime
from ...compendium import cost, report, terminal
from ...builders import from_sequences
from ...config import SIZES, RoMAEConfig, TrainConfig, as_list, check_profile, size
from ...data import files, uea
from ...data.catalog import Need, require
from ...compendium.plan import Training
from ...model import RoMAEForPrediction, RoMAEForPreTraining, prediction_config
from ...compendium.kept import pretrain_finetune_kept
from ...recipe import DROP_PATH_RULE
from ...compendium.reference import peer_values
from ...compendium.report import device_label, record, save_table

# the experiment's definitions, moved verbatim into one module per job, importable from here as before
from .profiles import (
    EXPERIMENT, DROP_SEED, QUICK_MINUTES, PLAN_MINUTES, MIN_STEPS, THIN, EVAL_BATCH, Finetune, TABLE12,
    DEFAULT_FINETUNE, PAPER_STATS, UEARun, PROFILES, resolve_datasets, DROPOUT_AT, OVERRIDES, overrides,
    config, _pct, protocol, data_needs)
from .data import (
    find, drop_steps, thin, _subset, _classification, build, dry_raw, stats, labelled_index, labelled_subset)
from .planning import (
    classifier_args, classifier_config, paper_trainings, _steps, schedule, reference_seconds, _round_down,
    plan, _describe, describe, measured_estimate)
from .standard_baselines import BASELINE_WINDOW, baseline_scores, BASELINE_SETTING, record_baselines
from .tables import (
    reading, spread, DIFF_METRIC, TRIVIAL, scale_of, loss_curves, majority_error, differences,
    pretraining_differences, comparison_table)
from .experiment import run_dataset, _note, run
from .figures import plot_example, title_tag, seed_colours, plot_accuracy, plot_learning_curves


from ...compendium import plan as _plan  # noqa: E402 (registered once defined)

_plan.register("12", paper_trainings)  # the whole-paper plan lists it
