"""Notebook 12's figures."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...compendium import report
from ...compendium.reference import peer_values

from .profiles import EXPERIMENT, _pct


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
    values stay visible), the mean +- std over seeds in black, the baselines run beside it (right of the seeds,
    each on its own slot, so equal values stay visible), the paper's RoMAE (thin black line) and the best published peer
    of that dataset (broad orange band, so both stay visible where they are equal); their values are in the legend,
    never written over the data."""
    names = list(res["results"])
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    colours = seed_colours({s for r in res["results"].values() for s in r["per_seed"].seed})
    columns = [(name, v) for name in names for v in res["results"][name]["per_seed"].variant.unique()]
    fig, ax = plt.subplots(figsize=(max(6.5, 1.5 * len(columns) + 2.5), 4.4))
    x0, ticks, centres = 0, [], []
    for name in names:
        f = res["results"][name]["per_seed"]
        variants = list(f.variant.unique())
        for k, variant in enumerate(variants):
            g = f[f.variant == variant].sort_values("seed")
            for i, (seed, acc) in enumerate(zip(g.seed, g.accuracy)):
                ax.plot(x0 + k - 0.28 + (i - (len(g) - 1) / 2) * 0.1, acc, "o", color=colours[seed], ms=6,
                        label=f"seed {seed}")
            if len(g) > 1:
                ax.errorbar(x0 + k - 0.02, g.accuracy.mean(), yerr=g.accuracy.std(ddof=1), fmt="_", color="k", ms=12,
                            capsize=3, label="mean +- std over seeds")
            else:  # one seed: no spread to draw
                ax.plot(x0 + k - 0.02, g.accuracy.mean(), "_", color="k", ms=12, label="mean (one seed: std n/a)")
            base = res["results"][name].get("baselines")
            if base is not None:  # the baselines with the same labelled series, on the same test series
                labels = variant.split(", ", 1)[1] if ", " in variant else "all labels"
                for j, (model, colour, style) in enumerate((("1-NN DTW", "tab:red", ":"),
                                                            ("MiniRocket", "tab:purple", "--"),
                                                            ("regridded MiniRocket", "tab:green", "-."))):
                    b = base[(base.model == model) & (base.labels == labels)]
                    if len(b):  # right of the seeds, each baseline on its own slot: equal values stay visible
                        lo = x0 + k + 0.08 + j * 0.12
                        ax.hlines(b.accuracy.mean(), lo, lo + 0.1, colors=colour, linestyles="-", lw=2.5,
                                  label=f"{model}, same labels (baseline)")
        p = peers[peers.benchmark == name]
        if len(p):  # the paper's RoMAE (thin black) over the best peer (broad orange band): both seen when equal
            lo, hi = x0 - 0.4, x0 + len(variants) - 0.4
            mine = p[p.model.str.startswith("RoMAE")].value.iloc[0]
            best = p[~p.model.str.startswith("RoMAE")].sort_values("value").iloc[-1]
            ax.hlines(best.value, lo, hi, colors="tab:orange", lw=6, alpha=0.35,
                      label=f"{name}: best peer (published), {best.model} {best.value:.4f}")
            ax.hlines(mine, lo, hi, colors="k", lw=1.2, label=f"{name}: RoMAE (paper) {mine:.4f}")
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
