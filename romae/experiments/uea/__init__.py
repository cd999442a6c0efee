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
series RoMAE is scored on (`baseline_scores`: 1-nearest-neighbour DTW, `romae.baselines`, with all labels and
with the label-scarce pair's labelled series; the majority class), recorded and put into the table.
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

from .. import baselines, metrics, runtime
from ..compendium import cost, report, terminal
from ..builders import from_sequences
from ..config import SIZES, RoMAEConfig, TrainConfig, as_list, check_profile, size
from ..data import files, uea
from ..data.catalog import Need, require
from ..compendium.plan import Training
from ..model import RoMAEForPrediction, RoMAEForPreTraining, prediction_config
from ..recipe import DROP_PATH_RULE, pretrain_finetune
from ..compendium.reference import peer_values
from ..compendium.report import device_label, record, save_table

EXPERIMENT = "table6_uea"
DROP_SEED = 56789  # Kidger et al.'s generator seed for the irregular UEA drop
QUICK_MINUTES = 15  # a quick run of one dataset outside Table 6, on the reference 2-core CPU, about this long
PLAN_MINUTES = 12  # ... of which its trainings and predictions are planned at most this (cost model +- 25 %)
MIN_STEPS = {"pretrain": 200, "finetune": 100}  # a plan caps no training below this (or one epoch)
THIN = (512, 256, 128)  # tokens per series a plan may thin very long series to, in order
EVAL_BATCH = 256  # `pretrain_finetune`'s prediction batch


@dataclass(frozen=True)
class Finetune:
    """One column of Table 12 (SGD, momentum 0.9, wd 0, warm-up 10 %)."""

    lr: float
    batch_size: int
    epochs: int
    clip: float
    dropout: float  # encoder dropout (and head dropout)
    drop_path: float
    confidence: float  # the paper's label-smoothing c; PyTorch epsilon = 1 - c


TABLE12 = {
    "BasicMotions": Finetune(1e-2, 8, 50, 1.0, 0.0, 0.0, 1.0),
    "CharacterTrajectories": Finetune(8e-3, 16, 100, 1.0, 0.0, 0.0, 0.9),
    "Epilepsy": Finetune(2e-3, 16, 150, 1.0, 0.2, 0.2, 0.8),
    "Heartbeat": Finetune(2e-2, 32, 30, 2.0, 0.0, 0.0, 1.0),
    "LSST": Finetune(3e-2, 16, 15, 10.0, 0.2, 0.2, 0.9),
}
# ours, for datasets outside Table 12: the middle of Table 12's ranges
DEFAULT_FINETUNE = Finetune(1e-2, 16, 50, 1.0, 0.1, 0.1, 0.9)
# Table 6's datasets as `stats` gives them (the plan's sizes where the files are absent): series per split,
# channels and classes from the UEA archive's descriptions (timeseriesclassification.com), lengths = the
# archive's series length less the 30 % drop (CharacterTrajectories: 60-182 steps)
PAPER_STATS = {
    "BasicMotions": dict(n_train=40, n_test=40, channels=6, classes=4, max_len=70, min_len=70),
    "CharacterTrajectories": dict(n_train=1422, n_test=1436, channels=3, classes=20, max_len=128, min_len=42),
    "Epilepsy": dict(n_train=137, n_test=138, channels=3, classes=4, max_len=145, min_len=145),
    "Heartbeat": dict(n_train=204, n_test=205, channels=61, classes=2, max_len=284, min_len=284),
    "LSST": dict(n_train=2459, n_test=2466, channels=6, classes=14, max_len=26, min_len=26),
}


@dataclass(frozen=True)
class UEARun:
    """One profile. Defaults = the `paper` profile (Tables 12, 13)."""

    datasets: tuple[str, ...] = uea.TABLE6
    seeds: tuple[int, ...] = (69, 84, 1066)  # the authors'
    drop: float = 0.3  # share of each series' time steps removed (Kidger et al.)
    dropout_at: str = "authors"  # the classifier's dropout: "authors" (MLP output, head input) | "paper" (App. A.2)
    standardize: bool = True  # per-channel mean/std of the training file (the authors: raw values)
    encoder: str = "tiny"  # Sec. 5.4
    decoder: str = "tiny-shallow"  # App. A.1
    mask_ratio: float = 0.75  # Table 13
    pretrain_epochs: int = 400  # Table 13
    pretrain_batch: int = 64
    pretrain_lr: float = 3e-4
    from_scratch: bool = True  # also train the classifier without pre-training (the control)
    label_budgets: tuple[int, ...] = (2,)  # ours: also fine-tune on k labelled series per class (pre-training
    #                                        still sees every training series): where pre-training can matter
    max_steps: int | None = None  # cap on each training's optimiser steps (epochs reduced to fit)
    pretrain_cap: int | None = None  # set by `plan`: the pre-training's cap (else max_steps)
    finetune_cap: int | None = None  # set by `plan`: each fine-tuning's cap (else max_steps)
    max_tokens: int | None = None  # set by `plan`: series with more kept steps are thinned evenly to this many
    budget_minutes: float | None = None  # datasets outside Table 6: plan them into this (reference CPU)
    max_series: int | None = None  # smoke: at most this many series per split
    max_length: int | None = None  # smoke: only the first steps of each series
    finetune_epochs: int | None = None  # smoke: override Table 12's epochs
    progress: bool = True

    def finetune(self, name: str) -> Finetune:
        ft = TABLE12.get(name, DEFAULT_FINETUNE)
        return ft if self.finetune_epochs is None else dataclasses.replace(ft, epochs=self.finetune_epochs)

    def model_config(self, n_channels: int) -> RoMAEConfig:
        return RoMAEConfig(token_dim=n_channels, n_axes=1, encoder=size(self.encoder), decoder=size(self.decoder),
                           use_cls=True, mask_ratio=self.mask_ratio)

    def _epochs(self, epochs: int, n: int, batch: int, cap: int | None) -> int:
        cap = self.max_steps if cap is None else cap
        if cap is None:
            return epochs
        return max(1, min(epochs, cap // -(-n // batch)))

    def pretrain_config(self, n_train: int) -> TrainConfig:
        batch = min(self.pretrain_batch, n_train)
        return TrainConfig(epochs=self._epochs(self.pretrain_epochs, n_train, batch, self.pretrain_cap), batch_size=batch,
                           lr=self.pretrain_lr, betas=(0.9, 0.95), weight_decay=0.05, warmup_fraction=0.1,
                           grad_clip=1.0, progress=self.progress, log_every=10)

    def finetune_config(self, name: str, n_train: int) -> TrainConfig:
        ft = self.finetune(name)
        batch = min(ft.batch_size, n_train)
        return TrainConfig(epochs=self._epochs(ft.epochs, n_train, batch, self.finetune_cap), batch_size=batch,
                           lr=ft.lr, optimizer="sgd", momentum=0.9, weight_decay=0.0, warmup_fraction=0.1,
                           grad_clip=ft.clip, progress=self.progress, log_every=5)


PROFILES = {
    "paper": UEARun(),
    # Table 6's datasets at the paper's settings, each training capped at 1,500 steps (BasicMotions is not
    # capped: it has 400 pre-training steps); any other dataset planned into about 15 minutes (`plan`)
    "quick": UEARun(max_steps=1500, budget_minutes=PLAN_MINUTES),
    # seconds: <= 24 series of <= 48 steps per split, tiny-shallow, 2 + 2 epochs, one seed
    "smoke": UEARun(seeds=(69,), encoder="tiny-shallow", pretrain_epochs=2, finetune_epochs=2, max_series=24,
                    max_length=48, progress=False),
}


def resolve_datasets(datasets=None, root=None) -> tuple[str, ...]:
    """The datasets a run names: `datasets` (a list, or a comma-separated string), or when empty Table 6's
    five followed by every other dataset found under <data>/uea/."""
    names = as_list(datasets, "datasets")
    for name in names:
        uea._check_name(name)
    if names:
        return tuple(dict.fromkeys(names))
    return tuple(dict.fromkeys(list(uea.TABLE6) + uea.available(root)))


DROPOUT_AT = ("authors", "paper")  # UEARun.dropout_at
OVERRIDES = ("drop", "encoder", "labels_per_class", "dropout_at")  # notebook 12's protocol parameters


def overrides(drop=None, encoder=None, labels_per_class=None, dropout_at=None) -> dict:
    """The UEARun fields that notebook 12's protocol parameters set, checked: `drop` (share of each series' steps
    removed, in [0, 1)), `encoder` (a model size), `labels_per_class` (the label-scarce budgets: whole numbers >= 1,
    a list or "2,5"; empty: no label-scarce pair), `dropout_at` ("authors" | "paper"). None (and "" for
    `encoder` and `dropout_at`): the profile's. A bad value is a ValueError naming the parameter and the value."""
    out = {}
    if drop is not None:
        if isinstance(drop, bool) or not isinstance(drop, (int, float)) or not 0 <= drop < 1:
            raise ValueError(f"drop: {drop!r} is not a share of each series' steps to remove in [0, 1) "
                             f"(Table 6: 0.3; 0: keep every step)")
        out["drop"] = float(drop)
    if encoder not in (None, ""):
        if encoder not in SIZES:
            raise ValueError(f"encoder: unknown model size {encoder!r}; choose one of {', '.join(SIZES)} "
                             f"(Table 6: tiny)")
        out["encoder"] = encoder
    if labels_per_class is not None:
        items = [labels_per_class] if isinstance(labels_per_class, (int, float)) else (
            as_list(labels_per_class, "labels_per_class") if isinstance(labels_per_class, str) else labels_per_class)
        budgets = []
        for k in items:
            v = k.strip() if isinstance(k, str) else k
            if isinstance(v, str) and v.isdigit():
                v = int(v)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"labels_per_class: {k!r} is not a whole number (>= 1) of labelled training series "
                                 f"per class; give e.g. 2 or 2,5, or nothing for no label-scarce pair")
            budgets.append(v)
        out["label_budgets"] = tuple(dict.fromkeys(budgets))
    if dropout_at not in (None, ""):
        if dropout_at not in DROPOUT_AT:
            raise ValueError(f"dropout_at: {dropout_at!r}; choose 'authors' (where the authors' code puts dropout: "
                             f"the MLP's output and the head's input) or 'paper' (App. A.2)")
        out["dropout_at"] = dropout_at
    return out


def config(profile: str, datasets=None, root=None, **params) -> UEARun:
    """The settings of a profile for `datasets` (default: Table 6's five + every other found under the data
    root), with the protocol parameters of `overrides` (drop, encoder, labels_per_class, dropout_at); raises
    ValueError on an unknown profile, a malformed dataset list or a bad parameter."""
    unknown = set(params) - set(OVERRIDES)
    if unknown:
        raise TypeError(f"config() got unknown parameters {sorted(unknown)}; the protocol's are {', '.join(OVERRIDES)}")
    cfg = PROFILES[check_profile(profile)]
    return dataclasses.replace(cfg, datasets=resolve_datasets(datasets, root), **overrides(**params))


def _pct(share: float) -> str:
    return f"{share * 100:.4g} %"


def protocol(name: str, cfg: UEARun) -> str:
    """Which protocol `name` runs under, and why, in one sentence (the notebook prints it for every dataset):
    a dataset of Table 6 has the paper's; one outside it gets Table 6's too (the paper has none for it; Table 6's
    is the one its comparators applied to every UEA dataset), with `DEFAULT_FINETUNE`; the parameters that differ
    from Table 6 (drop, encoder, labels_per_class, dropout_at) are named with Table 6's value."""
    paper = PROFILES["paper"]
    parts = [f"{_pct(cfg.drop)} of each series' steps dropped"
             + ("" if cfg.drop == paper.drop else f" (Table 6: {_pct(paper.drop)})"),
             f"RoMAE-{cfg.encoder}" + ("" if cfg.encoder == paper.encoder else f" (Table 6: RoMAE-{paper.encoder})"),
             "Table 12's fine-tuning" if name in TABLE12 else "DEFAULT_FINETUNE, ours (Table 12 has no column for it)",
             "dropout where the authors' code puts it" if cfg.dropout_at == "authors" else "dropout where App. A.2 puts it",
             f"the label-scarce pair with {' and '.join(map(str, cfg.label_budgets))} labelled series per class (ours)"
             if cfg.label_budgets else "no label-scarce pair"]
    if name in uea.TABLE6:
        head = f"{name} is in Table 6: its protocol"
    else:
        head = (f"{name} is not in Table 6, so the paper gives it no protocol: it gets Table 6's, the one the "
                f"paper's comparators applied to every UEA dataset (Kidger et al., ContiFormer)")
    return (f"{head}: {'; '.join(parts)}. The notebook parameters drop, encoder, labels_per_class and dropout_at "
            f"change it.")


def data_needs(profile: str = "smoke", datasets=None, data_root: str = "", **params) -> list[Need]:
    """What the notebook needs under the data root: at least one of its datasets (the others: optional). The
    protocol parameters are checked here too, so a bad value fails before a kernel starts."""
    cfg = config(profile, datasets, data_root or None, **{k: params[k] for k in OVERRIDES if k in params})
    names = tuple(f"uea:{d}" for d in cfg.datasets)
    return [Need(names, "a UEA dataset of `datasets`")] + [
        Need((n,), f"UEA {n[4:]}", optional=True) for n in names]


def find(datasets, root=None) -> tuple[list[str], list[str], str]:
    """-> (found, missing, message): which datasets are under <data>/uea/, and how to get the others."""
    base = files.data_root(root)
    have = set(uea.available(base))
    found = [d for d in datasets if d in have]
    missing = [d for d in datasets if d not in have]
    msg = ""
    if missing:
        msg = (f"not under {base / 'uea'}: {', '.join(missing)}. Get them with "
               f"`{files.fetch_command(f'uea:{d}' for d in missing)}` (needs internet; from "
               f"{uea.URL.format(name='<Name>')}) or put <Name>_TRAIN.ts and <Name>_TEST.ts in "
               f"{base / 'uea' / '<Name>'}/")
    return found, missing, msg


def drop_steps(series: list[np.ndarray], rate: float, seed: int = DROP_SEED) -> list[np.ndarray]:
    """Copies of series [T_i, C] with floor(rate * T_i) random steps set to NaN (one generator, in order).

    The removed steps become all-NaN rows, which `from_sequences` drops while the kept steps keep their
    true time index (the authors' pandas version of this removed nothing under copy-on-write)."""
    rng = np.random.default_rng(seed)
    out = []
    for x in series:
        x = np.array(x, dtype=np.float64, copy=True)
        k = int(len(x) * rate)
        x[rng.choice(len(x), size=k, replace=False)] = np.nan
        out.append(x)
    return out


def thin(series: list[np.ndarray], max_tokens: int | None) -> list[np.ndarray]:
    """Series whose observed steps (not all-NaN) exceed `max_tokens` keep `max_tokens` of them, evenly spread
    from the first to the last (the others become NaN rows: dropped, the kept ones keep their times)."""
    if max_tokens is None:
        return series
    out = []
    for x in series:
        seen = np.flatnonzero(~np.isnan(x).all(1))
        if len(seen) > max_tokens:
            x = x.copy()
            keep = seen[np.unique(np.round(np.linspace(0, len(seen) - 1, max_tokens)).astype(int))]
            x[np.setdiff1d(seen, keep)] = np.nan
        out.append(x)
    return out


def _subset(split: uea.TSData, cfg: UEARun, seed: int) -> tuple[list, list | None, np.ndarray]:
    """(series, times, labels) of a split, reduced for the smoke profile."""
    n = len(split.series)
    idx = np.arange(n)
    if cfg.max_series is not None and n > cfg.max_series:
        idx = np.sort(np.random.default_rng(seed).choice(n, cfg.max_series, replace=False))
    series = [split.series[i][: cfg.max_length] for i in idx]
    times = None if split.times is None else [split.times[i][: cfg.max_length] for i in idx]
    return series, times, split.labels[idx]


def _classification(raw: dict, name: str) -> None:
    if raw["train"].labels is None or not raw["classes"]:
        raise ValueError(f"{name} has no class labels (a regression or unlabelled dataset): Table 6 is classification")


def build(name: str, cfg: UEARun, root=None, raw: dict | None = None) -> dict:
    """Load a dataset, drop 30 % of every series' steps (train and test alike), thin very long series if the
    plan says so -> token datasets."""
    raw = uea.load(name, root) if raw is None else raw
    _classification(raw, name)
    out = {}
    for split, seed in (("train", 1), ("test", 2)):
        series, times, labels = _subset(raw[split], cfg, seed)
        # one generator per split, seeded from DROP_SEED: the same drop every run, independent of the model seed
        dropped = thin(drop_steps(series, cfg.drop, DROP_SEED + seed), cfg.max_tokens)
        like = out.get("train")
        out[split] = from_sequences(dropped, times=times, labels=labels, like=like, standardize=cfg.standardize,
                                    classes=raw["classes"] if like is None else None)
        out[f"{split}_raw"] = (series, dropped)
    generated = raw.get("generated", False)  # a dry run's series (`dry_raw`): no files
    out["sha256"] = None if generated else [files.sha256(Path(raw["folder"]) / f"{name}_{s}.ts")
                                            for s in ("TRAIN", "TEST")]
    out["classes"], out["generated"] = raw["classes"], generated
    return out


def dry_raw(name: str, cfg: UEARun) -> dict:
    """A dry run without `name`'s files: generated series of its Table 6 shape (`PAPER_STATS`: channels, classes,
    lengths before the drop), at most `runtime.dry_count` per split, in `uea.load`'s form; labelled
    `runtime.DRY_LABEL` wherever they are reported. Not data."""
    st = PAPER_STATS[name]
    # the archive's length whose kept steps after the drop are the table's: T - floor(drop * T) = kept
    before = lambda kept: next(t for t in range(kept, 2 * kept + 2) if t - int(t * cfg.drop) == kept)  # noqa: E731
    return uea.generate(name, runtime.dry_count(st["n_train"]), runtime.dry_count(st["n_test"]), st["channels"],
                        st["classes"], (before(st["min_len"]), before(st["max_len"])))


def classifier_args(ft: Finetune, dropout_at: str = "authors") -> dict:
    """`pretrain_finetune`'s classifier settings of a Table 12 column: dropout, drop-path, label smoothing.
    Dropout where the authors' code puts it (attention, MLP output and the head's input), or with
    dropout_at="paper" where App. A.2 does (attention and the MLP's hidden layer; the head has none)."""
    paper = dropout_at == "paper"
    return dict(dropout=ft.dropout, drop_path=ft.drop_path, dropout_at=dropout_at,
                head_overrides=dict(label_smoothing=round(1.0 - ft.confidence, 6),
                                    head_dropout=0.0 if paper else ft.dropout))


def classifier_config(model_cfg: RoMAEConfig, ft: Finetune, n_classes: int, dropout_at: str = "authors") -> RoMAEConfig:
    """The classifier `pretrain_finetune` fine-tunes with `classifier_args(ft, dropout_at)`."""
    args = classifier_args(ft, dropout_at)
    return prediction_config(model_cfg, n_outputs=n_classes, dropout=args["dropout"], drop_path=args["drop_path"],
                             dropout_at=dropout_at, **args["head_overrides"])


def paper_trainings(datasets=uea.TABLE6) -> list[Training]:
    """Notebook 12's paper trainings (`romae.compendium.plan`) on `datasets` (sizes: PAPER_STATS): per dataset the
    pre-training and the fine-tunings (pre-trained and from scratch; all labels and the label-scarce budgets)."""
    cfg, out = config("paper", list(datasets)), []
    variants = 2 if cfg.from_scratch else 1
    for name in cfg.datasets:
        st = PAPER_STATS[name]
        n, model = st["n_train"], cfg.model_config(st["channels"])
        clf = classifier_config(model, cfg.finetune(name), st["classes"], cfg.dropout_at)
        shape = dict(n_tokens=st["max_len"], padded=st["min_len"] != st["max_len"], source="UEA archive, 30 % dropped")
        out += [Training(f"uea:{name} pre-training", "pretrain", model, cfg.pretrain_config(n), samples=n,
                              runs=len(cfg.seeds), **shape),
                Training(f"uea:{name} fine-tuning", "finetune", clf, cfg.finetune_config(name, n), samples=n,
                              runs=len(cfg.seeds) * variants, **shape)]
        for k in cfg.label_budgets:
            m = min(n, k * st["classes"])
            out.append(Training(f"uea:{name} fine-tuning, {k} labelled per class", "finetune", clf,
                                     cfg.finetune_config(name, m), samples=m, runs=len(cfg.seeds) * variants, **shape))
    return out


# ----------------------------------------------------------------------------- planning

def stats(raw: dict, cfg: UEARun) -> dict:
    """Sizes a plan needs: series per split, channels, classes, and the longest series after the drop."""
    tr, _, _ = _subset(raw["train"], cfg, 1)
    te, _, _ = _subset(raw["test"], cfg, 2)
    kept = [len(x) - int(len(x) * cfg.drop) for x in tr + te]
    return dict(n_train=len(tr), n_test=len(te), channels=raw["train"].n_channels, classes=len(raw["classes"]),
                max_len=max(kept), min_len=min(kept))


def _steps(epochs: int, n: int, batch: int) -> int:
    return epochs * -(-n // batch)


def schedule(cfg: UEARun, name: str, st: dict) -> dict:
    """The trainings of one seed under `cfg`: {"pretrain": steps, "finetune": [steps of each classifier
    fine-tuning, from-scratch and label-scarce included], "tokens": padded length, ...}."""
    n, tokens = st["n_train"], st["max_len"] if cfg.max_tokens is None else min(st["max_len"], cfg.max_tokens)
    pre = cfg.pretrain_config(n)
    ft_all = cfg.finetune_config(name, n)
    fts = [_steps(ft_all.epochs, n, ft_all.batch_size)] * (2 if cfg.from_scratch else 1)
    batches = [ft_all.batch_size] * len(fts)
    for k in cfg.label_budgets:
        m = min(n, k * st["classes"])
        c = cfg.finetune_config(name, m)
        fts += [_steps(c.epochs, m, c.batch_size)] * (2 if cfg.from_scratch else 1)
        batches += [c.batch_size] * (2 if cfg.from_scratch else 1)
    return dict(pretrain=_steps(pre.epochs, n, pre.batch_size), pretrain_batch=pre.batch_size, finetune=fts,
                finetune_batches=batches, tokens=tokens, predictions=len(fts) * -(-st["n_test"] // EVAL_BATCH))


def reference_seconds(cfg: UEARun, name: str, st: dict, speed: dict | None = None) -> float:
    """Seconds of all of a run's trainings and predictions on the reference CPU (romae.compendium.cost); `speed`
    {stage: this device's step time / the reference's} turns it into an estimate for another device."""
    sch = schedule(cfg, name, st)
    model = dataclasses.replace(cfg.model_config(st["channels"]), n_outputs=max(st["classes"], 1))
    f = lambda stage: (speed or {}).get(stage, 1.0)  # noqa: E731
    t = sch["pretrain"] * cost.reference_seconds(model, sch["pretrain_batch"], sch["tokens"], "pretrain") * f("pretrain")
    ft = cfg.finetune(name)
    regularised = cost.REGULARISED if (ft.dropout or ft.drop_path) and speed is None else 1.0  # (measured: in speed)
    t += sum(s * cost.reference_seconds(model, b, sch["tokens"], "finetune")
             for s, b in zip(sch["finetune"], sch["finetune_batches"])) * f("finetune") * regularised
    t += sch["predictions"] * cost.reference_seconds(model, min(EVAL_BATCH, st["n_test"]), sch["tokens"],
                                                     "predict") * f("predict")
    return len(cfg.seeds) * t


def _round_down(x: float) -> int:
    """Two significant digits, rounded down (so nearby budgets give the same cap)."""
    if x < 100:
        return max(1, int(x))
    p = 10 ** (int(math.log10(x)) - 1)
    return int(x // p * p)


def plan(cfg: UEARun, name: str, st: dict) -> tuple[UEARun, list[str], float]:
    """-> (the settings this dataset runs with, the reductions made, their seconds on the reference CPU).

    Only a dataset outside Table 12 with a `budget_minutes` (quick) is planned: the first of these that fits
    the budget is taken: the profile as it is; without the label-scarce pair; two seeds; two seeds with the
    trainings capped (never below MIN_STEPS or one epoch); one seed, capped; one seed, capped, long series
    thinned to 512, 256, 128 tokens. If none fits, the last, with a warning."""
    if cfg.budget_minutes is None or name in TABLE12:
        return cfg, [], reference_seconds(cfg, name, st)
    budget = cfg.budget_minutes * 60

    def capped(c: UEARun) -> UEARun | None:  # the largest common fraction of the steps that fits, or None
        uncapped = schedule(dataclasses.replace(c, max_steps=None), name, st)
        full = dict(pretrain=uncapped["pretrain"], finetune=max(uncapped["finetune"]))
        caps = {k: min(v, c.max_steps or v) for k, v in full.items()}
        lo, hi = 0.0, 1.0
        for _ in range(30):  # bisect the fraction
            mid = (lo + hi) / 2
            trial = dataclasses.replace(c, **{f"{k}_cap": _round_down(max(MIN_STEPS[k], mid * v)) for k, v in caps.items()})
            lo, hi = (mid, hi) if reference_seconds(trial, name, st) <= budget else (lo, mid)
        trial = dataclasses.replace(c, **{f"{k}_cap": _round_down(max(MIN_STEPS[k], lo * v)) for k, v in caps.items()})
        return trial if reference_seconds(trial, name, st) <= budget else None

    base = dataclasses.replace(cfg, budget_minutes=None)
    two, one = base.seeds[:2], base.seeds[:1]
    options = [(base, []), (dataclasses.replace(base, label_budgets=()), ["no label-scarce pair"]),
               (dataclasses.replace(base, label_budgets=(), seeds=two), ["no label-scarce pair", f"{len(two)} of "
                                                                          f"{len(base.seeds)} seeds"])]
    for seeds in (two, one):
        options.append((dataclasses.replace(base, label_budgets=(), seeds=seeds), ["no label-scarce pair",
                        f"{len(seeds)} of {len(base.seeds)} seeds", "capped"]))
    for tokens in THIN:
        if st["max_len"] > tokens:
            options.append((dataclasses.replace(base, label_budgets=(), seeds=one, max_tokens=tokens),
                            ["no label-scarce pair", f"1 of {len(base.seeds)} seeds", "capped",
                             f"series thinned to at most {tokens} of their up to {st['max_len']} kept steps"]))
    chosen = None
    for c, why in options:
        if "capped" in why:
            c = capped(c)
            if c is None:
                continue
        if reference_seconds(c, name, st) <= budget:
            chosen = (c, why)
            break
    if chosen is None:  # nothing fits: the smallest plan, at the minimal caps
        c, why = options[-1]
        c = dataclasses.replace(c, pretrain_cap=MIN_STEPS["pretrain"], finetune_cap=MIN_STEPS["finetune"])
        chosen = (c, why + [f"still over the {cfg.budget_minutes:g}-minute budget"])
    c, why = chosen
    return c, _describe(why, c, cfg, name, st), reference_seconds(c, name, st)


def _describe(why: list[str], c: UEARun, cfg: UEARun, name: str, st: dict) -> list[str]:
    """The reductions in words, with the step counts for 'capped'."""
    if "capped" not in why:
        return why
    full = schedule(dataclasses.replace(cfg, max_steps=None, budget_minutes=None), name, st)
    now = schedule(c, name, st)
    cap = (f"pre-training {now['pretrain']:,} of {full['pretrain']:,} steps, each fine-tuning "
           f"{max(now['finetune']):,} of {max(full['finetune']):,}")
    return [cap if w == "capped" else w for w in why]


def describe(name: str, st: dict, c: UEARun, reductions: list[str], seconds: float, profile: str) -> str:
    """One paragraph: the dataset's size, what the profile trains, its time on the reference CPU."""
    sch = schedule(c, name, st)
    lengths = f"{st['min_len']}-{st['max_len']}" if st["min_len"] != st["max_len"] else f"{st['max_len']}"
    trainings = (f"pre-training {sch['pretrain']:,} steps (batch {sch['pretrain_batch']}) + {len(sch['finetune'])} "
                 f"fine-tunings of {min(sch['finetune']):,}-{max(sch['finetune']):,} steps")
    return (f"{name}: {st['n_train']} train / {st['n_test']} test series, {st['channels']} channel(s), "
            f"{st['classes']} classes, {lengths} steps kept after the {_pct(c.drop)} drop"
            + (f" (thinned to at most {c.max_tokens})" if c.max_tokens and st["max_len"] > c.max_tokens else "")
            + f". {profile}: {len(c.seeds)} seed(s) x ({trainings})"
            + (f"; reduced to fit about {QUICK_MINUTES} min on 2 cores: {'; '.join(reductions)}" if reductions else "")
            + f". Estimated {cost.minutes(seconds)} on the reference {cost.REFERENCE} (if nothing is cached)")


def measured_estimate(name: str, data: dict, c: UEARun, st: dict) -> tuple[float, dict]:
    """Seconds the plan will take on this device -> (seconds, {stage: measured seconds per step}): one step of
    each stage is timed with the real models on a real batch (`romae.compendium.cost.measured_step_seconds`), and the
    plan's reference cost is scaled by the measured / reference ratio of each stage."""
    train, test = data["train"], data["test"]
    sch = schedule(c, name, st)
    model_cfg = c.model_config(train.token_dim)
    ref_cfg = dataclasses.replace(model_cfg, n_outputs=max(st["classes"], 1))
    pb, fb = min(sch["pretrain_batch"], len(train)), min(max(sch["finetune_batches"]), len(train))
    eb = min(EVAL_BATCH, len(test))
    # the classifier as fine-tuned: its dropout and drop-path cost time too
    clf = RoMAEForPrediction(classifier_config(model_cfg, c.finetune(name), len(data["classes"]), c.dropout_at))
    per = {"pretrain": cost.measured_step_seconds(RoMAEForPreTraining(model_cfg), train.batch(torch.arange(pb)),
                                                  c.pretrain_config(len(train))),
           "finetune": cost.measured_step_seconds(clf, train.batch(torch.arange(fb)), c.finetune_config(name, len(train))),
           "predict": cost.measured_step_seconds(clf, test.batch(torch.arange(eb)), None)}
    tokens = train.tensors["values"].shape[1]
    speed = {stage: per[stage] / cost.reference_seconds(ref_cfg, b, tokens, stage)
             for stage, b in (("pretrain", pb), ("finetune", fb), ("predict", eb))}
    return reference_seconds(c, name, st, speed), per


# ----------------------------------------------------------------------------- running

def run_dataset(name: str, cfg: UEARun, profile: str, root=None, cache_dir=None, refresh=False,
                log=print, raw: dict | None = None) -> dict:
    """Plan, then pre-train + fine-tune (and from scratch) every seed on one dataset -> per-seed rows and
    histories. Prints the dataset's size, the plan and its estimated time (reference CPU and here) first."""
    t0 = time.perf_counter()
    raw = uea.load(name, root) if raw is None else raw
    _classification(raw, name)
    st = stats(raw, cfg)
    full = PAPER_STATS[name] if raw.get("generated") and name in PAPER_STATS else stats(raw, PROFILES["paper"])
    cfg, reductions, ref_seconds = plan(cfg, name, st)
    log(describe(name, st, cfg, reductions, ref_seconds, profile))
    data = build(name, cfg, root, raw)
    here = None
    if not runtime.dry_run():  # a dry run's few steps: timing the full plan's batches would cost more than the run
        here, per = measured_estimate(name, data, cfg, st)
        log(f"    on this device, {device_label()}: " + ", ".join(f"{k} {v * 1000:.0f} ms/step" for k, v in per.items())
            + f" -> about {cost.minutes(here)} (if nothing is cached)")
    train, test = data["train"], data["test"]
    counts = train.tensors["labels"].bincount()
    for k in cfg.label_budgets:  # a budget at or over a class's size labels all of it: say so
        whole = [str(data["classes"][c]) for c in range(len(counts)) if 0 < counts[c] <= k]
        if whole:
            log(f"    {k} labelled per class: {', '.join(whole)} ha{'s' if len(whole) == 1 else 've'} no more than {k} "
                "training series, so all of "
                + ("it is" if len(whole) == 1 else "them are") + " labelled"
                + (" (the label-scarce pair equals the full one)" if len(whole) == len(data["classes"]) else ""))
    base = baseline_scores(data, cfg)
    log("    baselines on the same test series: " + ", ".join(
        f"{m}{'' if k == 'all labels' else f' ({k})'} {g.accuracy.mean():.4f}"
        for (m, k), g in base.groupby(["model", "labels"], sort=False)) + f" (accuracy; {base.seconds.sum():.1f} s)")
    key = dict(dataset=name, sha256=data["sha256"], drop=cfg.drop, drop_seed=DROP_SEED, standardize=cfg.standardize,
               max_series=cfg.max_series, max_length=cfg.max_length, max_tokens=cfg.max_tokens)
    if cfg.max_tokens is None:  # keys of runs from before thinning existed stay valid
        key.pop("max_tokens")
    model_cfg = cfg.model_config(train.token_dim)
    ft = cfg.finetune(name)
    variants = [("pre-trained", cfg.pretrain_config(len(train)))] + ([("from scratch", None)] if cfg.from_scratch else [])
    rows, histories = [], {}
    terminal.expect(len(cfg.seeds) * (1 + len(cfg.label_budgets)) * (len(variants) + 1), more=True)  # + pre-training
    for seed in cfg.seeds:
        for k in (None, *cfg.label_budgets):  # None: every training series is labelled
            labelled = train if k is None else labelled_subset(train, k, seed)
            for variant, pretrain in variants:
                res = pretrain_finetune(
                    f"uea_{name}", labelled, test, model_cfg, finetune=cfg.finetune_config(name, len(labelled)),
                    pretrain=pretrain, n_outputs=len(data["classes"]), seed=seed, key=key, pretrain_data=train,
                    finetune_key=None if k is None else dict(labelled_ids=labelled.ids), **classifier_args(ft, cfg.dropout_at),
                    cache_dir=cache_dir, refresh=refresh, checkpoints=profile != "smoke", profile=profile)
                label = variant if k is None else f"{variant}, {k} labelled per class"
                rows.append(dict(dataset=name, variant=label, seed=seed, n_labelled=len(labelled), **res["metrics"],
                                 pretrain_steps=res["steps"]["pretrain"], finetune_steps=res["steps"]["finetune"],
                                 pretrain_seconds=res["seconds"]["pretrain"], finetune_seconds=res["seconds"]["finetune"]))
                histories[(label, seed)] = dict(pretrain=res["pretrain_history"], finetune=res["finetune_history"])
    return dict(name=name, data=data, per_seed=pd.DataFrame(rows), histories=histories, config=cfg, baselines=base,
                table12=name in TABLE12, seconds=time.perf_counter() - t0, reductions=reductions, stats=st,
                full_stats=full,
                estimate=dict(reference=ref_seconds, here=here),
                pretrain=cfg.pretrain_config(len(train)), finetune=cfg.finetune_config(name, len(train)))


def labelled_index(train, k: int, seed: int) -> np.ndarray:
    """The indices (sorted) of k training series per class (all of a class with fewer), drawn with `seed`."""
    rng = np.random.default_rng(seed)
    labels = train.tensors["labels"].numpy()
    return np.sort(np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:k] for c in np.unique(labels)]))


def labelled_subset(train, k: int, seed: int):
    """k training series per class (all of a class with fewer), drawn with `seed`: the labelled data of
    the label-scarce variants."""
    return train.subset(labelled_index(train, k, seed))


BASELINE_WINDOW = 0.1  # 1-NN DTW's Sakoe-Chiba radius, a share of the longer series (the UCR archive's usual 10 %)


def baseline_scores(data: dict, cfg: UEARun) -> pd.DataFrame:
    """Simple standard baselines on exactly the test series RoMAE is scored on (after the drop, and thinning if
    planned): 1-nearest-neighbour DTW (`romae.baselines.nn1_dtw`: dependent DTW over the kept steps in the file's
    units, Sakoe-Chiba band of BASELINE_WINDOW) with every training series labelled and, for each label-scarce
    budget, with the labelled series of each seed (`labelled_index`); and the most frequent training class.
    -> rows: model, labels, seed (None where no seed is involved), n_labelled, accuracy, macro_f1, seconds."""
    train, test = data["train"], data["test"]
    y, truth = train.tensors["labels"].numpy(), test.tensors["labels"].numpy()
    t0 = time.perf_counter()
    D = baselines.dtw_distances(test, train, BASELINE_WINDOW)  # [test, train], computed once
    seconds = time.perf_counter() - t0

    def row(model, labels, seed, n, pred, s=0.0):
        return dict(model=model, labels=labels, seed=seed, n_labelled=n, accuracy=metrics.accuracy(truth, pred),
                    macro_f1=metrics.macro_f1(truth, pred), seconds=s)

    rows = [row("1-NN DTW", "all labels", None, len(y), baselines.nn1_dtw(train, test, labels=y, distances=D), seconds)]
    for k in cfg.label_budgets:
        for seed in cfg.seeds:
            idx = labelled_index(train, k, seed)
            rows.append(row("1-NN DTW", f"{k} labelled per class", seed, len(idx),
                            baselines.nn1_dtw(train, test, labels=y[idx], distances=D[:, idx])))
    rows.append(row("majority class", "all labels", None, len(y), baselines.majority_class(y, len(truth))))
    return pd.DataFrame(rows).astype({"seed": "Int64"})


def _note(r: dict, cfg: UEARun) -> str:
    d, pre, ft = r["data"], r["pretrain"], r["finetune"]
    capped = []
    if pre.epochs < cfg.pretrain_epochs:
        capped.append(f"pre-training {pre.epochs} of {cfg.pretrain_epochs} epochs")
    if ft.epochs < cfg.finetune(r["name"]).epochs:
        capped.append(f"fine-tuning {ft.epochs} of {cfg.finetune(r['name']).epochs} epochs")
    capped += [w for w in r.get("reductions", []) if not w.startswith(("pre-training", "no label-scarce"))]
    lam = cfg.finetune(r["name"]).drop_path
    return ((f"{runtime.DRY_LABEL} (generated series of {r['name']}'s shape); " if d["generated"] else "")
            + f"{len(d['train'])} train / {len(d['test'])} test series, {_pct(cfg.drop)} of steps dropped; "
            f"RoMAE-{cfg.encoder}; pre-training {pre.epochs} epochs, fine-tuning {ft.epochs} epochs "
            f"({'Table 12' if r['table12'] else 'DEFAULT_FINETUNE: not in Table 12'}); model after the last epoch, "
            f"no selection on the test file" + (f"; drop-path {lam:g} as {DROP_PATH_RULE}" if lam else "")
            + (f"; planned reductions: {', '.join(capped)}" if capped else ""))


def run(profile: str = "smoke", datasets=None, data_root=None, reports_dir=None, cache_dir=None,
        refresh: bool = False, log=print, **params) -> dict:
    """Run every dataset found (of `datasets`; default Table 6's five and every other one under the data
    root), record rows, save the table. `params`: the protocol parameters (`overrides`: drop, encoder,
    labels_per_class, dropout_at). Each dataset's protocol is said first (`protocol`). A dataset found that is not
    a classification dataset is skipped (said in `skipped`); DataMissing if none of `datasets` is there."""
    explicit = bool(as_list(datasets, "datasets"))
    cfg = config(profile, datasets, data_root, **params)
    shown = log

    def log(line):  # each line also goes to the terminal of `make reproduce` (romae.compendium.terminal): plans, estimates
        shown(line)
        terminal.say(line)

    generated = {}
    if runtime.dry_run():  # one seed, a few series per split; Table 6's datasets that are absent: generated
        cfg = dataclasses.replace(cfg, seeds=runtime.dry_seeds(cfg.seeds),
                                  max_series=runtime.dry_count(cfg.max_series or runtime.DRY_EVAL))
        generated = {d: dry_raw(d, cfg) for d in find(cfg.datasets, data_root)[1] if d in PAPER_STATS}
        for d in generated:
            log(f"{d}: not under the data root; {runtime.DRY_LABEL}")
    if not generated:
        require(data_needs(profile, list(cfg.datasets), data_root or ""), data_root)
    found, missing, message = find(cfg.datasets, data_root)
    if generated:
        found = [d for d in cfg.datasets if d in found or d in generated]
        missing = [d for d in missing if d not in generated]
        message = find(missing, data_root)[2]
    results, skipped = {}, {}
    for name in found:
        try:
            raw = generated[name] if name in generated else uea.load(name, data_root)
            _classification(raw, name)
        except ValueError as e:  # unreadable, or not classification (a regression dataset is not Table 6's)
            if explicit:
                raise
            skipped[name] = str(e)  # found by looking, not asked for: said, and the others still run
            log(f"{name}: skipped: {e}")
            continue
        log(protocol(name, cfg))
        r = results[name] = run_dataset(name, cfg, profile, data_root, cache_dir, refresh, log, raw)
        rc = r["config"]
        r["flags"] = {v: "; ".join(x for seed in g.seed for c in loss_curves(r["histories"][(v, seed)])
                                   if (x := report.loss_flags(c)))
                      for v, g in r["per_seed"].groupby("variant", sort=False)}
        diffs = differences(r)
        verdicts = {v: f"pre-trained minus from scratch ({DIFF_METRIC}, paired by seed): {d.text}"
                       + ("; no conclusion: a training of the pair is flagged" if d.flagged else "")
                    for d in diffs.itertuples() for v in (d.pre, d.scratch)}
        trivial = majority_error(r["data"])
        for variant in r["per_seed"].variant.unique():
            f = r["per_seed"][r["per_seed"].variant == variant]
            # settings: "<name>" (paper row), "<name>, from scratch", "<name>, 2 labelled per class, pre-trained", ...
            head, _, budget = variant.partition(", ")
            setting = ", ".join([name] + ([budget] if budget else []) + ([head] if head != "pre-trained" or budget else []))
            note = "; ".join(x for x in (_note(r, rc) + (f"; fine-tuned on {int(f.n_labelled.iloc[0])} labelled series"
                                                          if budget else ""), verdicts.get(variant, "")) if x)
            n = len(f)
            fields = r.setdefault("scales", {})[variant] = scale_of(r, variant, int(f.n_labelled.iloc[0]), n)
            losses = [c for seed in f.seed for c in loss_curves(r["histories"][(variant, seed)])]
            learned = report.learned(1 - float(f.accuracy.mean()), trivial, trivial=TRIVIAL)
            for metric in ("accuracy", "macro_f1"):
                record(EXPERIMENT, setting, metric, float(f[metric].mean()),
                       ours_std=float(f[metric].std(ddof=1)) if n > 1 else None, n_seeds=n, profile=profile,
                       scale=fields, note=note, learned=learned, losses=losses, reports_dir=reports_dir)
        record_baselines(r, profile, trivial, reports_dir)
    per_seed = pd.concat([r["per_seed"] for r in results.values()], ignore_index=True) if results else pd.DataFrame()
    base = pd.concat([r["baselines"].assign(dataset=name) for name, r in results.items()], ignore_index=True) \
        if results else pd.DataFrame()
    table = comparison_table(results, profile, cfg.encoder)
    if results:
        save_table(table, EXPERIMENT, reports_dir)
        save_table(per_seed, f"{EXPERIMENT}_per_seed", reports_dir)
    # found: the datasets that ran; skipped: found but not runnable ({name: why}); missing: named, not here
    return dict(config=cfg, found=list(results), missing=missing, message=message, results=results,
                per_seed=per_seed, baselines=base, table=table, skipped=skipped, profile=profile)


BASELINE_SETTING = "{name}{labels}, {model} (baseline)"  # results.csv settings of the baselines' rows


def record_baselines(r: dict, profile: str, trivial: float, reports_dir=None) -> None:
    """results.csv rows of one dataset's 1-NN DTW baseline (`baseline_scores`): "<name>, 1-NN DTW (baseline)" and
    "<name>, <k> labelled per class, 1-NN DTW (baseline)" (mean over the seeds' labelled series), accuracy and
    macro-F1, with their scale facts (labelled series; seeds where they draw the labelled series)."""
    name, full, paper = r["name"], r["full_stats"], PROFILES["paper"]
    base = r["baselines"]
    for labels, g in base[base.model == "1-NN DTW"].groupby("labels", sort=False):
        budget = labels != "all labels"
        n_labelled = int(g.n_labelled.iloc[0])
        k = int(labels.split()[0]) if budget else None
        fields = dict(data=(n_labelled, full["n_train"] if k is None else min(full["n_train"], k * full["classes"])))
        if budget:
            fields["seeds"] = (len(g), len(paper.seeds))
        if r["data"]["generated"]:
            fields["dataset"] = ("generated series (dry run)", name)
        note = ((f"{runtime.DRY_LABEL} (generated series of {name}'s shape); " if r["data"]["generated"] else "")
                + f"1-nearest-neighbour, dependent DTW over the kept steps in the file's units, Sakoe-Chiba radius "
                f"{_pct(BASELINE_WINDOW)} of the longer series (romae.baselines); the same {len(r['data']['test'])} "
                f"test series as RoMAE ({_pct(r['config'].drop)} of steps dropped)"
                + (f"; {n_labelled} labelled training series per seed" if budget else ""))
        setting = BASELINE_SETTING.format(name=name, labels=f", {labels}" if budget else "", model="1-NN DTW")
        for metric in ("accuracy", "macro_f1"):
            record(EXPERIMENT, setting, metric, float(g[metric].mean()),
                   ours_std=float(g[metric].std(ddof=1)) if len(g) > 1 else None, n_seeds=len(g) if budget else 1,
                   profile=profile, scale=report.scale(**fields), note=note,
                   learned=report.learned(1 - float(g.accuracy.mean()), trivial, trivial=TRIVIAL),
                   reports_dir=reports_dir)


def reading(res: dict) -> list[str]:
    """One sentence per dataset that ran: the pre-trained RoMAE's accuracy (mean +- std over seeds, `spread`)
    against the paper's, the best published peer's, and 1-NN DTW's on the same test series."""
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    out = []
    for name, r in res["results"].items():
        f = r["per_seed"]
        ours = f[f.variant == "pre-trained"].accuracy
        p = peers[peers.benchmark == name]
        paper = p[p.model.str.startswith("RoMAE")].value
        ref = f"the paper's {paper.iloc[0]:.4f}" if len(paper) else "no published value"
        best = p[~p.model.str.startswith("RoMAE")].sort_values("value").tail(1)
        peer = f", best published peer {best.model.iloc[0]} {best.value.iloc[0]:.4f}" if len(best) else ""
        kind = f", {runtime.DRY_LABEL}" if r["data"]["generated"] else ""
        b = r["baselines"]
        dtw = b[(b.model == "1-NN DTW") & (b.labels == "all labels")].accuracy.iloc[0]
        out.append(f"{name} ({res['profile']}{kind}): pre-trained RoMAE {spread(ours)} against {ref}{peer}; "
                   f"1-NN DTW {dtw:.4f} on the same {len(r['data']['test'])} test series.")
    return out


def spread(values, digits: int = 4) -> str:
    """'mean +- std over n seeds' of some per-seed values, the std 'n/a' for one seed (a spread needs two)."""
    v = pd.Series(values, dtype=float).dropna()
    std = f"{v.std(ddof=1):.{digits}f}" if len(v) > 1 else "n/a"
    return f"{v.mean():.{digits}f} ± {std} over {len(v)} seed{'s' if len(v) != 1 else ''}"


DIFF_METRIC = "accuracy"  # what `differences` compares
TRIVIAL = "the most frequent training class"  # the trivial classifier (`majority_error`)


def scale_of(r: dict, variant: str, n_labelled: int, n_seeds: int) -> dict:
    """One row's facts beside the `paper` profile's (Tables 12, 13; seeds 69, 84, 1066) on the whole dataset:
    epochs of each training, seeds, labelled training series, model, the longest series' tokens, and for a dry
    run's generated series the dataset -> `report.scale`."""
    name, rc, full = r["name"], r["config"], r["full_stats"]
    paper = PROFILES["paper"]
    scratch, budget = variant.startswith("from scratch"), ", " in variant
    k = int(variant.split(", ")[1].split()[0]) if budget else None
    n_paper = full["n_train"] if k is None else min(full["n_train"], k * full["classes"])

    def epochs(c: UEARun, n_pre: int, n_ft: int) -> str:
        ft = f"fine-tuning {c.finetune_config(name, n_ft).epochs}"
        return ft if scratch else f"pre-training {c.pretrain_config(n_pre).epochs} + {ft}"

    ours_tokens = r["stats"]["max_len"] if rc.max_tokens is None else min(r["stats"]["max_len"], rc.max_tokens)
    fields = dict(epochs=(epochs(rc, r["stats"]["n_train"], n_labelled), epochs(paper, full["n_train"], n_paper)),
                  seeds=(n_seeds, len(paper.seeds)), data=(n_labelled, n_paper), model=(rc.encoder, paper.encoder),
                  resolution=(f"{ours_tokens} steps", f"{full['max_len']} steps"))
    if r["data"]["generated"]:
        fields["dataset"] = ("generated series (dry run)", name)
    return report.scale(**fields)


def loss_curves(histories: dict) -> list[list[float]]:
    """The logged training losses of one run's pre-training (if any) and fine-tuning, each in order."""
    curves = [report.loss_curve(histories.get(stage)) for stage in ("pretrain", "finetune")]
    return [c for c in curves if c]


def majority_error(data: dict) -> float:
    """Test error of the trivial classifier: always the most frequent class of the training file."""
    train, test = data["train"].tensors["labels"].numpy(), data["test"].tensors["labels"].numpy()
    return float((test != np.bincount(train).argmax()).mean())


def differences(r: dict, metric: str = DIFF_METRIC) -> pd.DataFrame:
    """Pre-trained minus from scratch for one dataset's run, paired by seed, for every labelled budget
    (`report.difference`): margin = one test series of accuracy (1 / the test series), the smallest difference a
    test set of this size can show. -> rows: dataset, labels, pre, scratch, diff, se, n, margin, verdict, flagged
    (the two trainings' loss flags, `report.loss_flags`: no conclusion from a flagged pair), text."""
    f, out = r["per_seed"], []
    grid = f.pivot(index="seed", columns="variant", values=metric)
    margin = 1.0 / len(r["data"]["test"])
    for pre in [v for v in grid.columns if v.startswith("pre-trained")]:
        scratch = pre.replace("pre-trained", "from scratch")
        if scratch not in grid:
            continue
        res = report.difference(grid[pre].to_numpy(), grid[scratch].to_numpy(), margin,
                                names=("pre-trained", "from scratch"))
        flagged = "; ".join(f"{v}: {r.get('flags', {}).get(v)}" for v in (pre, scratch) if r.get("flags", {}).get(v))
        out.append(dict(dataset=r["name"], labels="all labels" if pre == "pre-trained" else pre.split(", ", 1)[1],
                        pre=pre, scratch=scratch, **res, flagged=flagged, text=report.difference_text(res)))
    return pd.DataFrame(out, columns=["dataset", "labels", "pre", "scratch", "diff", "se", "n", "margin", "verdict",
                                      "flagged", "text"])


def pretraining_differences(res: dict) -> pd.DataFrame:
    """`differences` of every dataset of a run, for the notebook's table."""
    frames = [differences(r) for r in res["results"].values()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def comparison_table(results: dict, profile: str, encoder: str = "tiny") -> pd.DataFrame:
    """Table 6 as published (peers and the paper's RoMAE) beside ours (mean test accuracy over seeds;
    the stds are in the summary and the per-seed table) and the baselines on the same test series
    (`baseline_scores`): one column per dataset that ran, and only the published rows with a value in one."""
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    columns = [f"{name} ({runtime.DRY_LABEL})" if r["data"]["generated"] else name  # not beside the published values
               for name, r in results.items()]
    table = peers.pivot_table(index="model", columns="benchmark", values="value", sort=False).reindex(columns=columns)
    table = table.dropna(how="all")  # a peer without a value for any dataset that ran
    for (name, r), col in zip(results.items(), columns):
        for variant in r["per_seed"].variant.unique():
            f = r["per_seed"][r["per_seed"].variant == variant]
            table.loc[f"RoMAE-{encoder}, {variant} (ours, {profile}, mean of {len(f)} seeds)", col] = f.accuracy.mean()
        for (model, labels), g in r.get("baselines", pd.DataFrame(columns=["model", "labels"])).groupby(
                ["model", "labels"], sort=False):
            seeds = f", mean of {len(g)} seeds' labelled series" if g.seed.notna().any() else ""
            table.loc[f"{model}{'' if labels == 'all labels' else ', ' + labels} (ours, baseline{seeds})", col] = \
                g.accuracy.mean()
    return table.reset_index().rename(columns={"index": "model"})


# ----------------------------------------------------------------------------- figures

def plot_example(res: dict, name: str, channel: int = 0, n: int = 2):
    """A few training series: every step of one channel (line) and the steps kept after the drop (Table 6: 30 %)."""
    series, dropped = res["results"][name]["data"]["train_raw"]
    fig, axes = plt.subplots(n, 1, figsize=(10, 2.2 * n), sharex=True, squeeze=False)
    for i, ax in enumerate(axes[:, 0]):
        x, d = series[i][:, channel], dropped[i][:, channel]
        t = np.arange(len(x))
        ax.plot(t, x, color="0.7", lw=1, label="full series")
        kept = ~np.isnan(d)
        ax.plot(t[kept], d[kept], "o", ms=3, color="tab:blue", label=f"kept ({kept.sum()} of {len(x)} steps)")
        ax.set(ylabel=f"channel {channel}", title=f"{name}, training series {i}")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1, 0].set(xlabel="time step (= the token's position)")
    drop = res["results"][name]["config"].drop
    fig.suptitle(f"{name}: {_pct(drop)} of the steps dropped ({res['profile']} profile; an illustration of the data)")
    fig.tight_layout()
    return fig


def title_tag(res: dict) -> str:
    """'quick profile' or 'quick profile, reduced': the profile and the qualifiers of every row's scale facts."""
    return report.title_tag(res["profile"], *(fields for r in res["results"].values() for fields in r["scales"].values()))


def seed_colours(seeds) -> dict:
    """One colour per seed, the same in every figure of the notebook."""
    return {s: plt.get_cmap("tab10")(i % 10) for i, s in enumerate(sorted(seeds))}


def plot_accuracy(res: dict):
    """Test accuracy of every variant of every dataset: one colour per seed (points side by side, so equal
    values stay visible), the mean +- std over seeds in black, beside the paper's RoMAE and the best published
    peer of that dataset."""
    names = list(res["results"])
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    colours = seed_colours({s for r in res["results"].values() for s in r["per_seed"].seed})
    columns = [(name, v) for name in names for v in res["results"][name]["per_seed"].variant.unique()]
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(columns) + 2), 4.2))
    x0, ticks, centres = 0, [], []
    for name in names:
        f = res["results"][name]["per_seed"]
        variants = list(f.variant.unique())
        for k, variant in enumerate(variants):
            g = f[f.variant == variant].sort_values("seed")
            for i, (seed, acc) in enumerate(zip(g.seed, g.accuracy)):
                ax.plot(x0 + k + (i - (len(g) - 1) / 2) * 0.12, acc, "o", color=colours[seed], ms=6,
                        label=f"seed {seed}")
            if len(g) > 1:
                ax.errorbar(x0 + k + 0.3, g.accuracy.mean(), yerr=g.accuracy.std(ddof=1), fmt="_", color="k", ms=12,
                            capsize=3, label="mean +- std over seeds")
            else:  # one seed: no spread to draw
                ax.plot(x0 + k + 0.3, g.accuracy.mean(), "_", color="k", ms=12, label="mean (one seed: std n/a)")
            base = res["results"][name].get("baselines")
            if base is not None:  # 1-NN DTW with the same labelled series, on the same test series
                labels = variant.split(", ", 1)[1] if ", " in variant else "all labels"
                b = base[(base.model == "1-NN DTW") & (base.labels == labels)]
                if len(b):
                    ax.hlines(b.accuracy.mean(), x0 + k - 0.4, x0 + k + 0.4, colors="tab:red", linestyles=":",
                              label="1-NN DTW, same labels (baseline)")
        p = peers[peers.benchmark == name]
        if len(p):
            lo, hi = x0 - 0.4, x0 + len(variants) - 0.4
            ax.hlines(p[p.model.str.startswith("RoMAE")].value.iloc[0], lo, hi, colors="k", label="RoMAE (paper)")
            ax.hlines(p[~p.model.str.startswith("RoMAE")].value.max(), lo, hi, colors="0.6", linestyles="--",
                      label="best peer (published)")
        ticks += [x0 + k for k in range(len(variants))]
        centres.append(x0 + (len(variants) - 1) / 2)
        x0 += len(variants) + 0.6
    ax.set_xticks(ticks, [v.replace(" labelled per class", " per class").replace(", ", ",\n") for _, v in columns],
                  fontsize=7)
    top = ax.secondary_xaxis("top")  # the datasets, above their groups of variants
    top.set_xticks(centres, names, fontsize=9)
    ax.set(ylabel="test accuracy")
    ax.set_title(f"Table 6: accuracy per seed ({title_tag(res)})", pad=22)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


def plot_learning_curves(res: dict, name: str):
    """Pre-training loss (left) and fine-tuning loss (right) against step: one colour per seed; fine-tuning of
    the pre-trained classifier solid, from scratch dashed (all labels)."""
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    hist = {k: h for k, h in res["results"][name]["histories"].items() if "labelled" not in k[0]}
    colours = seed_colours({seed for _, seed in hist})
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 3.8))
    for (variant, seed), h in hist.items():
        if h["pretrain"]:
            p = pd.DataFrame(h["pretrain"]).dropna(subset=["loss"])
            a.plot(p.step, p.loss, color=colours[seed], marker="o" if len(p) < 5 else None, label=f"seed {seed}")
        f = pd.DataFrame(h["finetune"]).dropna(subset=["loss"])
        b.plot(f.step, f.loss, color=colours[seed], ls="-" if variant == "pre-trained" else "--", alpha=0.85,
               marker="o" if len(f) < 5 else None, label=f"{variant}, seed {seed}")
    tag = title_tag(res)
    a.set(xlabel="step", ylabel="masked-token MSE (standardised)", title=f"{name}: pre-training ({tag})")
    b.set(xlabel="step", ylabel="cross-entropy", yscale="log", title=f"{name}: fine-tuning ({tag})")
    lo, hi = b.get_ylim()
    if hi / lo < 10:  # under a decade the log axis has no major label: label the minor ticks instead
        b.yaxis.set_minor_formatter(FormatStrFormatter("%.3g"))
    else:  # over several decades labelled minor ticks overprint each other: decades only
        b.yaxis.set_minor_formatter(NullFormatter())
    a.legend(fontsize=7, loc="best")
    b.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig
