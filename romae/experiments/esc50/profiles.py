"""The shared protocol: Table 11's settings, the profiles and the paper's sizes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...config import RoMAEConfig, TrainConfig, check_profile, size
from ...data import audioset
from ...data.catalog import Need
from ...model import prediction_config
from ...compendium.plan import Training


EXPERIMENT = "table3_esc50"


SUBSET = "subset, no external pre-training"


SOURCES = {"audioset": "AudioSet-20k", "librispeech": "LibriSpeech", "esc50": "the ESC-50 training clips"}


MARGIN = 2.0  # accuracy points: the smallest effect of pre-training that matters (Table 3's tolerance, ours)


@dataclass(frozen=True)
class ESC50Run:
    """One profile. Defaults = the `paper` profile (Sec. 5.3, App. D.2, Table 11)."""

    pretrain_sources: tuple[str, ...] = ("audioset", "librispeech")  # Table 3's two rows; "esc50": its own clips
    audioset_dir: str | None = None  # the user's AudioSet-20k clips (named by YouTube id)
    librispeech_splits: tuple[str, ...] = ("train-clean-100",)  # which splits the paper used is not stated
    protocol: str = "5fold"  # 5fold: ESC-50's official folds (SSAST's protocol) | split: inside the clips found |
    #                          cv: k-fold cross-validation over every clip found (each clip tested once), stratified
    #                          by class and grouped by source recording (clips of one recording share a fold)
    split_fold: int = 4  # protocol "split": the fold the test clips come from (the shared subset holds fold 4)
    test_per_class: int = 2  # protocol "split"
    cv_folds: int = 4  # protocol "cv": folds (each class needs at least this many clips)
    encoder: str = "small"  # Sec. 5.3
    decoder: str = "tiny-shallow"  # App. A.1 (the authors published no audio code)
    patch: int = 16  # SSAST's 16 x 16 patches
    mel_bins: int = 128
    pretrain_frames: int = 1024  # SSAST: 10.24 s for AudioSet and LibriSpeech (cropped or zero-padded)
    mask_ratio: float = 0.75
    seeds: tuple[int, ...] = (0,)
    pretrain_epochs: int = 150  # Table 11
    pretrain_batch: int = 64
    pretrain_lr: float = 5e-4
    pretrain_warmup: int = 1000
    finetune_epochs: int = 50
    finetune_batch: int = 48
    finetune_lr: float = 1e-3
    finetune_warmup: int = 50
    label_smoothing: float = 0.2  # PyTorch's epsilon = 1 - c, c = 0.8 (Table 11)
    grad_clip: float = 1.0  # global gradient-norm clip, pre-training and fine-tuning (Table 11)
    warmup_cap: float | None = None  # reduced profiles: warm-up at most this share of a run's steps
    from_scratch: bool = False  # also the same classifier without pre-training (the control)
    max_clips: int | None = None  # smoke: at most this many clips of each class and split
    processes: int = 1  # GPUs under `accelerate launch`: per-process batch = global batch / processes
    progress: bool = True

    def __post_init__(self):
        bad = [s for s in self.pretrain_sources if s not in SOURCES]
        if bad:
            raise ValueError(f"unknown pre-training sources {bad}; choose from {list(SOURCES)}")
        if self.protocol not in ("5fold", "split", "cv"):
            raise ValueError(f"protocol must be '5fold', 'split' or 'cv', got {self.protocol!r}")
        if self.cv_folds < 2:
            raise ValueError(f"cv_folds must be >= 2, got {self.cv_folds}")
        if self.pretrain_frames % self.patch or self.mel_bins % self.patch:
            raise ValueError(f"patch {self.patch} must divide pretrain_frames={self.pretrain_frames} and "
                             f"mel_bins={self.mel_bins}")
        size(self.encoder), size(self.decoder)

    def model_config(self) -> RoMAEConfig:
        return RoMAEConfig(token_dim=self.patch * self.patch, n_axes=2, encoder=size(self.encoder),
                           decoder=size(self.decoder), use_cls=False, mask_ratio=self.mask_ratio,
                           normalize_targets=True)

    def _train(self, epochs, batch, lr, betas, wd, warmup, n) -> TrainConfig:
        per = max(1, min(batch // self.processes, n))
        steps = epochs * -(-n // (per * self.processes))
        return TrainConfig(epochs=epochs, batch_size=per, lr=lr, betas=betas, weight_decay=wd, progress=self.progress,
                           grad_clip=self.grad_clip, processes=self.processes,
                           warmup_steps=warmup if self.warmup_cap is None else min(warmup, int(self.warmup_cap * steps)))

    def pretrain_config(self, n: int) -> TrainConfig:
        return self._train(self.pretrain_epochs, self.pretrain_batch, self.pretrain_lr, (0.9, 0.95), 0.05,
                           self.pretrain_warmup, n)

    def finetune_config(self, n: int) -> TrainConfig:
        return self._train(self.finetune_epochs, self.finetune_batch, self.finetune_lr, (0.9, 0.99), 0.02,
                           self.finetune_warmup, n)


PROFILES = {
    "paper": ESC50Run(),
    # the shared 414 clips on a 2-core CPU in about an hour: RoMAE-tiny-shallow, pre-trained on each fold's
    # training clips; 4-fold stratified cross-validation, so every clip is tested once (414 test predictions per
    # arm, not 100) and pre-training's effect is paired over 4 folds
    "quick": ESC50Run(pretrain_sources=("esc50",), protocol="cv", cv_folds=4, encoder="tiny-shallow", seeds=(0,),
                      pretrain_epochs=150, finetune_epochs=50, from_scratch=True, warmup_cap=0.1),
    "smoke": ESC50Run(pretrain_sources=("esc50",), protocol="split", encoder="tiny-shallow", seeds=(0,),
                      pretrain_epochs=1, finetune_epochs=1, from_scratch=True, warmup_cap=0.1, max_clips=3,
                      progress=False),
}


def config(profile: str, **overrides) -> ESC50Run:
    return dataclasses.replace(PROFILES[check_profile(profile)], **overrides)


# the plan's sizes (`paper_trainings`): ESC-50's 2,000 clips of 50 classes in 5 folds, 5 s each (498 fbank
# frames); AudioSet's balanced list (22,160 segments: an upper bound, many videos are gone); 70 % of
# LibriSpeech train-clean-100's 28,539 utterances (`librispeech.split_utterances`)
PAPER_CLIPS = dict(esc50=1_600, audioset=22_160, librispeech=19_977)


ESC50_CLASSES, ESC50_FRAMES, ESC50_FOLDS = 50, 498, 5


def paper_trainings(processes: int = 1) -> list[Training]:
    """Notebook 11's paper trainings (`romae.compendium.plan`): one pre-training per source, fine-tuned on every fold."""
    cfg = config("paper", processes=processes)
    model, bins = cfg.model_config(), cfg.mel_bins // cfg.patch
    clf = prediction_config(model, n_outputs=ESC50_CLASSES, label_smoothing=cfg.label_smoothing)
    shape = dict(runs=len(cfg.seeds), processes=processes, source="see PAPER_CLIPS")
    pre = [Training(f"{SOURCES[s]} pre-training", "pretrain", model, cfg.pretrain_config(PAPER_CLIPS[s]),
                    cfg.pretrain_frames // cfg.patch * bins, PAPER_CLIPS[s], **shape) for s in cfg.pretrain_sources]
    n, folds = PAPER_CLIPS["esc50"], ESC50_FOLDS if cfg.protocol == "5fold" else 1
    return pre + [Training(f"ESC-50 fine-tuning after {SOURCES[s]}", "finetune", clf, cfg.finetune_config(n),
                           -(-ESC50_FRAMES // cfg.patch) * bins, n, **dict(shape, runs=folds * len(cfg.seeds)))
                  for s in cfg.pretrain_sources]


def data_needs(profile: str = "smoke", audioset_dir: str = "", **_params) -> list[Need]:
    """What the notebook needs under the data root: the clips (the reduced profiles also run on the shared
    subset), and for the paper's pre-training LibriSpeech, AudioSet's lists and the user's AudioSet clips."""
    cfg = config(profile, audioset_dir=audioset_dir or None)
    needs = [Need(("esc50",), "ESC-50, all 2,000 clips") if cfg.protocol == "5fold" else
             Need(("esc50-subset", "esc50"), "ESC-50 clips (the shared subset, or the official set)")]
    if "librispeech" in cfg.pretrain_sources:
        needs += [Need((f"librispeech:{s}",), f"LibriSpeech {s}") for s in cfg.librispeech_splits]
    if "audioset" in cfg.pretrain_sources:
        needs += [Need(("audioset-meta",), "AudioSet's segment lists"),
                  Need((f"path:{cfg.audioset_dir or ''}",), "AudioSet-20k clips (your folder, audioset_dir=)",
                       how=f"AudioSet ships no audio: download the balanced set (e.g. from {audioset.HF}) and pass "
                           "audioset_dir=<folder> (make reproduce PARAMS=audioset_dir=<folder>)")]
    return needs


def setting(cfg: ESC50Run, source: str, pretrained: bool, subset: bool) -> str:
    """The summary's setting: Table 3's row name for the paper's data, else labelled as the subset."""
    name = f"RoMAE-{cfg.encoder}"
    if subset:
        how = f"MAE pre-training on {SOURCES[source]}" if pretrained else "from scratch"
        return f"{SUBSET}, {name}, {how}"
    return f"{name}, {SOURCES[source]} pre-training" if pretrained else f"{name}, from scratch"
