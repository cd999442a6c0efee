"""Pendulum regression (Sec. 5.4, Table 5): the angle of a damped pendulum from 50 irregularly kept,
noisy 24x24 frames.

Data: `romae.data.pendulum` (our implementation of the S5/CRU procedure): 2,000 / 1,000 / 1,000
sequences of 100 frames, 50 kept per sequence. Model: Table 14's custom size (d_model 60, 2 heads,
2 blocks, FFN 30), no pre-training; one token per kept frame (patch 1 x 24 x 24, token_dim 576), 1-D
positions = the kept frame numbers (0-99), [CLS] on. Targets: sin and cos of the noise-free angle of
every kept frame. Training: Table 15 (AdamW (0.9, 0.999), wd 0.01, lr 3e-4, batch 16, 50 epochs,
warm-up 1,000, clip 1, cosine).

Head. `head="tokens"` (default): one linear head on every frame token predicts that frame's (sin, cos).
`head="cls"`: the authors' code, one linear layer 60 -> 100 on the [CLS] output reshaped to 50 x 2.

Metric: the S5/CRU convention, the mean squared error per element over the test set (1,000 sequences
x 50 frames x 2 outputs), quoted x 1e-3. The authors' script logged the total squared error over the
1,000 test sequences x 1e-3 instead, i.e. the per-sequence sum over 100 outputs averaged over
sequences, which is 100 x the per-element MSE; we report it too (`authors_logged`).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from .. import plan, runtime
from ..config import RoMAEConfig, TrainConfig, check_profile, size
from ..data import pendulum as P
from ..model import RoMAEForPrediction
from ..reference import peer_values
from ..report import record, save_table
from ..train import fit_cached

EXPERIMENT = "table5_pendulum"
AUTHORS_NORM = (0.002, 0.0021)  # the authors' fixed pixel mean / std (a faulty statistics routine)


@dataclass(frozen=True)
class PendulumRun:
    """One profile. Defaults = the `paper` profile (Tables 14, 15)."""

    size: str = "pendulum"  # Table 14: 60 / 2 heads / 2 blocks / FFN 30
    head: str = "tokens"  # tokens (ours) | cls (the authors' [CLS] -> 100 outputs)
    pixel_norm: str = "train"  # train: standardise with the training set's pixel mean/std | authors
    epochs: int = 50  # Table 15
    batch_size: int = 16
    lr: float = 3e-4
    warmup_steps: int = 1000
    grad_clip: float | None = 1.0  # Table 15 (the authors' script did not clip)
    weight_decay: float = 0.01
    seeds: tuple[int, ...] = tuple(range(42, 62))  # 20 seeds, as the authors (42-61)
    data: P.PendulumConfig = field(default_factory=P.PendulumConfig)
    authors_variant: bool = True  # also train the authors' configuration (`authors_variant`) on the same seeds
    eval_batch: int = 500
    progress: bool = True

    def __post_init__(self):
        if self.head not in ("tokens", "cls"):
            raise ValueError(f"head must be 'tokens' or 'cls', got {self.head!r}")
        if self.pixel_norm not in ("train", "authors"):
            raise ValueError(f"pixel_norm must be 'train' or 'authors', got {self.pixel_norm!r}")

    def model_config(self) -> RoMAEConfig:
        S, K = self.data.img_size, int(self.data.sample_rate * self.data.T)
        return RoMAEConfig(token_dim=S * S, n_axes=1, encoder=size(self.size), use_cls=True, head=self.head,
                           n_outputs=2 if self.head == "tokens" else 2 * K, task="regression")

    def train_config(self, seed: int) -> TrainConfig:
        return TrainConfig(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr,
                           warmup_steps=self.warmup_steps, grad_clip=self.grad_clip,
                           weight_decay=self.weight_decay, seed=seed, progress=self.progress, log_every=125)


PROFILES = {
    "paper": PendulumRun(),
    # full data and schedule, 3 seeds (the paper: 20)
    "quick": PendulumRun(seeds=(42, 43, 44)),
    # seconds: 64 / 32 / 32 sequences, 2 epochs, one seed
    "smoke": PendulumRun(epochs=2, warmup_steps=4, seeds=(42,), progress=False, authors_variant=False,
                         data=P.PendulumConfig(n_train=64, n_valid=32, n_test=32)),
}


def config(profile: str) -> PendulumRun:
    """The settings of a profile (smoke | quick | paper); raises ValueError on an unknown name."""
    return PROFILES[check_profile(profile)]


def tensors(split: dict, mean: float, std: float) -> dict:
    """Subsampled split -> values [n, K, S*S] standardised pixels, positions [n, 1, K], labels [n, K, 2]."""
    n, K = split["images"].shape[:2]
    values = (torch.as_tensor(split["images"]).reshape(n, K, -1).float() / 255 - mean) / std
    return dict(values=values, positions=torch.as_tensor(split["times"]).unsqueeze(1),
                labels=torch.as_tensor(split["targets"]))


def pixel_stats(run: PendulumRun, train_images: np.ndarray) -> tuple[float, float]:
    if run.pixel_norm == "authors":
        return AUTHORS_NORM
    x = train_images.astype(np.float64) / 255
    return float(x.mean()), float(x.std())


@torch.no_grad()
def predict(model: RoMAEForPrediction, data: dict, batch: int = 500) -> torch.Tensor:
    """-> predicted (sin, cos) [n, K, 2]."""
    out = [model(data["values"][i:i + batch], data["positions"][i:i + batch])[0]
           for i in range(0, len(data["values"]), batch)]
    return torch.cat(out).reshape(data["labels"].shape)


def train_seed(run: PendulumRun, seed: int, data: dict, cache_dir=None, refresh=False, checkpoints=False,
               profile: str = "") -> dict:
    """Train one seed (cached) -> {state_dict, history, steps, seconds}."""
    key = dict(data=dataclasses.asdict(run.data), pixel_norm=run.pixel_norm)
    train = plan.fit_memory(run.train_config(seed), run.model_config(), data["values"].shape[1], "finetune", profile)
    return fit_cached("pendulum_model", RoMAEForPrediction, run.model_config(), data, train,
                      key, seed=seed, cache_dir=cache_dir, refresh=refresh, checkpoints=checkpoints)


def paper_trainings() -> list[plan.Training]:
    """Notebook 14's paper trainings (`romae.plan`): ours and the authors' configuration, every seed."""
    return [plan.Training(f"pendulum, {label}", "finetune", c.model_config(), c.train_config(c.seeds[0]),
                          int(c.data.sample_rate * c.data.T), c.data.n_train, runs=len(c.seeds), source="Table 15")
            for label, c in variants(config("paper"))]


def variants(cfg: PendulumRun) -> list[tuple[str, PendulumRun]]:
    """(label, configuration) of every variant a run trains: ours, and the authors' if cfg.authors_variant."""
    return [("ours", cfg)] + ([("authors' configuration", authors_variant(cfg))] if cfg.authors_variant else [])


def authors_variant(run: PendulumRun) -> PendulumRun:
    """The authors' script: [CLS] -> 100 outputs, their pixel constants, no gradient clipping."""
    return dataclasses.replace(run, head="cls", pixel_norm="authors", grad_clip=None, authors_variant=False)


def _run_variant(cfg: PendulumRun, splits: dict, stats: tuple[float, float], cache_dir, refresh,
                 checkpoints, profile: str = "") -> tuple[pd.DataFrame, dict, dict]:
    """Train every seed of one configuration on pixels standardised with `stats` and score it
    -> (per-seed rows, test predictions, histories)."""
    train, valid, test = (tensors(splits[s], *stats) for s in ("train", "valid", "test"))
    rows, preds, histories = [], {}, {}
    for seed in cfg.seeds:
        trained = train_seed(cfg, seed, train, cache_dir, refresh, checkpoints, profile)
        model = RoMAEForPrediction(cfg.model_config())
        model.load_state_dict(trained["state_dict"])
        model.eval()
        row = dict(seed=seed, steps=trained["steps"], train_seconds=trained["seconds"])
        for name, d in (("valid", valid), ("test", test)):
            pred = predict(model, d, cfg.eval_batch)
            err = (pred - d["labels"]).pow(2)  # [n, K, 2]
            row[f"{name}_mse_x1e-3"] = err.mean().item() * 1e3  # S5/CRU: per element
        # the authors' log: total squared error over the 1,000 test sequences x 1e-3, i.e. the per-sequence
        # sum over 50 x 2 outputs averaged over sequences (also right for test sets of other sizes)
        row["test_authors_logged"] = err.sum((1, 2)).mean().item()
        preds[seed] = pred.numpy()
        rows.append(row)
        histories[seed] = pd.DataFrame(trained["history"])
    return pd.DataFrame(rows), preds, histories


def run(profile: str = "smoke", reports_dir=None, cache_dir=None, refresh: bool = False,
        checkpoints: bool | None = None) -> dict:
    """Generate (cached), train every seed (cached), evaluate, record rows, save `table5_pendulum`.

    With cfg.authors_variant the authors' configuration (`authors_variant`) is trained on the same
    seeds too; its rows carry the prefix "authors' configuration".
    """
    cfg = config(profile)
    if runtime.dry_run():  # the first seed, a few generated sequences per split (same frames, image size, sampling)
        cfg = dataclasses.replace(cfg, seeds=runtime.dry_seeds(cfg.seeds), data=dataclasses.replace(
            cfg.data, **{k: runtime.dry_count(getattr(cfg.data, k)) for k in ("n_train", "n_valid", "n_test")}))
    checkpoints = profile != "smoke" if checkpoints is None else checkpoints
    t0 = time.perf_counter()
    splits = P.load(cfg.data, cache_dir=cache_dir)
    data_seconds = time.perf_counter() - t0
    train_stats = pixel_stats(cfg, splits["train"]["images"])  # one pass over the training pixels
    frames, out = [], {}
    for label, vcfg in variants(cfg):
        stats = train_stats if vcfg.pixel_norm == cfg.pixel_norm else pixel_stats(vcfg, splits["train"]["images"])
        per_seed, preds, histories = _run_variant(vcfg, splits, stats, cache_dir, refresh, checkpoints, profile)
        frames.append(per_seed.assign(variant=label))
        out[label] = dict(config=vcfg, per_seed=per_seed, preds=preds, histories=histories)
        prefix = "" if label == "ours" else f"{label}: "
        n = len(per_seed)
        note = (f"{vcfg.data.n_train} train sequences, {vcfg.epochs} epochs, head {vcfg.head}, pixel norm "
                f"{vcfg.pixel_norm}, clip {vcfg.grad_clip}; mean +- std over {n} seed(s)")
        for setting, metric, col in (("test MSE, per element", "mse_x1e-3", "test_mse_x1e-3"),
                                     ("test, authors' logged metric", "sum_per_sequence", "test_authors_logged")):
            record(EXPERIMENT, prefix + setting, metric, float(per_seed[col].mean()),
                   ours_std=float(per_seed[col].std(ddof=1)) if n > 1 else None, n_seeds=n, profile=profile,
                   note=note, reports_dir=reports_dir)
    peers = pd.DataFrame(peer_values(EXPERIMENT))[["model", "metric", "value", "std", "source"]]
    ours = [dict(model="RoMAE (ours)" if label == "ours" else f"RoMAE, {label} (ours)", metric=metric,
                 value=float(f[col].mean()), std=float(f[col].std(ddof=1)) if len(f) > 1 else None,
                 source=f"this run ({profile}, {len(f)} seeds)")
            for (label, _), f in zip(variants(cfg), frames)
            for metric, col in (("mse_x1e-3", "test_mse_x1e-3"), ("sum_per_sequence", "test_authors_logged"))]
    table = pd.concat([peers, pd.DataFrame(ours)], ignore_index=True)
    per_seed = pd.concat(frames, ignore_index=True)
    save_table(table, EXPERIMENT, reports_dir)
    save_table(per_seed, f"{EXPERIMENT}_per_seed", reports_dir)
    main = out["ours"]
    return dict(config=cfg, per_seed=per_seed, table=table, preds=main["preds"], histories=main["histories"],
                variants=out, test=splits["test"], data_seconds=data_seconds, pixel_stats=train_stats)


# ----------------------------------------------------------------------------- figures

def plot_predictions(res: dict, n_seq: int = 3):
    """Predicted vs true angle (atan2 of sin, cos) over the kept frames of a few test sequences, with
    the frames themselves for the first one."""
    test, seed = res["test"], next(iter(res["preds"]))
    pred = res["preds"][seed]
    fig = plt.figure(figsize=(12, 2.2 + 2.6 * n_seq))
    grid = fig.add_gridspec(n_seq + 1, 1, height_ratios=[0.8] + [1] * n_seq)
    strip = fig.add_subplot(grid[0])
    frames = test["images"][0][::5]  # every 5th kept frame of sequence 0
    strip.imshow(np.concatenate(list(frames), axis=1), cmap="gray", vmin=0, vmax=255)
    strip.set(title=f"test sequence 0: every 5th of its 50 kept frames (frame numbers {test['times'][0][::5].astype(int).tolist()})",
              xticks=[], yticks=[])
    for i in range(n_seq):
        ax = fig.add_subplot(grid[i + 1])
        t = test["times"][i]
        true = np.arctan2(test["targets"][i][:, 0], test["targets"][i][:, 1])
        est = np.arctan2(pred[i][:, 0], pred[i][:, 1])
        ax.plot(t, true, "k.-", lw=1, label="true angle")
        ax.plot(t, est, "o", mfc="none", color="tab:red", label=f"RoMAE (seed {seed})")
        ax.set(ylabel="angle [rad]", ylim=(-np.pi - 0.3, np.pi + 0.3), title=f"test sequence {i}")
        if i == n_seq - 1:
            ax.set(xlabel="frame number")
        ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def plot_learning_curves(res: dict):
    fig, ax = plt.subplots(figsize=(7, 4))
    for seed, h in res["histories"].items():
        if "loss" in h:
            h = h.dropna(subset=["loss"])
            ax.plot(h.step, h.loss, label=f"seed {seed}")
    ax.set(xlabel="step", ylabel="training MSE per element", yscale="log", title="Pendulum: training loss")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return fig
