"""The clips and the pre-training recordings: loaded or generated, spectrograms, folds and splits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ... import runtime
from ...audio import fbank, from_spectrograms
from ...data import audioset, esc50, librispeech

from .profiles import ESC50Run, ESC50_CLASSES, ESC50_FOLDS


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
