"""Absolute-position reconstruction (Sec. 5.1 / Table 1 and App. B.1 / Figure 2).

Can RoMAE recover a token's absolute position when RoPE only ever shows it relative positions?
Every token carries the value 1, so the position enters only through the rotary attention; one shared
linear head on every non-[CLS] token regresses the token's position (`RoMAEForPrediction`, head
"tokens", task "regression", MSE). Corollary 4.1: without [CLS] the encoder is translation-invariant
(shifting all positions by c changes nothing), so the best it can do is predict the mean position and
its MSE is the variance of the positions. Proposition 4.2: a [CLS] token pinned at the origin breaks
that invariance, and the model can learn absolute positions.

* Table 1: 10 tokens at positions U(1, 50) (authors' code), with and without [CLS], RoMAE-tiny depth
  (12), heads (3) and feed-forward (720) with d_model 180 / 432 / 720 ("tiny", "small", "base"), p-RoPE
  p = 0.75, Table 17's AdamW schedule, 20,000 / 4,000 samples, seeds 42-46. Metric: mean over the
  test samples of the per-sample MSE.
* Figure 2 (App. B.1): one token + [CLS], positions U(0, 100) or U(0, 1000), d_model 960, Table 16's
  SGD schedule, seeds 40-44, evaluated at 500 evenly spaced positions. Plotted: the absolute error
  |p - p_hat| against (p - low) / (high - low), averaged over seeds (the authors plotted this mean
  absolute error under an "MSE" label).

Every row records its scale (`table1_scale`, `fig2_scale`: what the run used beside the `paper` profile's)
and the trivial predictor of its task (`report.learned`): the constant mean training position for Table 1
(MSE), the constant median training position for Figure 2 (mean absolute error over the grid). Figure 2's
claim (edge errors above the interior's) is tested only when the model's error is at most half the
constant's: a constant output has larger edge errors too. With vs without [CLS] is compared per size as a
paired difference over seeds (`difference_table`).

Every trained run is cached (`romae.cache.cached`), keyed by its resolved model, training and data
config, so re-running the notebook to restyle a figure does not retrain.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import pandas as pd
import torch

from ..compendium import plan, report, terminal
from .. import runtime
from ..cache import cached
from ..config import EncoderConfig, RoMAEConfig, TrainConfig, check_profile
from ..data.position import position_grid, position_samples, uniform_variance
from ..model import RoMAEForPrediction
from ..compendium.reference import paper_values
from ..compendium.report import difference, difference_text, learned, learned_text, loss_flags, record, reference_name, row_status, save_table, scale
from ..train import ArrayDataset, fit

EXPERIMENT = "table1_position_reconstruction"
FIG2 = "fig2_position_range"


# ----------------------------------------------------------------------------- configuration

@dataclass(frozen=True)
class SizeRun:
    """One model size of Table 1 and how long it trains (the same for the runs with and without [CLS])."""

    size: str  # row label of Table 1: tiny | small | base
    d_model: int  # 180 | 432 | 720 (Table 8 widths); depth, heads and FFN stay tiny's (App. D.5, authors' code)
    n_train: int = 20_000  # Sec. 5.1
    n_test: int = 4_000  # Sec. 5.1
    epochs: int = 10  # Table 17
    warmup_steps: int = 625  # Table 17 (authors: 20 % of the 3,130 steps)
    seeds: tuple[int, ...] = (42, 43, 44, 45, 46)  # authors' code; 5 seeds (App. D.5)
    depth: int = 12  # RoMAE-tiny (Table 8)


PAPER_SIZES = (SizeRun("tiny", 180), SizeRun("small", 432), SizeRun("base", 720))


@dataclass(frozen=True)
class Table1Config:
    """Sec. 5.1 / Table 17. Defaults = the `paper` profile."""

    sizes: tuple[SizeRun, ...] = PAPER_SIZES
    with_cls: tuple[bool, ...] = (True, False)  # Table 1's two columns
    n_tokens: int = 10  # Sec. 5.1
    low: float = 1.0  # authors' code: U(1, 50); the paper's text says "between 0 and 50"
    high: float = 50.0
    n_heads: int = 3  # RoMAE-tiny's heads for every d_model (authors' code)
    d_ff: int = 720  # feed-forward width fixed at tiny's for every d_model (authors' code)
    p: float = 0.75  # p-RoPE (Sec. 5.1)
    lr: float = 5e-4  # Table 17
    betas: tuple[float, float] = (0.9, 0.999)  # Table 17
    weight_decay: float = 0.01  # Table 17
    batch_size: int = 64  # Table 17
    grad_clip: float | None = None  # Table 17: "inf"
    bf16: bool = False  # Table 17: FP32
    train_seed: int = 0  # data seed of the training set (the authors' data were unseeded)
    test_seed: int = 1  # data seed of the test set
    eval_batch: int = 1000  # inference batch (no effect on the numbers)

    def model_config(self, run: SizeRun, use_cls: bool) -> RoMAEConfig:
        enc = EncoderConfig(d_model=run.d_model, n_heads=self.n_heads, depth=run.depth, d_ff=self.d_ff)
        return RoMAEConfig(token_dim=1, n_axes=1, encoder=enc, p=self.p, use_cls=use_cls, head="tokens",
                           task="regression", n_outputs=1)

    def train_config(self, run: SizeRun, seed: int, progress: bool = False) -> TrainConfig:
        return TrainConfig(epochs=run.epochs, batch_size=self.batch_size, lr=self.lr, optimizer="adamw",
                           betas=self.betas, weight_decay=self.weight_decay, warmup_steps=run.warmup_steps,
                           grad_clip=self.grad_clip, bf16=self.bf16, seed=seed, log_every=10,
                           progress=progress)


@dataclass(frozen=True)
class Fig2Config:
    """App. B.1 / Table 16. Defaults = the `paper` profile."""

    ranges: tuple[tuple[float, float], ...] = ((0.0, 100.0), (0.0, 1000.0))  # App. B.1
    lrs: tuple[float, ...] = (5e-6, 5e-7)  # Table 16, one per range
    d_model: int = 960  # App. D.5
    depth: int = 12  # RoMAE-tiny (App. D.5)
    n_heads: int = 3  # RoMAE-tiny (authors' code: head width 320)
    d_ff: int = 720  # authors' code
    p: float = 0.75  # authors' code
    n_train: int = 20_000  # authors' code
    n_test: int = 4_000  # authors' code (validation loss only)
    epochs: int = 10  # Table 16
    batch_size: int = 64  # Table 16
    warmup_steps: int = 625  # Table 16
    momentum: float = 0.9  # Table 16 (SGD)
    weight_decay: float = 0.0  # Table 16
    grad_clip: float | None = None  # Table 16: "inf"
    seeds: tuple[int, ...] = (40, 41, 42, 43, 44)  # authors' code
    train_seed: int = 40  # data seed (authors: torch seeded with 40 before drawing the data)
    test_seed: int = 41
    n_eval: int = 500  # evenly spaced evaluation positions, end points included (authors' code)

    def model_config(self) -> RoMAEConfig:
        enc = EncoderConfig(d_model=self.d_model, n_heads=self.n_heads, depth=self.depth, d_ff=self.d_ff)
        return RoMAEConfig(token_dim=1, n_axes=1, encoder=enc, p=self.p, use_cls=True, head="tokens",
                           task="regression", n_outputs=1)

    def train_config(self, lr: float, seed: int, progress: bool = False) -> TrainConfig:
        return TrainConfig(epochs=self.epochs, batch_size=self.batch_size, lr=lr, optimizer="sgd",
                           momentum=self.momentum, weight_decay=self.weight_decay,
                           warmup_steps=self.warmup_steps, grad_clip=self.grad_clip, seed=seed,
                           log_every=10, progress=progress)


@dataclass(frozen=True)
class PositionProfile:
    table1: Table1Config = field(default_factory=Table1Config)
    fig2: Fig2Config = field(default_factory=Fig2Config)


PROFILES = {
    # the paper's settings: 3 sizes x 2 x 5 seeds x 3,130 steps (Table 1); 2 ranges x 5 seeds x 3,130
    # steps of a 61 M-parameter encoder (Figure 2). A GPU job.
    "paper": PositionProfile(),
    # RoMAE-tiny at the paper's full scale (20,000 / 4,000 samples, 10 epochs, batch 64, 3,130 steps),
    # with and without [CLS], 1 seed (paper: 5): each run takes ~10 min on a 2-core CPU and quick's
    # budget is ~30 min per notebook; `paper` runs all 5 seeds. small and base reduced to 2,000 / 1,000
    # samples x 2
    # epochs (64 steps, warm-up 20 %), 1 seed; Figure 2 reduced to 2,000 samples x 5 epochs (160 steps,
    # warm-up 20 %), 1 seed, both ranges.
    "quick": PositionProfile(
        table1=Table1Config(sizes=(
            SizeRun("tiny", 180, seeds=(42,)),
            SizeRun("small", 432, n_train=2_000, n_test=1_000, epochs=2, warmup_steps=13, seeds=(42,)),
            SizeRun("base", 720, n_train=2_000, n_test=1_000, epochs=2, warmup_steps=13, seeds=(42,)))),
        fig2=Fig2Config(n_train=2_000, n_test=500, epochs=5, warmup_steps=32, seeds=(40,))),
    # seconds, for CI / nbval: tiny with 2 blocks, 256 samples x 1 epoch (4 steps), 1 seed; Figure 2
    # with the same 2-block tiny (d_model 180). Shows that the pipeline runs, nothing more.
    "smoke": PositionProfile(
        table1=Table1Config(sizes=(SizeRun("tiny", 180, n_train=256, n_test=128, epochs=1, warmup_steps=2,
                                           seeds=(42,), depth=2),)),
        fig2=Fig2Config(d_model=180, depth=2, n_train=256, n_test=64, epochs=1, warmup_steps=2, seeds=(40,))),
}


def config(profile: str) -> PositionProfile:
    """The settings of a profile (smoke | quick | paper); raises ValueError on an unknown name."""
    return PROFILES[check_profile(profile)]


def paper_trainings() -> list[plan.Training]:
    """Notebook 01's paper trainings (`romae.compendium.plan`): Table 1's sizes with and without [CLS], Figure 2's two ranges."""
    t1, f2 = config("paper").table1, config("paper").fig2
    return [plan.Training(f"table1 {setting_name(r.size, cls)}", "finetune", t1.model_config(r, cls),
                          t1.train_config(r, r.seeds[0]), t1.n_tokens, r.n_train, runs=len(r.seeds), source="Sec. 5.1")
            for r in t1.sizes for cls in t1.with_cls] + [
        plan.Training(f"fig2 positions U({lo:g}, {hi:g})", "finetune", f2.model_config(), f2.train_config(lr, f2.seeds[0]),
                      1, f2.n_train, runs=len(f2.seeds), source="App. B.1") for (lo, hi), lr in zip(f2.ranges, f2.lrs)]


def setting_name(size: str, use_cls: bool) -> str:
    """Table 1's setting label as in paper_values.csv, e.g. 'tiny, with [CLS]'."""
    return f"{size}, {'with' if use_cls else 'no'} [CLS]"


# ----------------------------------------------------------------------------- training and evaluation

@torch.no_grad()
def predict(model: RoMAEForPrediction, data: dict, batch: int = 1000) -> torch.Tensor:
    """Predicted positions [n, N] for data {values, positions} (on the model's device, returned on CPU)."""
    model.eval()
    dev = next(model.parameters()).device
    out = [model(values=data["values"][i:i + batch].to(dev), positions=data["positions"][i:i + batch].to(dev))[0]
           for i in range(0, len(data["values"]), batch)]
    return torch.cat(out).squeeze(-1).float().cpu()


def per_sample_mse(pred: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """pred [n, N], labels [n, N, 1] or [n, N] -> the MSE of each sample over its tokens, [n] (float64)."""
    return (pred.double() - labels.reshape(pred.shape).double()).pow(2).mean(dim=1)


def _train(model_cfg: RoMAEConfig, train_cfg: TrainConfig, train: dict, test: dict, device=None, profile: str = ""):
    torch.manual_seed(train_cfg.seed)  # model initialisation (fit re-seeds for the batch order)
    model = RoMAEForPrediction(model_cfg)
    train_cfg = plan.fit_memory(train_cfg, model_cfg, train["values"].shape[1], "finetune", profile)  # paper: micro-batch
    t0 = time.perf_counter()
    res = fit(model, ArrayDataset(**train), train_cfg, val_data=ArrayDataset(**test), config=model_cfg,
              device=device)
    return res, time.perf_counter() - t0


def _kept(name: str, label: str, key: dict, compute, cache_dir, refresh: bool, planned: float | None) -> dict:
    """`cached(name, key, compute)` as a training: kept in the committed record of a paper run (`romae.compendium.trainings`),
    and told in the terminal as `label` (trained, with the plan's seconds, or already done)."""
    computed = []

    def train():
        computed.append(True)
        with terminal.named(label, planned):
            return compute()

    result = cached(name, key, train, cache_dir=cache_dir, refresh=refresh, keep=True, planned=planned)
    if not computed:
        terminal.cached(label, planned)
    return result


def _planned(model_cfg: RoMAEConfig, train_cfg: TrainConfig, n_tokens: int, samples: int) -> float | None:
    """The plan's seconds for a run that is kept in the committed record of trainings (else not needed: None)."""
    from ..compendium import trainings

    if trainings.open_folder() is None or runtime.dry_run():
        return None
    return plan.training_seconds("finetune", model_cfg, train_cfg, n_tokens=n_tokens, samples=samples)


def _key(model_cfg: RoMAEConfig, train_cfg: TrainConfig, **data) -> dict:
    key = dict(model=model_cfg.to_dict(), train=train_cfg.to_dict(), data=data)
    key["train"].pop("progress")  # the progress bar does not change the result
    return key


def train_table1_run(cfg: Table1Config, run: SizeRun, use_cls: bool, seed: int, cache_dir=None,
                     refresh: bool = False, progress: bool = False, device=None, profile: str = "") -> dict:
    """One Table 1 run (cached) -> {mse, per_sample_mse [n_test], history, steps, seconds}."""
    model_cfg, train_cfg = cfg.model_config(run, use_cls), cfg.train_config(run, seed, progress)
    data = dict(n_tokens=cfg.n_tokens, low=cfg.low, high=cfg.high, n_train=run.n_train, n_test=run.n_test,
                train_seed=cfg.train_seed, test_seed=cfg.test_seed)

    def compute():
        train = position_samples(run.n_train, cfg.n_tokens, cfg.low, cfg.high, cfg.train_seed)
        test = position_samples(runtime.dry_count(run.n_test), cfg.n_tokens, cfg.low, cfg.high, cfg.test_seed)
        res, seconds = _train(model_cfg, train_cfg, train, test, device, profile)
        mse = per_sample_mse(predict(res.model, test, cfg.eval_batch), test["labels"])
        return dict(mse=float(mse.mean()), per_sample_mse=mse.numpy(), history=res.history, steps=res.steps,
                    seconds=seconds)

    return _kept("position_table1", f"table1 {run.size}, {'with' if use_cls else 'no'} [CLS], seed {seed}",
                 _key(model_cfg, train_cfg, **data), compute, cache_dir, refresh,
                 _planned(model_cfg, train_cfg, cfg.n_tokens, run.n_train))


def train_fig2_run(cfg: Fig2Config, low: float, high: float, lr: float, seed: int, cache_dir=None,
                   refresh: bool = False, progress: bool = False, device=None, profile: str = "") -> dict:
    """One App. B.1 run (cached) -> {positions [n_eval], pred [n_eval], abs_error [n_eval], test_mse,
    history, steps, seconds}."""
    model_cfg, train_cfg = cfg.model_config(), cfg.train_config(lr, seed, progress)
    data = dict(low=low, high=high, n_train=cfg.n_train, n_test=cfg.n_test, n_eval=cfg.n_eval,
                train_seed=cfg.train_seed, test_seed=cfg.test_seed)

    def compute():
        train = position_samples(cfg.n_train, 1, low, high, cfg.train_seed)
        test = position_samples(runtime.dry_count(cfg.n_test), 1, low, high, cfg.test_seed)  # dry run: capped
        res, seconds = _train(model_cfg, train_cfg, train, test, device, profile)
        grid = position_grid(low, high, cfg.n_eval)
        pred = predict(res.model, grid)[:, 0]
        positions = grid["positions"].flatten()
        test_mse = per_sample_mse(predict(res.model, test), test["labels"]).mean()
        return dict(positions=positions.numpy(), pred=pred.numpy(), abs_error=(pred - positions).abs().numpy(),
                    test_mse=float(test_mse), history=res.history, steps=res.steps, seconds=seconds)

    return _kept("position_fig2", f"fig2 U({low:g}, {high:g}), lr {lr:g}, seed {seed}", _key(model_cfg, train_cfg, **data),
                 compute, cache_dir, refresh, _planned(model_cfg, train_cfg, 1, cfg.n_train))


# ----------------------------------------------------------------------------- the experiment

def run_table1(profile: str = "smoke", reports_dir=None, cache_dir=None, refresh: bool = False,
               progress: bool | None = None, device=None) -> dict:
    """Train (cached) every Table 1 run of the profile, record rows, save `table1_position_reconstruction`.

    Returns {profile, config, runs (one row per seed), table (paper beside ours, with the status the summary
    gives each row), differences (with vs without [CLS], paired over seeds: `difference_table`),
    histories {(size, cls, seed): frame}}. ours = mean over seeds; ours_std = their standard deviation
    (ddof 1; None for one seed). Each row carries its scale (`table1_scale`), the trivial predictor's MSE
    (the constant training mean, `constant_mse`) as `learned`, and its training losses.
    """
    cfg = config(profile).table1
    progress = profile != "smoke" if progress is None else progress
    rows, histories, losses = [], {}, {}
    for run in cfg.sizes:
        for use_cls in cfg.with_cls:
            for seed in runtime.dry_seeds(run.seeds):  # a dry run: the first seed
                r = train_table1_run(cfg, run, use_cls, seed, cache_dir, refresh, progress, device, profile)
                rows.append(dict(size=run.size, use_cls=use_cls, seed=seed, mse=r["mse"], steps=r["steps"],
                                 seconds=r["seconds"]))
                histories[(run.size, use_cls, seed)] = pd.DataFrame(r["history"])
                losses.setdefault((run.size, use_cls), []).append(report.loss_curve(r["history"]))
    runs = pd.DataFrame(rows)
    differences = difference_table(runs, cfg)

    paper = {(r["setting"], r["metric"]): r for r in paper_values() if r["experiment"] == EXPERIMENT}
    table = []
    for run in cfg.sizes:
        constant, trivial = constant_mse(cfg, run)
        for use_cls in cfg.with_cls:
            setting = setting_name(run.size, use_cls)
            mse = runs[(runs["size"] == run.size) & (runs.use_cls == use_cls)].mse
            std = float(mse.std(ddof=1)) if len(mse) > 1 else None
            note = _note(run, len(mse))
            diff = differences[differences["size"] == run.size]
            if len(diff):
                note += f"; with - without [CLS]: {diff.text.iloc[0]}"
            ok = learned(float(mse.mean()), trivial, f"the constant {constant:.4g} (mean of the training positions)")
            row = record(EXPERIMENT, setting, "mse", float(mse.mean()), ours_std=std, n_seeds=len(mse),
                         profile=profile, scale=table1_scale(run, len(mse)), note=note, learned=ok,
                         losses=losses[(run.size, use_cls)], reports_dir=reports_dir)
            ref = paper.get((setting, "mse"), {})
            table.append(dict(setting=setting, paper=ref.get("paper"), paper_std=ref.get("paper_std"),
                              ours=float(mse.mean()), ours_std=std, n_seeds=len(mse), profile=profile,
                              constant_mse=trivial, status=row_status(ref, row) if ref else "no paper value",
                              learned=learned_text(row["learned"]), note=row["note"]))
    table = pd.DataFrame(table)
    save_table(table, EXPERIMENT, reports_dir)
    return dict(profile=profile, config=cfg, runs=runs, table=table, differences=differences,
                histories=histories)


def _model_label(d_model: int, depth: int) -> str:
    return f"d_model {d_model}, depth {depth}"


def table1_scale(run: SizeRun, seeds_run: int) -> dict:
    """A Table 1 row's scale: training samples, epochs, seeds and model against the `paper` profile's run of
    the same size (Sec. 5.1 / Table 17)."""
    paper = next(r for r in config("paper").table1.sizes if r.size == run.size)
    return scale(data=(run.n_train, paper.n_train), epochs=(run.epochs, paper.epochs),
                 seeds=(seeds_run, len(paper.seeds)),
                 model=(_model_label(run.d_model, run.depth), _model_label(paper.d_model, paper.depth)))


def constant_mse(cfg: Table1Config, run: SizeRun) -> tuple[float, float]:
    """The trivial predictor of Table 1: the constant that minimises the training MSE (the mean training
    position), scored on the run's test set as the model is (mean over samples of the per-sample MSE).
    -> (the constant, its test MSE). Without [CLS] this is what a translation-invariant model settles on."""
    train = position_samples(run.n_train, cfg.n_tokens, cfg.low, cfg.high, cfg.train_seed)
    test = position_samples(runtime.dry_count(run.n_test), cfg.n_tokens, cfg.low, cfg.high, cfg.test_seed)
    c = float(train["positions"].double().mean())
    pred = torch.full(test["positions"][:, 0].shape, c, dtype=torch.float64)
    return c, float(per_sample_mse(pred, test["labels"]).mean())


DIFFERENCE_SHARE = 0.1  # with vs without [CLS]: a difference smaller than a tenth of the constant's MSE would not matter


def difference_table(runs: pd.DataFrame, cfg: Table1Config) -> pd.DataFrame:
    """With minus without [CLS], per size, paired by seed (`report.difference`): diff, se, n, margin, verdict,
    text. The margin is DIFFERENCE_SHARE x the variance of U(low, high) (the constant predictor's MSE): the
    paper's claim is 0.06 against 200, so a smaller gap would not speak to it. Empty without both columns."""
    out = []
    if set(cfg.with_cls) != {True, False}:
        return pd.DataFrame(columns=["size", "diff", "se", "n", "margin", "verdict", "text"])
    margin = DIFFERENCE_SHARE * uniform_variance(cfg.low, cfg.high)
    for run in cfg.sizes:
        mine = runs[runs["size"] == run.size]
        a, b = (mine[mine.use_cls == c].set_index("seed").mse for c in (True, False))
        seeds = [s for s in a.index if s in b.index]
        res = difference(a[seeds].values, b[seeds].values, margin, names=("with [CLS]", "no [CLS]"))
        out.append(dict(size=run.size, **res, text=difference_text(res)))
    return pd.DataFrame(out)


def _note(run: SizeRun, seeds_run: int) -> str:
    return (f"{run.n_train:,} train / {run.n_test:,} test samples, {run.epochs} epochs, depth {run.depth}, "
            f"{seeds_run} seed(s): {','.join(map(str, run.seeds[:seeds_run]))}")


status_table = report.status_table  # the summary's reading of this run's rows


def run_fig2(profile: str = "smoke", reports_dir=None, cache_dir=None, refresh: bool = False,
             progress: bool | None = None, device=None) -> dict:
    """Train (cached) the App. B.1 runs and record summary rows under `fig2_position_range`.

    Returns {profile, config, curves: frame (range, seed, position, fraction, pred, abs_error), summary: frame,
    status (the summary's status of each row with a paper value, `status_table`), flags {range: loss flags},
    histories}. Summary per range: median over the grid of the seed-mean absolute error ("interior"), the
    seed-mean absolute error at the lower and upper end points, its mean over the grid, and the trivial
    predictor's mean (`constant_abs_error`); every row of a range carries the same `learned` (the model's mean
    absolute error against the constant's), so the derived claim edge_over_interior is tested only when the
    model beat the constant.
    """
    cfg = config(profile).fig2
    progress = profile != "smoke" if progress is None else progress
    frames, summary, histories, recorded, flags = [], [], {}, [], {}
    seeds = runtime.dry_seeds(cfg.seeds)  # a dry run: the first seed
    for (low, high), lr, paper_range in zip(cfg.ranges, cfg.lrs, config("paper").fig2.ranges):
        name = f"({low:g}, {high:g})"
        steps, losses = 0, []
        for seed in seeds:
            r = train_fig2_run(cfg, low, high, lr, seed, cache_dir, refresh, progress, device, profile)
            frames.append(pd.DataFrame(dict(range=name, seed=seed, position=r["positions"],
                                            fraction=(r["positions"] - low) / (high - low), pred=r["pred"],
                                            abs_error=r["abs_error"])))
            histories[(name, seed)] = pd.DataFrame(r["history"])
            steps, losses = max(steps, r["steps"]), losses + [report.loss_curve(r["history"])]
        err = pd.concat(frames).query("range == @name").groupby("position").abs_error.mean()
        constant, trivial = constant_abs_error(cfg, low, high)
        row = dict(range=name, lr=lr, n_seeds=len(seeds), steps=steps, abs_error_interior_median=float(err.median()),
                   abs_error_lower_edge=float(err.iloc[0]), abs_error_upper_edge=float(err.iloc[-1]),
                   abs_error_mean=float(err.mean()), constant=constant, constant_abs_error_mean=trivial)
        summary.append(row)
        ok = learned(row["abs_error_mean"], trivial, f"the constant {constant:.4g} (median of the training positions)")
        sc = fig2_scale(cfg, low, high, paper_range, len(seeds), steps)
        note = (f"positions U({low:g}, {high:g}) (the paper's range, not rescaled); mean over {len(seeds)} seed(s) "
                f"of |p - p_hat| at {cfg.n_eval} grid positions; {steps:,} of the paper's "
                f"{fig2_paper_steps():,} optimiser steps ({cfg.n_train:,} samples x {cfg.epochs} epochs), "
                f"d_model {cfg.d_model}, depth {cfg.depth}")
        for metric in ("abs_error_interior_median", "abs_error_lower_edge", "abs_error_upper_edge"):
            recorded.append(record(FIG2, name, metric, row[metric], n_seeds=len(seeds), profile=profile, scale=sc,
                                   note=note, learned=ok, losses=losses, reports_dir=reports_dir))
        flags[name] = "; ".join(f for f in (loss_flags(c) for c in losses) if f)
    return dict(profile=profile, config=cfg, curves=pd.concat(frames, ignore_index=True),
                summary=pd.DataFrame(summary), status=status_table(recorded), flags=flags, histories=histories)


def fig2_paper_steps() -> int:
    """Optimiser steps of one App. B.1 run in the `paper` profile (Table 16: 20,000 samples x 10 epochs of 64)."""
    p = config("paper").fig2
    return math.ceil(p.n_train / p.batch_size) * p.epochs


def fig2_scale(cfg: Fig2Config, low: float, high: float, paper_range: tuple[float, float], seeds_run: int,
               steps: int) -> dict:
    """A Figure 2 row's scale against the `paper` profile (App. B.1 / Table 16): training samples, optimiser
    steps, seeds, model and the position range (the paper's own: not rescaled)."""
    p = config("paper").fig2
    return scale(data=(cfg.n_train, p.n_train), steps=(steps, fig2_paper_steps()), seeds=(seeds_run, len(p.seeds)),
                 model=(_model_label(cfg.d_model, cfg.depth), _model_label(p.d_model, p.depth)),
                 positions=(f"U({low:g}, {high:g})", f"U({paper_range[0]:g}, {paper_range[1]:g})"))


def constant_abs_error(cfg: Fig2Config, low: float, high: float) -> tuple[float, float]:
    """Figure 2's trivial predictor: the constant that minimises the training absolute error (the median of the
    training positions), scored as the model is (mean over the evaluation grid of |p - c|) -> (c, that mean)."""
    train = position_samples(cfg.n_train, 1, low, high, cfg.train_seed)
    c = float(train["positions"].double().median())
    grid = position_grid(low, high, cfg.n_eval)["positions"].double().flatten()
    return c, float((grid - c).abs().mean())


# ----------------------------------------------------------------------------- the reading

def table1_reading(res: dict) -> str:
    """Markdown lines stating what this Table 1 run found, computed from its rows (no hand-typed result):
    per row its status and the trivial-predictor check, per size the with - without [CLS] difference over
    seeds, and any training flag (no conclusion is drawn from a flagged run)."""
    lines = [f"**Profile `{res['profile']}`.**"]
    for r in res["table"].itertuples():
        paper = "no paper value" if pd.isna(r.paper) else f"paper {r.paper:g}"
        lines.append(f"- {r.setting}: MSE {r.ours:.4g} ({paper}) -> {r.status}; {r.learned}")
    for r in res["differences"].itertuples():
        lines.append(f"- {r.size}, with - without [CLS] over {r.n} seed(s), margin {r.margin:.3g}: {r.text}")
    flagged = res["table"][res["table"].note.str.contains("TRAINING FLAG")]
    lines.append("- Training flags: " + ("none." if flagged.empty else
                 ", ".join(flagged.setting) + " flagged (see the note): no conclusion is drawn from these runs."))
    return "\n".join(lines)


def fig2_reading(res: dict) -> str:
    """Markdown lines stating what this Figure 2 run found, computed from its rows: per range the steps run
    against the paper's, the model's mean |p - p_hat| against the constant's, and each check's status."""
    lines = [f"**Profile `{res['profile']}`.**"]
    for r in res["summary"].itertuples():
        lines.append(f"- {r.range}: {r.steps:,} of the paper's {fig2_paper_steps():,} steps, {r.n_seeds} seed(s); "
                     f"mean |p - p_hat| {r.abs_error_mean:.4g} against {r.constant_abs_error_mean:.4g} for the "
                     f"constant {r.constant:.4g}; edges {r.abs_error_lower_edge:.4g} / {r.abs_error_upper_edge:.4g}, "
                     f"interior median {r.abs_error_interior_median:.4g}"
                     + (f"; TRAINING FLAG: {res['flags'][r.range]}" if res["flags"].get(r.range) else ""))
    steps = {r.range: r.steps for r in res["summary"].itertuples()}
    for r in res["status"].itertuples():  # the verdict after the gates, and the bare comparison beside it
        done = (f" after {steps[r.setting]:,} of the paper's {fig2_paper_steps():,} steps "
                f"({100 * steps[r.setting] / fig2_paper_steps():.2g} %)" if r.setting in steps else "")
        seen = "" if r.measured == r.status.split(" (")[0] else f" (measured: {r.measured})"
        lines.append(f"- {r.setting} `{r.metric}` ({r.reference} {r.paper:g}): ours {r.ours:.4g}{done} -> "
                     f"**{r.status}**{seen}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- speed

def measure_speed(profile: str = "quick", size: str = "tiny", use_cls: bool = True, n_steps: int = 40,
                  device=None) -> float:
    """Optimiser steps per second of one Table 1 run of `size` in `profile`, timed inside `romae.train.fit`
    between step 10 and step n_steps (first steps excluded: allocation and warm-up of the kernels)."""
    cfg = config(profile).table1
    run = next(r for r in cfg.sizes if r.size == size)
    train = position_samples(max(run.n_train, cfg.batch_size * n_steps), cfg.n_tokens, cfg.low, cfg.high, 0)
    torch.manual_seed(0)
    model = RoMAEForPrediction(cfg.model_config(run, use_cls))
    res = fit(model, ArrayDataset(**train), cfg.train_config(run, 0), device=device, max_steps=n_steps)
    t = {row["step"]: row["seconds"] for row in res.history if "seconds" in row}
    return (n_steps - 10) / (t[n_steps] - t[10])


def step_cost(d_model: int, depth: int, d_ff: int, tokens: int, batch: int) -> float:
    """Relative cost of one training step: ~6 x block parameters x tokens per batch (matmul FLOPs)."""
    return 6.0 * depth * (4 * d_model ** 2 + 2 * d_model * d_ff) * tokens * batch


def estimate_runtime(profile: str, tiny_steps_per_s: float) -> pd.DataFrame:
    """Rough wall-clock estimate of every part of a profile from tiny's measured speed (with [CLS]),
    scaling by matmul FLOPs per step; evaluation passes counted as 1/3 of a training step per batch."""
    p = config(profile)
    t1 = p.table1
    ref = step_cost(180, 12, t1.d_ff, t1.n_tokens + 1, t1.batch_size)
    rows = []
    for run in t1.sizes:
        steps = -(-run.n_train // t1.batch_size) * run.epochs
        evals = -(-run.n_test // t1.batch_size) * run.epochs / 3
        n = len(run.seeds) * len(t1.with_cls)
        cost = step_cost(run.d_model, run.depth, t1.d_ff, t1.n_tokens + 1, t1.batch_size) / ref
        rows.append(dict(part=f"Table 1, {run.size}", runs=n, steps_per_run=steps,
                         minutes=n * (steps + evals) * cost / tiny_steps_per_s / 60))
    f2 = p.fig2
    steps = -(-f2.n_train // f2.batch_size) * f2.epochs
    evals = -(-f2.n_test // f2.batch_size) * f2.epochs / 3
    n = len(f2.seeds) * len(f2.ranges)
    cost = step_cost(f2.d_model, f2.depth, f2.d_ff, 2, f2.batch_size) / ref
    rows.append(dict(part="Figure 2", runs=n, steps_per_run=steps,
                     minutes=n * (steps + evals) * cost / tiny_steps_per_s / 60))
    out = pd.DataFrame(rows)
    return pd.concat([out, pd.DataFrame([dict(part="total", runs=out.runs.sum(), steps_per_run=None,
                                              minutes=out.minutes.sum())])], ignore_index=True)


# ----------------------------------------------------------------------------- figures

def plot_learning_curves(res: dict):
    """Training loss (thin, mean over seeds) and test loss at each epoch's end (markers) vs optimiser step,
    per size, with [CLS] (left) and without (right); log scale. The dotted line is the variance of
    U(low, high), the MSE of predicting the mean position; the dashed lines are the paper's Table 1 values
    (one per size, in the size's colour). Legends sit below the panels, off the data."""
    cfg = res["config"]
    paper = {r["setting"]: r["paper"] for r in paper_values() if r["experiment"] == EXPERIMENT and r["metric"] == "mse"}
    fig, axes = plt.subplots(1, len(cfg.with_cls), figsize=(5.5 * len(cfg.with_cls), 5.2), squeeze=False)
    for ax, use_cls in zip(axes[0], cfg.with_cls):
        for i, run in enumerate(cfg.sizes):
            hs = [h for (s, c, _), h in res["histories"].items() if s == run.size and c == use_cls]
            h = pd.concat(hs)
            tr = (h.dropna(subset=["loss"]).groupby("step").loss.mean() if "loss" in h  # a dry run logs no row
                  else pd.Series(dtype=float))
            va = h.dropna(subset=["val_loss"]).groupby("step").val_loss.mean() if "val_loss" in h else None
            color = f"C{i}"
            ax.plot(tr.index, tr.values, color=color, lw=1, marker="." if len(tr) < 10 else None,
                    label=f"{run.size} (d_model {run.d_model}), train")
            if va is not None and len(va):
                ax.plot(va.index, va.values, "o", color=color, ms=4, label=f"{run.size}, test")
            ref = paper.get(setting_name(run.size, use_cls))
            if ref is not None:
                ax.axhline(ref, color=color, ls="--", lw=1, label=f"paper, {run.size}: {ref:g}")
        ax.axhline(uniform_variance(cfg.low, cfg.high), color="k", ls=":", lw=1,
                   label=f"variance of U({cfg.low:g}, {cfg.high:g}) (constant mean)")
        ax.set(yscale="log", xlabel="optimiser step", ylabel="MSE",
               title=f"{'with' if use_cls else 'no'} [CLS]")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    fig.suptitle(f"Position reconstruction: learning curves, mean over seeds ({report.title_tag(res['profile'])})")
    fig.tight_layout()
    return fig


def plot_fig2(res: dict):
    """Figure 2, labelled truthfully: seed-mean absolute error |p - p_hat| vs (p - low) / (high - low), per range;
    dashed: the interior values hard-coded in the authors' plotting code (not numbers of the paper); dotted: the
    trivial predictor (the constant median training position). Legend outside the axes."""
    curves, summary = res["curves"], res["summary"].set_index("range")
    authors = {r["setting"]: r for r in paper_values()
               if r["experiment"] == FIG2 and r["metric"] == "abs_error_interior_median"}
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for i, (name, g) in enumerate(curves.groupby("range", sort=False)):
        color = f"C{i}"
        m = g.groupby("fraction").abs_error.mean()
        ax.plot(m.index, m.values, color=color, label=f"ours, domain {name}")
        if name in summary.index:  # the trivial predictor's error |p - c| on the same grid
            c = summary.loc[name, "constant"]
            pos = g.groupby("fraction").position.first()
            ax.plot(pos.index, (pos - c).abs().where(lambda e: e > 0), color=color, ls=":", lw=1,
                    label=f"constant {c:.4g} (training median), {name}")
        if name in authors:
            ref = authors[name]
            who = "authors' plotting code" if ref.get("reference") == "the authors' code" else reference_name(ref)
            ax.axhline(ref["paper"], color=color, ls="--", lw=1, label=f"{who}, {name}: interior {ref['paper']:g}")
    n = curves.seed.nunique()  # the seeds trained (a dry run: one)
    ax.set(yscale="log", xlabel="position as a fraction of the range, (p - low) / (high - low)",
           ylabel=f"absolute error |p - p_hat| (mean over {n} seed{'s' if n > 1 else ''})",
           title=f"Absolute position reconstruction across two ranges (App. B.1)\n{report.title_tag(res['profile'])}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig
