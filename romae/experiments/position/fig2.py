"""Fig. 2: its runs, scale, constant predictor and reading."""

from __future__ import annotations

import math

import pandas as pd

from ...compendium import report
from ... import runtime
from ...data.position import position_grid, position_samples
from ...compendium.report import learned, loss_flags, record, scale

from .profiles import FIG2, Fig2Config, config
from .training import train_fig2_run
from .table1 import _model_label


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
