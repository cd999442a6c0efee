"""Spiral and Synthetic interpolation (Sec. 5.5, Table 7, Figures 7 and 8).

Both are MAE-style interpolation: the observed points are the visible tokens, the rest are hidden and
reconstructed by `RoMAEForPreTraining`, trained end to end (no fine-tuning) with the MSE on the hidden
points against the noisy values.

* Spiral (`romae.data.spiral`): one token per time step holding (x, y) (patch (1, 2), token_dim 2),
  1-D positions = the spiral's angle grid t in [0, 9.36], no [CLS] (App. D.7). A fresh 45-of-75 mask
  per training item; evaluation over `n_trials` re-seeded trials of the 100 test spirals, RMSE on the
  hidden points against the clean curves (the only reading under which the paper's 0.0183 is possible
  with noise 0.1) and against the noisy values, plus the authors' notebook formula.
* Synthetic (`romae.data.synthetic`): one token per point (token_dim 1), positions t in (0, 1] (the
  authors; `quick` scales them by 50 to the grid index, see notebook 15), no [CLS]; 3-10 observed points per series (variable counts are padded to equal mask sizes with
  `romae.masking.pad_observed`); test MSE on the unobserved points against the noisy values (mean over
  series of the per-series MSE, as the authors), for the 3-10 mixture and for exactly 3, 10 and 20.

Trained models and evaluations are cached by config (`romae.cache`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from .. import plan, runtime
from ..cache import cached
from ..config import RoMAEConfig, TrainConfig, check_profile, size
from ..data import spiral as S
from ..data import synthetic as Y
from ..masking import pad_observed
from ..model import RoMAEForPreTraining
from ..reference import peer_values
from ..report import record, save_table
from ..train import fit_cached

EXPERIMENT = "table7_interpolation"


@dataclass(frozen=True)
class RunConfig:
    """One model family. Defaults are Spiral's Table 19; `synthetic_paper` sets Table 20."""

    encoder: str = "tiny"  # RoMAE-tiny (Tables 19, 20)
    decoder: str = "tiny-shallow"  # App. A.1 (the authors' Spiral/Synthetic runs used a 12-block tiny decoder)
    epochs: int = 500
    batch_size: int = 32
    lr: float = 3e-4
    warmup_steps: int = 2000
    grad_clip: float | None = 1.0
    weight_decay: float = 0.01
    seeds: tuple[int, ...] = (0,)
    position_scale: float = 1.0  # positions = grid value x scale (1 = the authors' raw positions)
    mask_token_init: str = "zeros"  # RoMAEConfig.mask_token_init: zeros (the authors') | normal (MAE's N(0, 0.02))
    progress: bool = True

    def train_config(self, seed: int) -> TrainConfig:
        return TrainConfig(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr,
                           warmup_steps=self.warmup_steps, grad_clip=self.grad_clip,
                           weight_decay=self.weight_decay, seed=seed, progress=self.progress, log_every=20)


@dataclass(frozen=True)
class InterpolationProfile:
    spiral: RunConfig = RunConfig()
    spiral_data: S.SpiralConfig = S.SpiralConfig()
    n_trials: int = 10  # App. D.7: 10 evaluation trials
    synthetic: RunConfig = RunConfig(epochs=50, batch_size=8, lr=1e-3, warmup_steps=200, seeds=(0, 1, 2, 3, 4))
    synthetic_data: Y.SyntheticConfig = Y.SyntheticConfig()
    eval_n_obs: tuple[int, ...] = (3, 10, 20)  # Figure 8
    eval_batch: int = 256


PROFILES = {
    # Tables 19 and 20: Spiral 500 epochs x 7 steps (3,500 steps), Synthetic 50 epochs x 200 steps x 5 seeds
    "paper": InterpolationProfile(),
    # the quick CPU budget (~20 min for both at the measured 2.9 Spiral / 13.5 Synthetic steps/s):
    # Spiral: App. D.7's text schedule, 400 epochs (2,800 steps) at lr 1e-3, warm-up 200;
    # Synthetic: 10 epochs (2,000 steps) x 2 seeds, positions t x 50 = the grid index (raw t in (0, 1]
    # left one of two seeds at the loss of predicting zero in our first quick run)
    "quick": InterpolationProfile(
        spiral=RunConfig(epochs=400, lr=1e-3, warmup_steps=200),
        synthetic=RunConfig(epochs=10, batch_size=8, lr=1e-3, warmup_steps=200, seeds=(0, 1), position_scale=50.0)),
    # seconds, for CI / nbval: 2-block encoder, a few steps, 2 trials, 200 synthetic series
    "smoke": InterpolationProfile(
        spiral=RunConfig(encoder="tiny-shallow", epochs=1, warmup_steps=2, progress=False),
        n_trials=2,
        synthetic=RunConfig(encoder="tiny-shallow", epochs=1, batch_size=8, lr=1e-3, warmup_steps=2,
                            seeds=(0,), progress=False),
        synthetic_data=Y.SyntheticConfig(n=200)),
}


def config(profile: str) -> InterpolationProfile:
    """The settings of a profile (smoke | quick | paper); raises ValueError on an unknown name."""
    return PROFILES[check_profile(profile)]


# ----------------------------------------------------------------------------- training

def model_config(run: RunConfig, token_dim: int, mask_ratio: float = 0.75) -> RoMAEConfig:
    return RoMAEConfig(token_dim=token_dim, n_axes=1, encoder=size(run.encoder), decoder=size(run.decoder),
                       use_cls=False, mask_ratio=mask_ratio, mask_token_init=run.mask_token_init)


def _seeds(name: str, run: RunConfig, mcfg: RoMAEConfig, train: dict, data_cfg, evaluate, prof, cache_dir,
           refresh, checkpoints, profile: str = "") -> list[dict]:
    """Train (cached) one model per seed of `run` and evaluate it (cached): evaluate(model) -> dict."""
    out = []
    hidden = float(train["mask"][0].float().mean()) if "mask" in train else None  # masks the data gives
    for seed in runtime.dry_seeds(run.seeds):  # a dry run: the first seed
        train_cfg = plan.fit_memory(run.train_config(seed), mcfg, train["values"].shape[1], "pretrain", profile, hidden)
        trained = fit_cached(f"{name}_model", RoMAEForPreTraining, mcfg, train, train_cfg,
                             dict(data=dataclasses.asdict(data_cfg), position_scale=run.position_scale),
                             seed=seed, cache_dir=cache_dir, refresh=refresh, checkpoints=checkpoints)
        ev = cached(f"{name}_eval", dict(prof=dataclasses.asdict(prof), seed=seed, steps=trained["steps"]),
                    lambda: evaluate(_load(mcfg, trained)), cache_dir=cache_dir, refresh=refresh)
        out.append(dict(seed=seed, **ev, history=pd.DataFrame(trained["history"]), seconds=trained["seconds"],
                        steps=trained["steps"]))
    return out


def _load(mcfg: RoMAEConfig, trained: dict) -> RoMAEForPreTraining:
    model = RoMAEForPreTraining(mcfg)
    model.load_state_dict(trained["state_dict"])
    return model.eval()


@torch.no_grad()
def _reconstruct(model, values, positions, mask, pad_mask=None, batch: int = 256) -> np.ndarray:
    out = []
    for i in range(0, len(values), batch):
        sl = slice(i, i + batch)
        out.append(model.reconstruct(values[sl], positions[sl], mask[sl],
                                     None if pad_mask is None else pad_mask[sl]))
    return torch.cat(out).numpy()


def paper_trainings(prof: InterpolationProfile | None = None, suffix: str = "") -> list[plan.Training]:
    """Notebook 15's paper trainings (`romae.plan`): Spiral and Synthetic, every seed (shapes as run_spiral and
    run_synthetic build them: Synthetic pads its 3-10 observed points to equal mask sizes)."""
    prof = prof or config("paper")
    sp, spd, sy, syd = prof.spiral, prof.spiral_data, prof.synthetic, prof.synthetic_data
    n_sy = syd.n_points + syd.obs_max - syd.obs_min  # romae.masking.pad_observed
    return [plan.Training("spiral" + suffix, "pretrain", model_config(sp, 2, 1 - spd.n_obs / spd.n_points),
                          sp.train_config(sp.seeds[0]), spd.n_points, spd.n_train, runs=len(sp.seeds),
                          source="App. D.7 (generated)"),
            plan.Training("synthetic" + suffix, "pretrain", model_config(sy, 1), sy.train_config(sy.seeds[0]), n_sy,
                          syd.sizes()["train"], runs=len(sy.seeds), hidden=1 - syd.obs_max / n_sy,
                          source="App. D.8 (generated)")]


def _dry_head(d: dict) -> dict:
    """A test set's first `runtime.dry_count` series (a dry run), every per-series array cut; else `d`."""
    n = len(d["values"])
    k = runtime.dry_count(n)
    return d if k == n else {key: v if key == "t" else v[:k] for key, v in d.items()}


# ----------------------------------------------------------------------------- spiral

def spiral_tensors(d: dict, scale: float) -> dict:
    n, P, _ = d["values"].shape
    t = torch.as_tensor(d["t"] * scale, dtype=torch.float32)
    return dict(values=torch.as_tensor(d["values"]), positions=t.expand(n, 1, P).contiguous(),
                mask=~torch.as_tensor(d["observed"]))


def evaluate_spiral(model, prof: InterpolationProfile, scale: float) -> tuple[pd.DataFrame, dict]:
    """RMSE per trial (vs clean, vs noisy, authors' formula) and the first trial's predictions."""
    rows, first = [], None
    for k in range(runtime.dry_count(prof.n_trials, 2)):  # a dry run: 2 trials
        d = _dry_head(S.spirals("test", prof.spiral_data, trial=k))
        x = spiral_tensors(d, scale)
        recon = _reconstruct(model, x["values"], x["positions"], x["mask"], batch=prof.eval_batch)
        hidden = ~d["observed"]
        rows.append(dict(trial=k, rmse_clean=S.rmse(recon, d["clean"], hidden),
                         rmse_noisy=S.rmse(recon, d["values"], hidden),
                         authors_formula_noisy=float(np.sqrt((((recon - d["values"]) ** 2).sum(-1)[hidden]).sum())
                                                     / 100)))
        first = first or {**d, "recon": recon}
    return pd.DataFrame(rows), first


def run_spiral(prof: InterpolationProfile, cache_dir=None, refresh=False, checkpoints=False, profile: str = "") -> dict:
    run, dcfg = prof.spiral, prof.spiral_data
    mcfg = model_config(run, token_dim=2, mask_ratio=1 - dcfg.n_obs / dcfg.n_points)  # 45 of 75 hidden
    train = spiral_tensors(S.spirals("train", dcfg), run.position_scale)
    train.pop("mask")  # a fresh random mask per training item (the authors' set-up)

    def evaluate(model):
        frame, first = evaluate_spiral(model, prof, run.position_scale)
        return dict(trials=frame, first=first)

    return dict(runs=_seeds("spiral", run, mcfg, train, dcfg, evaluate, prof, cache_dir, refresh, checkpoints, profile),
                model=mcfg)


# ----------------------------------------------------------------------------- synthetic

def synthetic_tensors(d: dict, scale: float, n_min: int | None = None, n_max: int | None = None) -> dict:
    """values [n, P, 1], positions [n, 1, P], mask; padded to equal mask sizes when counts vary."""
    n, P = d["values"].shape
    t = torch.as_tensor(d["t"] * scale, dtype=torch.float32)
    values, positions = torch.as_tensor(d["values"]).unsqueeze(-1), t.expand(n, 1, P).contiguous()
    observed = torch.as_tensor(d["observed"])
    counts = observed.sum(1)
    if (counts == counts[0]).all():
        return dict(values=values, positions=positions, mask=~observed)
    return pad_observed(values, positions, observed, n_min or int(counts.min()), n_max or int(counts.max()))


def evaluate_synthetic(model, prof: InterpolationProfile, scale: float) -> tuple[pd.DataFrame, dict]:
    """Per-series MSE at the unobserved points (vs noisy and clean) for each protocol, and examples."""
    dcfg, frames, examples = prof.synthetic_data, [], {}
    for proto in ("3-10",) + tuple(str(k) for k in prof.eval_n_obs):
        d = _dry_head(Y.split("test", dcfg, n_obs=None if proto == "3-10" else int(proto),
                              obs_seed=dcfg.obs_seed + 10 + len(frames)))
        x = synthetic_tensors(d, scale, dcfg.obs_min, dcfg.obs_max)
        recon = _reconstruct(model, x["values"], x["positions"], x["mask"], x.get("pad_mask"),
                             prof.eval_batch)[:, : dcfg.n_points, 0]
        hidden = ~d["observed"]
        n_h = hidden.sum(1)
        frames.append(pd.DataFrame(dict(protocol=proto, n_obs=d["n_obs"],
                                        mse_noisy=((recon - d["values"]) ** 2 * hidden).sum(1) / n_h,
                                        mse_clean=((recon - d["clean"]) ** 2 * hidden).sum(1) / n_h)))
        examples[proto] = {k: d[k][:4] if k != "t" else d[k] for k in ("t", "clean", "values", "observed")}
        examples[proto]["recon"] = recon[:4]
    return pd.concat(frames, ignore_index=True), examples


def run_synthetic(prof: InterpolationProfile, cache_dir=None, refresh=False, checkpoints=False,
                  profile: str = "") -> dict:
    run, dcfg = prof.synthetic, prof.synthetic_data
    mcfg = model_config(run, token_dim=1)
    train = synthetic_tensors(Y.split("train", dcfg), run.position_scale, dcfg.obs_min, dcfg.obs_max)

    def evaluate(model):
        frame, ex = evaluate_synthetic(model, prof, run.position_scale)
        return dict(series=frame, examples=ex)

    return dict(runs=_seeds("synthetic", run, mcfg, train, dcfg, evaluate, prof, cache_dir, refresh, checkpoints,
                            profile),
                model=mcfg)


# ----------------------------------------------------------------------------- the experiment

def _mean_std(values) -> tuple[float, float | None]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), (float(v.std(ddof=1)) if len(v) > 1 else None)


def run(profile: str = "smoke", reports_dir=None, cache_dir=None, refresh: bool = False,
        checkpoints: bool | None = None) -> dict:
    """Train and evaluate both benchmarks (cached), record rows, save `table7_interpolation`."""
    prof = config(profile)
    checkpoints = profile != "smoke" if checkpoints is None else checkpoints
    sp = run_spiral(prof, cache_dir, refresh, checkpoints, profile)
    sy = run_synthetic(prof, cache_dir, refresh, checkpoints, profile)

    rows = []
    sp_note = (f"{prof.spiral.epochs} epochs at lr {prof.spiral.lr:g} x {len(prof.spiral.seeds)} seed(s), decoder "
               f"{prof.spiral.decoder}; "
               f"std over {len(sp['runs'][0]['trials'])} evaluation trials")
    trials = pd.concat([r["trials"] for r in sp["runs"]])
    for metric, col in (("rmse_clean", "rmse_clean"), ("rmse_noisy", "rmse_noisy"),
                        ("authors_formula_noisy", "authors_formula_noisy")):
        m, s = _mean_std(trials[col])
        record(EXPERIMENT, "Spiral", metric, m, ours_std=s, n_seeds=len(sp["runs"]), profile=profile,
               note=sp_note, reports_dir=reports_dir)
        rows.append(dict(benchmark="Spiral", model="RoMAE-tiny (ours)", metric=metric, value=m, std=s,
                         source=f"this run ({profile})"))
    sy_note = (f"{prof.synthetic.epochs} epochs, {prof.synthetic_data.n} series, positions t x "
               f"{prof.synthetic.position_scale:g}; mean +- std over "
               f"{len(sy['runs'])} seed(s) of the test MSE")
    for proto in ("3-10",) + tuple(str(k) for k in prof.eval_n_obs):
        for metric in ("mse_noisy", "mse_clean"):
            per_seed = [r["series"].loc[r["series"].protocol == proto, metric].mean() for r in sy["runs"]]
            m, s = _mean_std(per_seed)
            setting = f"Synthetic, {proto} observed"
            record(EXPERIMENT, setting, metric, m, ours_std=s, n_seeds=len(per_seed), profile=profile,
                   note=sy_note, reports_dir=reports_dir)
            rows.append(dict(benchmark=setting, model="RoMAE-tiny (ours)", metric=metric, value=m, std=s,
                             source=f"this run ({profile})"))
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    peers = peers[~peers.benchmark.str.startswith("PhysioNet")]  # notebook 16's rows
    table = pd.concat([peers[["benchmark", "model", "metric", "value", "std", "source"]], pd.DataFrame(rows)],
                      ignore_index=True)
    save_table(table, EXPERIMENT, reports_dir)
    return dict(profile=prof, spiral=sp, synthetic=sy, table=table)


# ----------------------------------------------------------------------------- figures

def plot_fig7(res: dict):
    """Figure 7: two test spirals of opposite chirality: clean curve, observed, hidden and predicted points."""
    d = res["spiral"]["runs"][0]["first"]
    picks = [int(np.argmax(~d["clockwise"])), int(np.argmax(d["clockwise"]))]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    for ax, i in zip(axes, picks):
        obs = d["observed"][i]
        ax.plot(*d["clean"][i].T, color="tab:green", lw=1.5, label="clean trajectory")
        ax.plot(*d["values"][i][obs].T, "o", color="tab:red", ms=4, label="observed (noisy)")
        ax.plot(*d["values"][i][~obs].T, "x", color="tab:red", ms=4, alpha=0.6, label="hidden (noisy)")
        ax.plot(*d["recon"][i][~obs].T, "o", mfc="none", color="tab:blue", ms=5, label="RoMAE prediction")
        ax.set(title=("clockwise" if d["clockwise"][i] else "counter-clockwise") + f" (test spiral {i})",
               xlabel="x", ylabel="y", aspect="equal")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_fig8(res: dict, n_examples: int = 2):
    """Figure 8: synthetic test series with 3, 10 and 20 observations."""
    ex = res["synthetic"]["runs"][0]["examples"]
    protos = [p for p in ex if p != "3-10"]
    fig, axes = plt.subplots(n_examples, len(protos), figsize=(4 * len(protos), 2.8 * n_examples), squeeze=False)
    for j, p in enumerate(protos):
        e = ex[p]
        for i in range(n_examples):
            ax, obs = axes[i, j], e["observed"][i]
            ax.plot(e["t"], e["clean"][i], color="tab:green", lw=1.2, label="clean")
            ax.plot(e["t"][~obs], e["values"][i][~obs], "x", color="tab:gray", ms=3, label="hidden (noisy)")
            ax.plot(e["t"][obs], e["values"][i][obs], "o", color="tab:red", ms=5, label="observed")
            ax.plot(e["t"][~obs], e["recon"][i][~obs], ".", color="tab:blue", ms=5, label="RoMAE prediction")
            ax.set(title=f"n = {p} observed" if i == 0 else None, xlabel="t" if i == n_examples - 1 else None)
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_learning_curves(res: dict):
    """Training loss against step for every Spiral and Synthetic model."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, name in zip(axes, ("spiral", "synthetic")):
        for r in res[name]["runs"]:
            h = r["history"]
            if "loss" in h:
                h = h.dropna(subset=["loss"])
                ax.plot(h.step, h.loss, label=f"seed {r['seed']}")
        ax.set(xlabel="step", ylabel="training MSE (hidden points, noisy)", yscale="log", title=name.capitalize())
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
