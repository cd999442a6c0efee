"""ESC-50 audio classification (Sec. 5.3, App. D.2, Table 3): the first public code of RoMAE on audio.

Clips become SSAST's features (`romae.audio.fbank`: Kaldi-compatible 128-bin log-Mel, 25 ms Hann window,
10 ms shift, no dither), padded with zeros to a multiple of 16 frames (ESC-50's 498 frames -> 512, as
SSAST), normalised with the training data's mean and std, and cut into 16 x 16 patches on (time,
frequency) with 2-D integer positions, as SSAST's patch model. RoMAE-small is pre-trained **without [CLS]**
(Sec. 5.3) as a masked autoencoder (75 %, per-patch normalised targets), then fine-tuned with a mean head
through the shared recipe `romae.recipe.pretrain_finetune`, with Table 11's hyper-parameters.

Profiles:
- `paper`: pre-train on AudioSet-20k (a user's folder of clips, `romae.data.audioset`) and on LibriSpeech
  (`romae.data.librispeech`, 70/30 split), 150 epochs; fine-tune on ESC-50 with the official 5-fold
  cross-validation (SSAST's protocol; assumed, the paper does not state it), 50 epochs; accuracy = mean
  over folds. Each pre-training is done once and fine-tuned five times. Commands in notebook 11.
- `quick`: the shared subset (414 clips, all 50 classes), labelled "subset, no external pre-training": 4-fold
  cross-validation stratified by class and **grouped by source recording** (`src_file`: ESC-50 cuts several
  clips from one recording, and the official folds keep them together; a split that separates them leaks the
  recording into training), so every clip is tested once; MAE pre-training on each fold's training clips only,
  against the same classifier from scratch; the accuracy is the mean over the folds, its spread the std over
  folds. SSAST trained from scratch (41.9 %, official 5 folds of 2,000 clips) is the nearest anchor.
- `smoke`: seconds.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ...compendium import report
from ... import runtime
from ...audio import fbank, from_spectrograms
from ...images import mae_reconstruction
from ...config import RoMAEConfig, TrainConfig, check_profile, size
from ...data import audioset, esc50, librispeech
from ...data.catalog import Need, require
from ...model import RoMAEForPreTraining, prediction_config
from ...compendium.plan import Training
from ...compendium.kept import pretrain_finetune_kept
from ...compendium.reference import paper_values, peer_values
from ...compendium.report import difference, difference_text, loss_flags, record, save_table, scale

# the experiment's definitions, moved verbatim into one module per job, importable from here as before
from .profiles import (
    EXPERIMENT, SUBSET, SOURCES, MARGIN, ESC50Run, PROFILES, config, PAPER_CLIPS, ESC50_CLASSES,
    ESC50_FRAMES, ESC50_FOLDS, paper_trainings, data_needs, setting)
from .clips import (
    spectrograms, DRY_CLIPS, dry_waves, dry_clips, load_clips, find, _splits, source_recordings,
    _pretrain_set)
from .experiment import (
    run, _clips_text, run_scale, training_losses, pretraining_effect, _note, comparison_table, main)
from .figures import (
    title_tag, plot_accuracy, reconstruct, pretrained_model, plot_reconstruction, plot_per_class)


from ...compendium import plan as _plan  # noqa: E402 (registered once defined)

_plan.register("11", paper_trainings, split_batch=True)  # the whole-paper plan lists it
