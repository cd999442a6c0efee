"""Notebook 04's figures."""

from __future__ import annotations

import matplotlib.pyplot as plt

from ...compendium import report


# ----------------------------------------------------------------------------- figures

def plot_first_steps(curves: dict, profile: str):
    """Training loss (top) and gradient norm before clipping (bottom) of the first steps, per piece and init."""
    fig, axes = plt.subplots(2, len(curves), figsize=(4.2 * len(curves), 6.6), squeeze=False)
    colors = {"zeros": "tab:red", "normal": "tab:blue"}
    for j, (piece, by_init) in enumerate(curves.items()):
        for init, h in by_init.items():
            label = "zeros (authors)" if init == "zeros" else "N(0, 0.02) (MAE)"
            axes[0, j].plot(h.step, h.loss, marker=".", color=colors[init], label=label)
            axes[1, j].plot(h.step, h.grad_norm, marker=".", color=colors[init], label=label)
        axes[0, j].set(title=piece, yscale="log", ylabel="training loss" if j == 0 else None)
        axes[1, j].set(yscale="log", xlabel="optimiser step", ylabel="gradient norm (before clipping)" if j == 0 else None)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, title="[MASK] init", title_fontsize=8, loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=2)
    fig.suptitle(f"[MASK] init: the first optimiser steps ({report.title_tag(profile)})")
    fig.tight_layout()
    return fig


def plot_learning_curves(res: dict):
    """Full training-loss curves of every run trained here (normal; zeros where trained fresh)."""
    pieces = list(res["runs"]["normal"]["histories"])
    fig, axes = plt.subplots(1, len(pieces), figsize=(4.2 * len(pieces), 4.0), squeeze=False)
    for ax, piece in zip(axes[0], pieces):
        several = sum(len(r["histories"].get(piece, [])) for r in res["runs"].values()) > 1
        for init, color in (("zeros", "tab:red"), ("normal", "tab:blue")):
            hs = res["runs"][init]["histories"].get(piece, [])
            seeds = list(res["runs"][init].get("per_seed", {})) if piece == "Synthetic" else []
            for k, h in enumerate(hs):
                if "loss" not in h:  # no logged row (a dry run's two steps)
                    continue
                h = h.dropna(subset=["loss"])
                run = (f", seed {seeds[k]}" if len(seeds) == len(hs) else f", run {k + 1}") if several else ""
                ax.plot(h.step, h.loss, color=color, alpha=1.0 if k == 0 else 0.5, marker="." if len(h) < 10 else None,
                        label=init + run)
        ax.set(title=piece, xlabel="step", yscale="log")
        # below the axis label, not on it: anchored lower than the tick labels and "step" reach
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.24), ncol=3)
    axes[0, 0].set_ylabel("training loss (logged mean)")
    fig.suptitle(f"[MASK] init: training loss of every run trained here ({report.title_tag(res['profile'])})")
    fig.tight_layout()
    return fig
