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

Any multivariate (or univariate) UEA/UCR dataset under `<data>/uea/<Name>/` runs: datasets outside
Table 12 get `DEFAULT_FINETUNE` (ours, said in every note).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..builders import from_sequences
from ..config import RoMAEConfig, TrainConfig, check_profile, size
from ..data import files, uea
from ..recipe import plot_learning_curves as plot_histories, pretrain_finetune
from ..reference import peer_values
from ..report import record, save_table

EXPERIMENT = "table6_uea"
DROP_SEED = 56789  # Kidger et al.'s generator seed for the irregular UEA drop


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


@dataclass(frozen=True)
class UEARun:
    """One profile. Defaults = the `paper` profile (Tables 12, 13)."""

    datasets: tuple[str, ...] = uea.TABLE6
    seeds: tuple[int, ...] = (69, 84, 1066)  # the authors'
    drop: float = 0.3  # share of each series' time steps removed (Kidger et al.)
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

    def _epochs(self, epochs: int, n: int, batch: int) -> int:
        if self.max_steps is None:
            return epochs
        return max(1, min(epochs, self.max_steps // -(-n // batch)))

    def pretrain_config(self, n_train: int) -> TrainConfig:
        batch = min(self.pretrain_batch, n_train)
        return TrainConfig(epochs=self._epochs(self.pretrain_epochs, n_train, batch), batch_size=batch,
                           lr=self.pretrain_lr, betas=(0.9, 0.95), weight_decay=0.05, warmup_fraction=0.1,
                           grad_clip=1.0, progress=self.progress, log_every=10)

    def finetune_config(self, name: str, n_train: int) -> TrainConfig:
        ft = self.finetune(name)
        batch = min(ft.batch_size, n_train)
        return TrainConfig(epochs=self._epochs(ft.epochs, n_train, batch), batch_size=batch, lr=ft.lr,
                           optimizer="sgd", momentum=0.9, weight_decay=0.0, warmup_fraction=0.1,
                           grad_clip=ft.clip, progress=self.progress, log_every=5)


PROFILES = {
    "paper": UEARun(),
    # the paper's settings; a dataset larger than BasicMotions has each training capped at 1,500 steps
    "quick": UEARun(max_steps=1500),
    # seconds: <= 24 series of <= 48 steps per split, tiny-shallow, 2 + 2 epochs, one seed
    "smoke": UEARun(seeds=(69,), encoder="tiny-shallow", pretrain_epochs=2, finetune_epochs=2, max_series=24,
                    max_length=48, progress=False),
}


def config(profile: str, datasets=None) -> UEARun:
    """The settings of a profile, optionally for other datasets; raises ValueError on an unknown profile."""
    cfg = PROFILES[check_profile(profile)]
    if datasets is not None:
        if isinstance(datasets, str) or not all(isinstance(d, str) and d for d in datasets):
            raise ValueError(f"datasets must be a list of UEA dataset names, got {datasets!r}")
        cfg = dataclasses.replace(cfg, datasets=tuple(datasets))
    return cfg


def find(datasets, root=None) -> tuple[list[str], list[str], str]:
    """-> (found, missing, message): which datasets are under <data>/uea/, and how to get the others."""
    try:
        base = files.data_root(root)
    except FileNotFoundError as e:
        return [], list(datasets), str(e)
    have = set(uea.available(base))
    found = [d for d in datasets if d in have]
    missing = [d for d in datasets if d not in have]
    msg = ""
    if missing:
        msg = (f"not under {base / 'uea'}: {', '.join(missing)}. Get one with "
               f"romae.data.uea.load(name, download=True) (needs internet; from "
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


def _subset(split: uea.TSData, cfg: UEARun, seed: int) -> tuple[list, list | None, np.ndarray]:
    """(series, times, labels) of a split, reduced for the smoke profile."""
    n = len(split.series)
    idx = np.arange(n)
    if cfg.max_series is not None and n > cfg.max_series:
        idx = np.sort(np.random.default_rng(seed).choice(n, cfg.max_series, replace=False))
    series = [split.series[i][: cfg.max_length] for i in idx]
    times = None if split.times is None else [split.times[i][: cfg.max_length] for i in idx]
    return series, times, split.labels[idx]


def build(name: str, cfg: UEARun, root=None) -> dict:
    """Load a dataset, drop 30 % of every series' steps (train and test alike) -> token datasets."""
    raw = uea.load(name, root)
    if raw["train"].labels is None or not raw["classes"]:
        raise ValueError(f"{name} has no class labels: Table 6 is classification")
    out = {}
    for split, seed in (("train", 1), ("test", 2)):
        series, times, labels = _subset(raw[split], cfg, seed)
        # one generator per split, seeded from DROP_SEED: the same drop every run, independent of the model seed
        dropped = drop_steps(series, cfg.drop, DROP_SEED + seed)
        like = out.get("train")
        out[split] = from_sequences(dropped, times=times, labels=labels, like=like, standardize=cfg.standardize,
                                    classes=raw["classes"] if like is None else None)
        out[f"{split}_raw"] = (series, dropped)
    root_ = files.data_root(root)
    out["sha256"] = [files.sha256(root_ / "uea" / name / f"{name}_{s}.ts") for s in ("TRAIN", "TEST")]
    out["classes"] = raw["classes"]
    return out


def run_dataset(name: str, cfg: UEARun, profile: str, root=None, cache_dir=None, refresh=False) -> dict:
    """Pre-train + fine-tune (and from scratch) every seed on one dataset -> per-seed rows and histories."""
    t0 = time.perf_counter()
    data = build(name, cfg, root)
    train, test = data["train"], data["test"]
    key = dict(dataset=name, sha256=data["sha256"], drop=cfg.drop, drop_seed=DROP_SEED, standardize=cfg.standardize,
               max_series=cfg.max_series, max_length=cfg.max_length)
    model_cfg = cfg.model_config(train.token_dim)
    ft = cfg.finetune(name)
    variants = [("pre-trained", cfg.pretrain_config(len(train)))] + ([("from scratch", None)] if cfg.from_scratch else [])
    rows, histories = [], {}
    for seed in cfg.seeds:
        for k in (None, *cfg.label_budgets):  # None: every training series is labelled
            labelled = train if k is None else labelled_subset(train, k, seed)
            for variant, pretrain in variants:
                res = pretrain_finetune(
                    f"uea_{name}", labelled, test, model_cfg, finetune=cfg.finetune_config(name, len(labelled)),
                    pretrain=pretrain, n_outputs=len(data["classes"]), seed=seed, key=key, pretrain_data=train,
                    finetune_key=None if k is None else dict(labelled_ids=labelled.ids),
                    dropout=ft.dropout, drop_path=ft.drop_path,
                    head_overrides=dict(label_smoothing=round(1.0 - ft.confidence, 6), head_dropout=ft.dropout),
                    cache_dir=cache_dir, refresh=refresh, checkpoints=profile != "smoke")
                label = variant if k is None else f"{variant}, {k} labelled per class"
                rows.append(dict(dataset=name, variant=label, seed=seed, n_labelled=len(labelled), **res["metrics"],
                                 pretrain_steps=res["steps"]["pretrain"], finetune_steps=res["steps"]["finetune"],
                                 pretrain_seconds=res["seconds"]["pretrain"], finetune_seconds=res["seconds"]["finetune"]))
                histories[(label, seed)] = dict(pretrain=res["pretrain_history"], finetune=res["finetune_history"])
    return dict(name=name, data=data, per_seed=pd.DataFrame(rows), histories=histories,
                table12=name in TABLE12, seconds=time.perf_counter() - t0,
                pretrain=cfg.pretrain_config(len(train)), finetune=cfg.finetune_config(name, len(train)))


def labelled_subset(train, k: int, seed: int):
    """k training series per class (all of a class with fewer), drawn with `seed`: the labelled data of
    the label-scarce variants."""
    rng = np.random.default_rng(seed)
    labels = train.tensors["labels"].numpy()
    idx = np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:k] for c in np.unique(labels)])
    return train.subset(np.sort(idx))


def _note(r: dict, cfg: UEARun) -> str:
    d, pre, ft = r["data"], r["pretrain"], r["finetune"]
    capped = []
    if pre.epochs < cfg.pretrain_epochs:
        capped.append(f"pre-training {pre.epochs} of {cfg.pretrain_epochs} epochs")
    if ft.epochs < cfg.finetune(r["name"]).epochs:
        capped.append(f"fine-tuning {ft.epochs} of {cfg.finetune(r['name']).epochs} epochs")
    return (f"{len(d['train'])} train / {len(d['test'])} test series, {int(cfg.drop * 100)} % of steps dropped; "
            f"RoMAE-{cfg.encoder}; pre-training {pre.epochs} epochs, fine-tuning {ft.epochs} epochs "
            f"({'Table 12' if r['table12'] else 'DEFAULT_FINETUNE: not in Table 12'}); model after the last epoch, "
            f"no selection on the test file" + (f"; REDUCED: {', '.join(capped)}" if capped else ""))


def run(profile: str = "smoke", datasets=None, data_root=None, reports_dir=None, cache_dir=None,
        refresh: bool = False) -> dict:
    """Run every dataset found (of `datasets`, default Table 6's five), record rows, save the table."""
    cfg = config(profile, datasets)
    found, missing, message = find(cfg.datasets, data_root)
    results = {}
    for name in found:
        r = results[name] = run_dataset(name, cfg, profile, data_root, cache_dir, refresh)
        for variant in r["per_seed"].variant.unique():
            f = r["per_seed"][r["per_seed"].variant == variant]
            # settings: "<name>" (paper row), "<name>, from scratch", "<name>, 2 labelled per class, pre-trained", ...
            head, _, budget = variant.partition(", ")
            setting = ", ".join([name] + ([budget] if budget else []) + ([head] if head != "pre-trained" or budget else []))
            note = _note(r, cfg) + (f"; fine-tuned on {int(f.n_labelled.iloc[0])} labelled series" if budget else "")
            for metric in ("accuracy", "macro_f1"):
                n = len(f)
                record(EXPERIMENT, setting, metric, float(f[metric].mean()),
                       ours_std=float(f[metric].std(ddof=1)) if n > 1 else None, n_seeds=n, profile=profile,
                       note=note, reports_dir=reports_dir)
    per_seed = pd.concat([r["per_seed"] for r in results.values()], ignore_index=True) if results else pd.DataFrame()
    table = comparison_table(results, profile, cfg.encoder)
    if results:
        save_table(table, EXPERIMENT, reports_dir)
        save_table(per_seed, f"{EXPERIMENT}_per_seed", reports_dir)
    return dict(config=cfg, found=found, missing=missing, message=message, results=results, per_seed=per_seed,
                table=table)


def comparison_table(results: dict, profile: str, encoder: str = "tiny") -> pd.DataFrame:
    """Table 6 as published (peers and the paper's RoMAE) beside ours (mean test accuracy over seeds;
    the stds are in the summary and the per-seed table): one column per dataset."""
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    datasets = list(dict.fromkeys(list(peers.benchmark) + list(results)))
    table = peers.pivot_table(index="model", columns="benchmark", values="value", sort=False).reindex(columns=datasets)
    for name, r in results.items():
        for variant in r["per_seed"].variant.unique():
            f = r["per_seed"][r["per_seed"].variant == variant]
            table.loc[f"RoMAE-{encoder}, {variant} (ours, {profile}, mean of {len(f)} seeds)", name] = f.accuracy.mean()
    return table.reset_index().rename(columns={"index": "model"})


# ----------------------------------------------------------------------------- figures

def plot_example(res: dict, name: str, channel: int = 0, n: int = 2):
    """A few training series: every step of one channel (line) and the steps kept after the 30 % drop."""
    series, dropped = res["results"][name]["data"]["train_raw"]
    fig, axes = plt.subplots(n, 1, figsize=(10, 2.2 * n), sharex=True, squeeze=False)
    for i, ax in enumerate(axes[:, 0]):
        x, d = series[i][:, channel], dropped[i][:, channel]
        t = np.arange(len(x))
        ax.plot(t, x, color="0.7", lw=1, label="full series")
        kept = ~np.isnan(d)
        ax.plot(t[kept], d[kept], "o", ms=3, color="tab:blue", label=f"kept ({kept.sum()} of {len(x)} steps)")
        ax.set(ylabel=f"channel {channel}", title=f"{name}, training series {i}")
        ax.legend(fontsize=8, loc="upper right")
    axes[-1, 0].set(xlabel="time step (= the token's position)")
    fig.tight_layout()
    return fig


def plot_accuracy(res: dict):
    """Test accuracy per seed of every variant (circles: all labels; squares: label-scarce), beside the
    paper's RoMAE and the best published peer."""
    names = list(res["results"])
    fig, ax = plt.subplots(figsize=(max(5, 2.6 * len(names)), 3.8))
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    for j, name in enumerate(names):
        f = res["results"][name]["per_seed"]
        variants = list(f.variant.unique())
        for k, variant in enumerate(variants):
            v = f[f.variant == variant].accuracy
            x = j + (k - (len(variants) - 1) / 2) * 0.6 / max(len(variants), 1)
            ax.plot(np.full(len(v), x), v, "o" if "labelled" not in variant else "s", mfc="none",
                    color="tab:blue" if variant.startswith("pre-trained") else "tab:orange",
                    alpha=1.0 if "labelled" not in variant else 0.6, label=variant if j == 0 else None)
        p = peers[peers.benchmark == name]
        if len(p):
            paper = p[p.model.str.startswith("RoMAE")].value.iloc[0]
            best = p[~p.model.str.startswith("RoMAE")].value.max()
            ax.hlines(paper, j - 0.4, j + 0.4, colors="k", label="RoMAE (paper)" if j == 0 else None)
            ax.hlines(best, j - 0.4, j + 0.4, colors="0.6", linestyles="--", label="best peer (published)" if j == 0 else None)
    ax.set(xticks=range(len(names)), xticklabels=names, ylabel="test accuracy", title="Table 6: accuracy per seed")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


def plot_learning_curves(res: dict, name: str):
    """Pre-training loss and fine-tuning loss (pre-trained vs from scratch) against step, one line per seed."""
    runs = [dict(pretrain=h["pretrain"], finetune=h["finetune"], pretrain_label=f"seed {seed}",
                 finetune_label=f"{variant}, seed {seed}",
                 color="tab:blue" if variant == "pre-trained" else "tab:orange")
            for (variant, seed), h in res["results"][name]["histories"].items() if "labelled" not in variant]
    return plot_histories(runs, pretrain_ylabel="masked-token MSE (standardised)", finetune_ylabel="cross-entropy",
                          yscale=("linear", "log"), titles=(f"{name}: pre-training", f"{name}: fine-tuning"))
