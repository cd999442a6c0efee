"""Notebook 01's figures."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from ...compendium import report
from ...data.position import uniform_variance
from ...compendium.reference import paper_values
from ...compendium.report import reference_name

from .profiles import EXPERIMENT, FIG2, setting_name


# ----------------------------------------------------------------------------- figures

def plot_learning_curves(res: dict):
    """Training loss against optimiser step, one thin line per seed (a seed that did not converge stays visible
    instead of pulling a mean), and each seed's test loss at each epoch's end (markers), per size, with [CLS]
    (left) and without (right); log scale. The dotted line is the variance of U(low, high), the MSE of predicting
    the mean position; the dashed lines are the paper's Table 1 values (one per size, in the size's colour). A
    seed whose last test MSE is over 10x the median of its size's seeds is named at its curve's end. Legends sit
    below the panels, off the data."""
    cfg = res["config"]
    paper = {r["setting"]: r["paper"] for r in paper_values() if r["experiment"] == EXPERIMENT and r["metric"] == "mse"}
    fig, axes = plt.subplots(1, len(cfg.with_cls), figsize=(6.2 * len(cfg.with_cls), 5.6), squeeze=False)
    n_seeds = len({seed for (_, _, seed) in res["histories"]})
    for ax, use_cls in zip(axes[0], cfg.with_cls):
        for i, run in enumerate(cfg.sizes):
            color = f"C{i}"
            runs = {seed: h for (s, c, seed), h in sorted(res["histories"].items()) if s == run.size and c == use_cls}
            last = {}
            for k, (seed, h) in enumerate(runs.items()):
                tr = h.dropna(subset=["loss"]) if "loss" in h else pd.DataFrame(columns=["step", "loss"])  # dry run
                ax.plot(tr.step, tr.loss, color=color, lw=0.6, alpha=0.7, marker="." if len(tr) < 10 else None,
                        label=f"{run.size} (d_model {run.d_model}), train" if k == 0 else None)
                va = h.dropna(subset=["val_loss"]) if "val_loss" in h else None
                if va is not None and len(va):
                    ax.plot(va.step, va.val_loss, "o", color=color, ms=3, alpha=0.8,
                            label=f"{run.size}, test" if k == 0 else None)
                    last[seed] = (float(va.step.iloc[-1]), float(va.val_loss.iloc[-1]))
            if len(last) > 2:  # name a seed far above the others of its size
                median = float(pd.Series([v for _, v in last.values()]).median())
                for seed, (step, v) in last.items():
                    if v > 10 * median:
                        ax.annotate(f"seed {seed}: test {v:.3g}", (step, v), xytext=(-6, 14), textcoords="offset points",
                                    ha="right", fontsize=8, color=color,
                                    bbox=dict(boxstyle="round,pad=0.2", fc="white", ec=color, lw=0.5))
            ref = paper.get(setting_name(run.size, use_cls))
            if ref is not None:
                ax.axhline(ref, color=color, ls="--", lw=1, label=f"paper, {run.size}: {ref:g}")
        ax.axhline(uniform_variance(cfg.low, cfg.high), color="k", ls=":", lw=1,
                   label=f"variance of U({cfg.low:g}, {cfg.high:g}) (constant mean)")
        ax.set(yscale="log", xlabel="optimiser step", ylabel="MSE",
               title=f"{'with' if use_cls else 'no'} [CLS]")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    fig.suptitle(f"Position reconstruction: learning curves, one thin line per seed ({n_seeds} seed"
                 f"{'s' if n_seeds != 1 else ''} per size; {report.title_tag(res['profile'])})")
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
