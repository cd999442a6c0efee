"""Notebook 16's figures."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...compendium import report
from ...data import physionet as P
from ...compendium.reference import peer_values

from .profiles import EXPERIMENT, NORMS, LEAD, GROSS_Z, UNITS, METHODS
from .spikes import gross_batches


# ----------------------------------------------------------------------------- figures

def title_tag(res: dict) -> str:
    """'quick profile, reduced, positions rescaled': the profile and the qualifiers of RoMAE's scale facts."""
    return report.title_tag(res["profile_name"], res["scale"])


# one style per published value (colour, line style, end marker), so no two are drawn alike even where the values
# nearly coincide (0.562, 0.567, 0.570); each line ends at its own height in its marker and is named in the legend
PUBLISHED_STYLES = {"HeTVAE": ("tab:gray", "--", "s"),
                    "RoMAE-tiny (paper's Discussion)": ("black", "-", "v"),
                    "RoMAE-tiny (paper's Table 7 cell)": ("tab:purple", "-.", "D"),
                    "RoMAE-tiny (third-party summary)": ("tab:brown", ":", "o")}


_SPARE_STYLES = (("tab:olive", (0, (5, 1)), "^"), ("tab:cyan", (0, (3, 1, 1, 1, 1, 1)), "P"),
                 ("tab:pink", (0, (1, 3)), "X"))


def published_styles(models) -> dict[str, tuple]:
    """model -> (colour, line style, marker): PUBLISHED_STYLES, then an unused spare for any other model."""
    spare = [st for st in _SPARE_STYLES if st not in PUBLISHED_STYLES.values()]
    out = {}
    for m in models:
        out[m] = PUBLISHED_STYLES.get(m) or (spare.pop(0) if spare else ("0.4", (0, (2, 2 + len(out))), "."))
    return out


def plot_methods(res: dict):
    """Table 7, PhysioNet: every method's MSE (mean +- std over mask draws) on each scoring, the headline one
    first; token mask filled, time-point mask open. On the z-score panels each published value is a vertical line
    of its own colour and style (`published_styles`), named with its value in the legend; on min-max they lie far
    off the axis."""
    s = res["summary"]
    pub = pd.DataFrame(peer_values(EXPERIMENT))
    pub = pub[pub.benchmark == "PhysioNet"]
    norms = [n for n in NORMS if n in set(s.norm)]
    fig, axes = plt.subplots(1, len(norms), figsize=(5 * len(norms), 3.6), squeeze=False, sharey=True)
    methods = [m for m in METHODS if m in set(s.method)]
    y = np.arange(len(methods))[::-1]
    for ax, norm in zip(axes[0], norms):
        for k, (unit, mfc) in enumerate((("token", None), ("timepoint", "none"))):
            g = s[(s.norm == norm) & (s.unit == unit)].set_index("method").reindex(methods)
            ax.errorbar(g["mean"], y + (0.12 if k == 0 else -0.12), xerr=g["std"].fillna(0), fmt="o", mfc=mfc,
                        color="tab:blue", ecolor="0.5", capsize=3, label=UNITS[unit])
        xlabel = "MSE on the hidden values"
        if norm == "minmax":  # said under the axis, not over the data
            xlabel += f"\n(the published {pub.value.min():.3f}-{pub.value.max():.3f} lie far off this axis)"
        else:
            styles = published_styles(pub.model)
            for k, r in enumerate(pub.itertuples()):  # from the axis up to its own height, over the methods
                color, ls, marker = styles[r.model]
                ax.plot([r.value, r.value], [0, 0.97 - 0.05 * k], color=color, ls=ls, lw=1.3, marker=marker, ms=5,
                        markevery=[1], transform=ax.get_xaxis_transform(), label=f"published: {r.model} {r.value:.3f}")
            ax.set_xlim(left=0)
        ax.set(title=("headline: " if norm == LEAD else "") + NORMS[norm], xlabel=xlabel)
    # headroom over the top method for the published lines' end markers (shared y axis)
    axes[0, 0].set(yticks=y, yticklabels=methods, ylim=(-0.5, len(methods) + 0.4))
    handles, labels = axes[0, 0].get_legend_handles_labels()  # the headline panel: markers and published lines
    fig.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3)
    fig.suptitle(f"PhysioNet interpolation, every method on every scoring ({title_tag(res)})")
    fig.tight_layout()
    return fig


def plot_record(res: dict, n_vars: int = 4, method: str = "RoMAE"):
    """One test record: visible, hidden and predicted values of its most observed variables (token mask)."""
    ex = res["eval"]["example"]
    rows, preds = ex["rows"], ex["preds"]
    hid = rows[rows.hidden].assign(**{k: v for k, v in preds.items()})
    counts = hid.variable.value_counts()
    top = [v for v in rows.variable.value_counts().index if v in counts.index and v >= len(P.DESCRIPTORS)][:n_vars]
    fig, axes = plt.subplots(len(top), 1, figsize=(10, 2.2 * len(top)), sharex=True, squeeze=False)
    for ax, v in zip(axes[:, 0], top):
        r, h = rows[(rows.variable == v) & ~rows.hidden], hid[hid.variable == v]
        ax.plot(r.time, r.value, "o", color="tab:red", ms=4, label="visible")
        ax.plot(h.time, h.value, "x", color="black", ms=5, label="hidden (true)")
        if method in h:
            ax.plot(h.time, h[method], "o", mfc="none", color="tab:blue", ms=6, label=method)
        ax.plot(h.time, h["linear interpolation"], "+", color="tab:green", ms=6, label="linear interpolation")
        ax.set_ylabel(P.VARIABLES[v])
    axes[0, 0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the data, not on it
    axes[-1, 0].set_xlabel("hours since ICU admission")
    fig.suptitle(f"test record {ex['record_id']}: half of the observed values hidden ({title_tag(res)})")
    fig.tight_layout()
    return fig


def plot_per_variable(res: dict, norm: str = "zscore", unit: str = "token"):
    """MSE per variable against how often it is observed (observations per training record)."""
    pv = res["eval"]["per_variable"]
    pv = pv[(pv.norm == norm) & (pv.unit == unit) & (pv.n > 0)].assign(mse=lambda d: d.sse / d.n)
    freq = pd.Series(res["data"]["obs_per_record"], index=list(P.VARIABLES))
    fig, ax = plt.subplots(figsize=(9, 5))
    for method, g in pv.groupby("method", sort=False):
        ax.plot(freq[g.variable].to_numpy(), g.mse, "o", alpha=0.75, label=method)
    ax.set(xscale="log", yscale="log", xlabel="observations per training record (log)",
           ylabel=f"MSE on hidden values ({NORMS[norm]}, log)",
           title=f"per-variable MSE, {UNITS[unit]} ({title_tag(res)})")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def plot_learning_curves(res: dict):
    """Training loss of every RoMAE run against step (the raw-time control beside the main run); ticks under the
    curves mark the logged steps whose batches hold a recorded gross error (|z| > GROSS_Z, `gross_batches`),
    which the runs see winsorised: a spike there would be one the preprocessing missed."""
    fig, ax = plt.subplots(figsize=(9, 4))
    for name, t in res["trained"].items():
        h = pd.DataFrame(t["history"])
        h = h[h.get("loss").notna()] if "loss" in h else h
        flag = res.get("flags", {}).get(name)
        ax.plot(h.step, h.loss, label=name + (" (TRAINING FLAG)" if flag else ""))
    if "batches" in res and len(g := gross_batches(res)):
        steps = np.sort(g.logged.unique())
        ax.plot(steps, np.full(len(steps), 0.03), "|", color="tab:red", ms=10, transform=ax.get_xaxis_transform(),
                label=f"a batch with a recorded\n|z| > {GROSS_Z:g} (winsorised)")
    ax.set(xlabel="step", ylabel="training loss (MSE on hidden tokens,\nz-score units, winsorised)", yscale="log",
           title=f"PhysioNet: training loss ({title_tag(res)})")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the curves, not over them
    fig.tight_layout()
    return fig
