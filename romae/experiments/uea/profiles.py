"""Notebook 12's shared protocol: Table 12's fine-tuning, Table 13's pre-training, the profiles and the
protocol parameters (`overrides`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...config import SIZES, RoMAEConfig, TrainConfig, as_list, check_profile, size
from ...data import uea
from ...data.catalog import Need


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
