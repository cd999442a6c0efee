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

from ..compendium import report
from .. import runtime
from ..audio import fbank, from_spectrograms
from ..images import mae_reconstruction
from ..config import RoMAEConfig, TrainConfig, check_profile, size
from ..data import audioset, esc50, librispeech
from ..data.catalog import Need, require
from ..model import RoMAEForPreTraining, prediction_config
from ..compendium.plan import Training
from ..recipe import pretrain_finetune
from ..compendium.reference import paper_values, peer_values
from ..compendium.report import difference, difference_text, loss_flags, record, save_table, scale

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


def spectrograms(waves, chunk: int = 64, **kw) -> list[torch.Tensor]:
    """fbank of each waveform (a 2-D array of equal-length clips is done in batches of `chunk`)."""
    if isinstance(waves, np.ndarray) and waves.ndim == 2:
        return [s for i in range(0, len(waves), chunk) for s in fbank(torch.from_numpy(waves[i:i + chunk]), **kw)]
    return [fbank(torch.as_tensor(w), **kw) for w in waves]


DRY_CLIPS = 30  # a dry run: ESC-50 clips read (6 per fold) or generated, and clips of each pre-training set


def dry_waves(n: int, seconds, labels=None, seed: int = 0) -> list[np.ndarray]:
    """n generated 16-kHz waveforms of `seconds` each (one number, or one per clip), a tone per label in noise: a
    dry run's stand-in for clips it does not have."""
    rng, rate = np.random.default_rng(seed), esc50.SAMPLE_RATE
    labels = np.zeros(n, np.int64) if labels is None else labels
    out = []
    for s, y in zip(np.broadcast_to(seconds, n), labels):
        t = np.arange(int(s * rate)) / rate
        tone = 0.3 * np.sin(2 * np.pi * (200 + 60 * y) * t)
        out.append((tone + 0.1 * rng.standard_normal(len(t))).astype(np.float32))
    return out


def dry_clips(n: int = DRY_CLIPS, seed: int = 0) -> dict:
    """A dry run's stand-in for the official ESC-50 clips (`esc50.load`'s keys): n generated 5-s clips at 16 kHz,
    spread over the 50 classes, in folds 1-5 in turn; source "generated", path `runtime.DRY_LABEL`."""
    labels = np.arange(n, dtype=np.int64) * ESC50_CLASSES // n
    folds = np.arange(n, dtype=np.int64) % ESC50_FOLDS + 1
    classes = [f"dry class {k}" for k in range(ESC50_CLASSES)]
    meta = pd.DataFrame(dict(filename=[f"{f}-dry{i}-A-{y}.wav" for i, (f, y) in enumerate(zip(folds, labels))],
                             fold=folds, target=labels, category=[classes[y] for y in labels]))
    return dict(waves=np.stack(dry_waves(n, 5.0, labels, seed)), labels=labels, folds=folds, classes=classes,
                meta=meta, source="generated", path=runtime.DRY_LABEL, sample_rate=esc50.SAMPLE_RATE)


def load_clips(cfg: ESC50Run, root=None, progress: bool | None = None) -> dict:
    """The run's ESC-50 clips (`esc50.load`; the 5-fold protocol: the official 2,000); in a dry run at most
    DRY_CLIPS of them (the first of each fold), or without them generated clips of their shapes (`dry_clips`)."""
    source = "official" if cfg.protocol == "5fold" else "auto"
    dry = runtime.dry_run()
    if dry and not (esc50.present(root, "official") or source == "auto" and esc50.present(root, "subset")):
        return dry_clips()
    return esc50.load(root, source=source, progress=cfg.progress if progress is None else progress,
                      per_fold=DRY_CLIPS // ESC50_FOLDS if dry else None)


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


def find(cfg: ESC50Run, root=None) -> tuple[bool, str]:
    """(available, message) for the run's ESC-50 clips and pre-training data."""
    try:
        d = esc50.folder(root)
        if cfg.protocol == "5fold" and esc50._official(d) is None:
            return False, (f"the 5-fold protocol needs all 2,000 ESC-50 clips: pass download=True to "
                           f"romae.data.esc50.load or unpack {esc50.URL} into {d}")
        if not (d / "esc50.csv").is_file() and esc50._official(d) is None:
            return False, f"no ESC-50 clips under {d}: pass download=True to romae.data.esc50.load ({esc50.URL})"
        if "audioset" in cfg.pretrain_sources and not cfg.audioset_dir:
            return False, (f"AudioSet-20k pre-training needs your folder of its clips (audioset_dir=); AudioSet ships "
                           f"no audio: {audioset.HF}")
        if "librispeech" in cfg.pretrain_sources:
            for s in cfg.librispeech_splits:
                librispeech.utterances(s, root)
    except FileNotFoundError as e:
        return False, str(e)
    return True, ""


def _splits(d: dict, cfg: ESC50Run) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """[(name, train indices, test indices)]: the five official folds, or one stratified split."""
    labels, folds = d["labels"], d["folds"]
    if cfg.protocol == "5fold":
        return [(f"fold {k}", np.flatnonzero(folds != k), np.flatnonzero(folds == k)) for k in range(1, 6)]
    if cfg.protocol == "cv":
        from sklearn.model_selection import StratifiedGroupKFold

        counts = np.bincount(labels)
        if counts[counts > 0].min() < cfg.cv_folds:
            raise ValueError(f"cv_folds={cfg.cv_folds} needs at least {cfg.cv_folds} clips of every class; the "
                             f"rarest class here has {counts[counts > 0].min()}")
        groups = source_recordings(d["meta"])
        folds_ = StratifiedGroupKFold(cfg.cv_folds, shuffle=True, random_state=0).split(
            np.zeros(len(labels)), labels, groups)
        out = [(f"cv fold {k + 1} of {cfg.cv_folds}", np.sort(tr), np.sort(te)) for k, (tr, te) in enumerate(folds_)]
        for name, tr, te in out:  # the point of grouping: no recording on both sides
            shared = set(groups[tr]) & set(groups[te])
            if shared:
                raise AssertionError(f"{name}: source recordings on both sides of the split: {sorted(shared)[:5]}")
        if cfg.max_clips is not None:  # smoke: a few clips of each class
            keep = lambda idx: np.concatenate([idx[labels[idx] == c][:cfg.max_clips] for c in np.unique(labels[idx])])  # noqa: E731
            out = [(n, keep(tr), keep(te)) for n, tr, te in out]
        return out
    rng = np.random.default_rng(0)
    test = []
    for c in np.unique(labels):
        pool = np.flatnonzero((labels == c) & (folds == cfg.split_fold))
        test.extend(rng.choice(pool, min(cfg.test_per_class, len(pool)), replace=False).tolist())
    test = np.sort(np.array(test, dtype=np.int64))
    # the shared subset is fold 4 plus 14 other clips: all of them train; with the official 2,000 clips the
    # same scale is kept by training on the rest of that fold only
    pool = np.arange(len(labels)) if d["source"] != "official" else np.flatnonzero(folds == cfg.split_fold)
    train = np.setdiff1d(pool, test)
    if cfg.max_clips is not None:  # smoke: a few clips of each class
        keep = lambda idx: np.concatenate([idx[labels[idx] == c][:cfg.max_clips] for c in np.unique(labels[idx])])  # noqa: E731
        train, test = keep(train), keep(test)
    return [(f"stratified split of fold {cfg.split_fold} ({cfg.test_per_class} test clips per class)", train, test)]


def source_recordings(meta: pd.DataFrame) -> np.ndarray:
    """The source recording of every clip (ESC-50's `src_file`; clips cut from one recording share it), read from
    the metadata, else from the file name `{fold}-{src_file}-{take}-{target}.wav`."""
    if "src_file" in meta and meta["src_file"].notna().all():
        return meta["src_file"].astype(str).to_numpy()
    names = meta["filename"].astype(str)
    parts = names.str.split("-")
    if not (parts.str.len() >= 4).all():
        bad = names[parts.str.len() < 4].iloc[0]
        raise ValueError(f"cannot tell the source recording of {bad!r}: no src_file column and not an ESC-50 name "
                         "'{fold}-{src_file}-{take}-{target}.wav'")
    return parts.str[1].to_numpy()


def _pretrain_set(cfg: ESC50Run, source: str, root) -> tuple[object, dict]:
    """(GridDataset, key) of an external pre-training set, cropped or padded to cfg.pretrain_frames; each
    clip becomes its fbank as it is read (float16), so the waveforms are never all in memory."""
    def features(w):  # cropped to the target length here; padded (after the statistics) by from_spectrograms
        return fbank(torch.from_numpy(np.ascontiguousarray(w)), num_mel_bins=cfg.mel_bins)[:cfg.pretrain_frames].half()

    dry = DRY_CLIPS if runtime.dry_run() else None  # a dry run: a few clips, generated where the data is absent
    here = (bool(cfg.audioset_dir) and audioset.meta_present(root) if source == "audioset" else
            all(librispeech.present(s, root) for s in cfg.librispeech_splits))
    if dry and not here:  # AudioSet's 10-s clips; LibriSpeech's utterances of 2-16 s
        seconds = 10.0 if source == "audioset" else np.random.default_rng(1).uniform(2, 16, dry)
        specs, key = [features(w) for w in dry_waves(dry, seconds, seed=1)], dict(generated=dry)
    elif source == "audioset":
        a = audioset.load(cfg.audioset_dir, root, progress=cfg.progress, features=features, max_clips=dry)
        specs, key = a["features"], dict(ids=len(a["ids"]), found=a["found"])
    else:
        specs, ids = [], []
        for s in cfg.librispeech_splits:
            d = librispeech.load(s, root, progress=cfg.progress, features=features, max_utterances=dry)
            train, _ = librispeech.split_utterances(d["ids"])  # the paper's 70/30 split
            specs += [d["features"][i] for i in train]
            ids += [d["ids"][i] for i in train]
        key = dict(splits=cfg.librispeech_splits, n=len(ids))
    data = from_spectrograms(specs, patch_size=cfg.patch, target_frames=cfg.pretrain_frames)
    return data, dict(source=source, frames=cfg.pretrain_frames, **key)


def setting(cfg: ESC50Run, source: str, pretrained: bool, subset: bool) -> str:
    """The summary's setting: Table 3's row name for the paper's data, else labelled as the subset."""
    name = f"RoMAE-{cfg.encoder}"
    if subset:
        how = f"MAE pre-training on {SOURCES[source]}" if pretrained else "from scratch"
        return f"{SUBSET}, {name}, {how}"
    return f"{name}, {SOURCES[source]} pre-training" if pretrained else f"{name}, from scratch"


def run(profile: str = "smoke", data_root=None, reports_dir=None, cache_dir=None, refresh: bool = False,
        **overrides) -> dict:
    """Pre-train (per source), fine-tune per split and seed (and from scratch); record accuracy (%)."""
    cfg = config(profile, **overrides)
    if not runtime.dry_run():  # a dry run without the data trains on generated clips (`load_clips`)
        require(data_needs(profile, audioset_dir=cfg.audioset_dir or ""), data_root)  # DataMissing, fetch command
    t0 = time.perf_counter()
    d = load_clips(cfg, data_root)
    specs = spectrograms(d["waves"], num_mel_bins=cfg.mel_bins)
    subset = d["source"] not in ("official", "generated") or cfg.protocol != "5fold"
    model_cfg = cfg.model_config()
    rows, results, views = [], {}, {}
    external = {s: _pretrain_set(cfg, s, data_root) for s in cfg.pretrain_sources if s != "esc50"}  # once for all folds
    generated = [SOURCES[s] for s, (_, k) in external.items() if "generated" in k]
    generated += ["ESC-50"] if d["source"] == "generated" else []
    splits = _splits(d, cfg)
    for split_name, tr, te in splits[:1] if runtime.dry_run() else splits:  # a dry run: the first fold
        train = from_spectrograms([specs[i] for i in tr], d["labels"][tr], patch_size=cfg.patch, classes=d["classes"])
        test = from_spectrograms([specs[i] for i in te], d["labels"][te], patch_size=cfg.patch, classes=d["classes"],
                                 mean=float(train.mean), std=float(train.std), target_frames=train.grids.shape[2])
        views[split_name] = dict(train=train, test=test, train_idx=tr, test_idx=te)
        esc_key = dict(esc50=d["source"], clips=[d["meta"].filename[i] for i in tr], fbank=dict(bins=cfg.mel_bins))
        for source in cfg.pretrain_sources:
            pre_data, pre_key = (None, esc_key) if source == "esc50" else external[source]
            for seed in runtime.dry_seeds(cfg.seeds):
                for pretrained in (True, False) if cfg.from_scratch else (True,):
                    if not pretrained and source != cfg.pretrain_sources[0]:
                        continue  # one from-scratch control per split and seed
                    res = pretrain_finetune(
                        f"esc50_{source if pretrained else 'scratch'}", train, test, model_cfg,
                        finetune=cfg.finetune_config(len(train)),
                        pretrain=cfg.pretrain_config(len(train if pre_data is None else pre_data)) if pretrained else None,
                        pretrain_data=pre_data, key=pre_key if pretrained else esc_key,
                        finetune_key=dict(esc50_train=esc_key["clips"]) if pre_data is not None else None,
                        n_outputs=len(d["classes"]), seed=seed, head_overrides=dict(label_smoothing=cfg.label_smoothing),
                        eval_batch=64, cache_dir=cache_dir, refresh=refresh, checkpoints=profile != "smoke",
                        profile=profile)
                    label = setting(cfg, source, pretrained, subset)
                    results[(label, split_name, seed)] = res
                    rows.append(dict(setting=label, split=split_name, seed=seed, pretrain_source=source if pretrained else None,
                                     accuracy_pct=100 * res["metrics"]["accuracy"],
                                     macro_f1=res["metrics"]["macro_f1"], n_train=len(train), n_test=len(test),
                                     pretrain_steps=res["steps"]["pretrain"], finetune_steps=res["steps"]["finetune"],
                                     pretrain_seconds=res["seconds"]["pretrain"], finetune_seconds=res["seconds"]["finetune"]))
    per_run = pd.DataFrame(rows)
    effect = pretraining_effect(per_run)
    n_splits, flags = per_run.split.nunique(), {}
    for label, f in per_run.groupby("setting", sort=False):  # written by the main process only
        per_seed = f.groupby("seed").accuracy_pct.mean()  # mean over folds, per seed
        per_split = f.groupby("split", sort=False).accuracy_pct.mean()  # mean over seeds, per fold
        # the spread: over seeds when there are several, else over the folds (cross-validation with one seed)
        spread = (per_seed.std(ddof=1) if len(per_seed) > 1 else per_split.std(ddof=1) if len(per_split) > 1
                  else None)
        verdicts = "; ".join(f"{r.pretrained} minus {r.scratch}: {r.text}" for r in effect.itertuples()
                             if label in (r.pretrained, r.scratch))
        runs = [results[(label, r.split, r.seed)] for r in f.itertuples()]
        curves = training_losses(runs)
        flags[label] = "; ".join(x for x in map(loss_flags, curves) if x)  # as `record` notes it
        record(EXPERIMENT, label, "accuracy_pct", float(per_seed.mean()),
               ours_std=None if spread is None else float(spread), n_seeds=len(per_seed),
               profile=profile, scale=run_scale(cfg, d, f, n_splits, external), losses=curves,
               note=_note(cfg, d, f, subset, generated) + (f"; {verdicts}" if verdicts else ""),
               reports_dir=reports_dir)
    table = comparison_table(per_run, profile, subset)
    save_table(table, EXPERIMENT, reports_dir)
    save_table(per_run, f"{EXPERIMENT}_per_run", reports_dir)
    return dict(config=cfg, profile=profile, subset=subset, found=True, message="", data=d, views=views,
                results=results, per_run=per_run, table=table, pretraining_effect=effect, training_flags=flags,
                seconds=time.perf_counter() - t0)


def _clips_text(n_train: int, n_test: int, n_splits: int, protocol: str) -> str:
    return f"{n_train} train / {n_test} test clips x {n_splits} {'split(s)' if protocol == 'split' else 'fold(s)'}"


def run_scale(cfg: ESC50Run, d: dict, f: pd.DataFrame, n_splits: int, external: dict) -> dict:
    """A row's scale (`report.scale`): the clips it was fine-tuned and tested on and what it was pre-trained on,
    model, epochs (pre-training + fine-tuning), seeds and sample rate, beside the paper's (the `paper` profile,
    Table 11, and SSAST's 5-fold protocol on ESC-50's 2,000 clips: 1,600 train / 400 test per fold). A row
    pre-trained on the ESC-50 clips is set beside the paper's AudioSet-20k pre-training (Table 3's best row)."""
    paper, r = PROFILES["paper"], f.iloc[0]
    source = r.pretrain_source if isinstance(r.pretrain_source, str) else None
    pre_n = None if source is None else len(external[source][0]) if source in external else int(r.n_train)
    paper_source = source if source in PAPER_CLIPS and source != "esc50" else "audioset"
    ours = _clips_text(int(r.n_train), int(r.n_test), n_splits, cfg.protocol)
    theirs = _clips_text(PAPER_CLIPS["esc50"], 2_000 // ESC50_FOLDS, ESC50_FOLDS, paper.protocol)
    if source is not None:
        ours += f"; pre-training {pre_n} clips ({SOURCES[source]})"
        theirs += f"; pre-training {PAPER_CLIPS[paper_source]} clips ({SOURCES[paper_source]})"
    return scale(dataset=("generated clips (dry run)" if d["source"] == "generated" else "ESC-50", "ESC-50"),
                 data=(ours, theirs), resolution=(f"{d['sample_rate']} Hz", f"{esc50.SAMPLE_RATE} Hz"),  # SSAST: 16 kHz
                 model=(f"RoMAE-{cfg.encoder}", f"RoMAE-{paper.encoder}"),
                 epochs=(f"{cfg.pretrain_epochs if source else 0} + {cfg.finetune_epochs}",  # from scratch: 0 + ...
                         f"{paper.pretrain_epochs if source else 0} + {paper.finetune_epochs}"),
                 seeds=(f.seed.nunique(), None))  # the paper does not say how many seeds


training_losses = report.training_losses  # the loss curves of pretrain_finetune results, for record(losses=)


def pretraining_effect(per_run: pd.DataFrame, margin: float = MARGIN) -> pd.DataFrame:
    """Pre-trained minus from scratch, paired by (fold, seed) -- each fold of each seed is one replicate, trained
    and tested on the same clips in both arms -- with its uncertainty and verdict (`report.difference`): one row
    per pre-trained setting that has a from-scratch control."""
    cols = ["pretrained", "scratch", "difference", "se", "low", "high", "n_pairs", "margin", "verdict", "text"]
    scratch = [s for s in per_run.setting.unique() if s.endswith("from scratch")]
    if not scratch:
        return pd.DataFrame(columns=cols)
    acc = per_run.groupby(["setting", "split", "seed"], sort=False).accuracy_pct.mean()
    b = acc[scratch[0]]
    rows = []
    for a_name in (s for s in per_run.setting.unique() if s not in scratch):
        a = acc[a_name]
        pairs = a.index.intersection(b.index)  # (fold, seed)
        res = difference(a[pairs].to_numpy(), b[pairs].to_numpy(), margin, names=("pre-trained", "from scratch"))
        rows.append(dict(pretrained=a_name, scratch=scratch[0], difference=res["diff"], se=res["se"], low=res["low"],
                         high=res["high"], n_pairs=res["n"], margin=margin, verdict=res["verdict"],
                         text=difference_text(res, "points", replicates="fold x seed pairs")))
    return pd.DataFrame(rows, columns=cols)


def _note(cfg: ESC50Run, d: dict, f: pd.DataFrame, subset: bool, generated=()) -> str:
    r = f.iloc[0]
    where = ("ESC-50, official 5-fold cross-validation, " if not subset else
             f"{SUBSET}: ESC-50 shared subset ({len(d['labels'])} of 2,000 clips, 16 kHz), " if d["source"] != "official"
             else f"{SUBSET}: ESC-50 official clips of fold {cfg.split_fold} only (the shared subset's scale), ")
    pre = (f"pre-trained {cfg.pretrain_epochs} epochs ({r.pretrain_steps} steps, mask {cfg.mask_ratio}, norm-pix, "
           f"no [CLS]), " if pd.notna(r.pretrain_steps) else "from scratch, ")
    n_splits = f.split.nunique()
    if cfg.protocol == "cv" and n_splits > 1:
        per_split = f.groupby("split", sort=False).accuracy_pct.mean()
        spread = "std over seeds" if f.seed.nunique() > 1 else "ours_std: std over folds"
        split = (f"mean over {n_splits} cross-validation folds grouped by source recording ({spread}; fold accuracies "
                 f"{', '.join(f'{v:.1f}' for v in per_split)} %), {f.n_train.min()}-{f.n_train.max()} train / "
                 f"{f.n_test.min()}-{f.n_test.max()} test clips per fold")
    else:
        split = f"{f.split.iloc[0]}: {r.n_train} train / {r.n_test} test clips"
    return (where + f"{split}; RoMAE-{cfg.encoder}, 128-bin "
            f"Kaldi fbank, 16x16 patches; " + pre + f"fine-tuned {cfg.finetune_epochs} epochs ({r.finetune_steps} "
            f"steps), mean head; {f.seed.nunique()} seed(s)"
            + ("; dry run: the first fold only" if runtime.dry_run() and cfg.protocol == "5fold" else "")
            + (f"; {', '.join(generated)}: {runtime.DRY_LABEL}" if generated else ""))


def comparison_table(per_run: pd.DataFrame, profile: str, subset: bool) -> pd.DataFrame:
    """Table 3 and SSAST's from-scratch anchor as published, ours in a separate column."""
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    out = peers[["model", "value", "source"]].rename(columns={"value": "ESC-50 accuracy % (published)"})
    col = f"{'subset' if subset else 'ESC-50'} accuracy % (ours, {profile})"
    g = per_run.groupby(["setting", "seed"], sort=False).accuracy_pct.mean().groupby(level=0, sort=False)
    ours = pd.DataFrame({"model": [f"{s} (ours)" for s in g.groups], col: g.mean().to_numpy(),
                         "std over seeds": g.std(ddof=1).to_numpy(), "seeds": g.size().to_numpy(),
                         "source": "this run"})
    return pd.concat([out, ours], ignore_index=True)


# ----------------------------------------------------------------------------- figures

def title_tag(profile: str) -> str:
    """'(quick profile, reduced)' for a figure title; '(paper profile)' at the paper's settings."""
    return f"({report.title_tag(profile)})"


def plot_accuracy(res: dict):
    """Our accuracy per setting beside the published values as horizontal lines: the paper's RoMAE-small rows
    (Table 3) and the peers (SSAST after AudioSet-20k / LibriSpeech as the paper quotes them, SSAST from scratch
    from its own paper). With several folds the bar is the mean over folds and a dot each fold's accuracy (mean
    over seeds), so the fold spread is seen; with one split, the mean over seeds and a dot per seed."""
    f, profile = res["per_run"], res["profile"]
    by = "split" if f.split.nunique() > 1 else "seed"
    acc = f.groupby(["setting", by], sort=False).accuracy_pct.mean()
    unit = "fold" if by == "split" else "seed"
    names = list(dict.fromkeys(acc.index.get_level_values(0)))
    fig, ax = plt.subplots(figsize=(9, 4.8), layout="constrained")
    x = np.arange(len(names))
    ax.bar(x, [acc[n].mean() for n in names], 0.55, color="tab:blue", alpha=0.35, label=f"ours, mean over {unit}s")
    for i, n in enumerate(names):
        ax.plot(np.full(len(acc[n]), i), acc[n].to_numpy(), "o", color="tab:blue", label=f"ours, one {unit}" if i == 0 else None)
        if len(acc[n]) > 1:
            ax.errorbar(i + 0.32, acc[n].mean(), yerr=acc[n].std(ddof=1), fmt="none", ecolor="tab:blue", capsize=3,
                        label=f"ours, +-1 std over {unit}s" if i == 0 else None)
    published = [(f"paper: {r['setting']}", r["paper"]) for r in paper_values() if r["experiment"] == EXPERIMENT]
    published += [(f"{r['model']} (published)", r["value"]) for r in peer_values(EXPERIMENT)]
    styles = ["-", "--", "-.", ":", (0, (5, 1))]
    for k, (name, v) in enumerate(published):
        ax.axhline(v, color="k" if name.startswith("paper") else f"C{k + 1}", ls=styles[k % len(styles)], lw=1.2,
                   label=f"{name}: {v:g} %")
    ax.axhline(100 / len(res["data"]["classes"]), color="0.5", ls=":", lw=1, label="chance")
    ax.set_xticks(x, [n.replace(", ", ",\n") for n in names], fontsize=7)
    ax.set(ylabel="accuracy (%)", ylim=(0, 100))
    what = ("ours on the subset, no external pre-training: not comparable with the published rows" if res["subset"]
            else "ESC-50, 5-fold cross-validation")
    ax.set_title(f"Table 3: ESC-50 accuracy {title_tag(profile)}\n{what}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def reconstruct(model: RoMAEForPreTraining, data, idx, seed: int = 0) -> dict:
    """MAE's picture (`romae.images.mae_reconstruction`) of clips idx: {original, masked, prediction, pasted}
    log-Mel spectrograms [B, T, F] (NaN where nothing is shown) and the mask [B, N]."""
    r = mae_reconstruction(model, data, idx, seed)
    return {k: v if k == "mask" else v[:, 0] for k, v in r.items()}


def pretrained_model(res: dict, label: str, split: str, seed: int) -> RoMAEForPreTraining:
    model = RoMAEForPreTraining(res["config"].model_config())
    model.load_state_dict(res["results"][(label, split, seed)]["pretrained_state"])
    return model.eval()


def plot_reconstruction(res: dict, label: str, split: str, seed: int, i: int = 0):
    """One test clip: its spectrogram, the 75 % masked input, the prediction pasted among visible patches."""
    data = res["views"][split]["test"]
    r = reconstruct(pretrained_model(res, label, split, seed), data, [i])
    fig, axes = plt.subplots(3, 1, figsize=(9, 6.6), sharex=True)
    titles = ("log-Mel spectrogram", "masked input (75 % of the 16x16 patches hidden)",
              "reconstruction: predicted patches among the visible ones (each with the original patch's mean/std)")
    vmin, vmax = np.nanpercentile(r["original"][0].numpy(), [1, 99])
    for ax, key, title in zip(axes, ("original", "masked", "pasted"), titles):
        ax.imshow(r[key][0].T.numpy(), origin="lower", aspect="auto", cmap="magma", vmin=vmin, vmax=vmax,
                  interpolation="nearest")
        ax.set(title=title, ylabel="Mel bin")
    axes[-1].set(xlabel="frame (10 ms)")
    name = res["data"]["classes"][int(data.labels[i])]
    fig.suptitle(f"{label}, seed {seed}: test clip of class '{name}' {title_tag(res['profile'])}", fontsize=9)
    fig.tight_layout()
    return fig


def plot_per_class(res: dict, label: str):
    """Accuracy per class on the test clips, summed over splits and seeds of one setting."""
    correct = np.zeros(len(res["data"]["classes"]))
    total = np.zeros_like(correct)
    for (lab, split, _), r in res["results"].items():
        if lab != label:
            continue
        y = res["views"][split]["test"].labels.numpy()
        p = r["outputs"].argmax(-1).numpy()
        np.add.at(total, y, 1)
        np.add.at(correct, y, (p == y).astype(float))
    acc = np.divide(correct, total, out=np.full_like(correct, np.nan), where=total > 0)
    order = np.argsort(-np.nan_to_num(acc, nan=-1))
    fig, ax = plt.subplots(figsize=(12, 3.4))
    ax.bar(range(len(order)), acc[order], color="tab:blue")
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels([res["data"]["classes"][k] for k in order], rotation=90, fontsize=6)
    ax.set(ylabel="accuracy", ylim=(0, 1),
           title=f"per-class accuracy on the test clips {title_tag(res['profile'])}: {label}")
    fig.tight_layout()
    return fig


def main(argv=None) -> None:
    """`accelerate launch -m romae.experiments.esc50 --profile paper --audioset-dir /data/as20k --processes 4`"""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--profile", default="paper")
    p.add_argument("--data-root", default=None)
    p.add_argument("--audioset-dir", default=None)
    p.add_argument("--sources", nargs="+", default=None, help="audioset librispeech esc50")
    p.add_argument("--librispeech-splits", nargs="+", default=None)
    p.add_argument("--processes", type=int, default=1)
    a = p.parse_args(argv)
    over = dict(processes=a.processes, audioset_dir=a.audioset_dir)
    if a.sources:
        over["pretrain_sources"] = tuple(a.sources)
    if a.librispeech_splits:
        over["librispeech_splits"] = tuple(a.librispeech_splits)
    res = run(a.profile, data_root=a.data_root, **over)
    print(res["message"] or res["table"].to_string())


if __name__ == "__main__":
    main()
