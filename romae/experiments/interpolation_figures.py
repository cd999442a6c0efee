"""Notebook 15's figures and its per-seed Synthetic table, with what each figure compares marked (issue 43).

Every figure of `interpolation`'s results is drawn here: Table 7's comparison whole (`plot_table7`), Figures 7
and 8 and the learning curves (`plot_fig7`, `plot_fig8`, `plot_learning_curves`, to which the `*_marked` and
`plot_training_curves` versions add the numbers each one compares with), and the Spiral in ContiFormer's protocol
(`plot_contiformer`). The numbers compared with: a least-squares oracle in the Spiral generator's own family (it
knows the family, ignores the prior on its parameters: a reference, not a bound; computed by
`interpolation.spiral_diagnostics`, never typed), the paper's and HeTVAE's published stds (peer_values.csv), the
noise variance of each generator (its config's noise_std), and how many seeds are shown.

They live apart from `interpolation` so that the figures read apart from the computation; a figure edited here is
reached by no kept training's or evaluation's code (`romae.compendium.staleness`). Nothing in `interpolation`
imports this module.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..compendium.reference import peer_values

from .interpolation import CONTIFORMER, EXPERIMENT, _paper, title_tag


FLOOR = "least squares in the generator's own family (a, b, direction), noisy observed points, vs clean"


def _seeds_shown(runs: list, shown: int | None = None) -> str:
    """'one seed (seed 0)', 'seed 0, one of 5 trained seeds' or '5 seeds': what a figure shows of a benchmark's runs."""
    n = len(runs)
    if shown is not None and n > 1:
        return f"seed {runs[shown]['seed']}, one of {n} trained seeds"
    return f"one seed (seed {runs[0]['seed']})" if n == 1 else f"{n} seeds"


def _legend(ax, wrap: int | None = None, **kw):
    """The axes' legend, each label once; `wrap`: labels broken into lines of at most that many characters (a long
    label would otherwise widen the legend past its panel, and the constrained layout shrink the panel to fit)."""
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    shown = [textwrap.fill(t, wrap) for t in unique] if wrap else list(unique)
    ax.legend(list(unique.values()), shown, **kw)


def plot_table7(res: dict, diagnostics: pd.DataFrame):
    """Table 7's comparison, each compared number marked with its value. Left: the Spiral RMSE vs the clean curves
    of the trained model, one point per evaluation trial; the paper's number (band: +- its std), the least-squares
    oracle in the generator's own family (`spiral_diagnostics`' row; not a bound) and the trivial predictor, in the
    panel's one unit; ContiFormer's published RMSE is in another protocol (normalised coordinates, all 150 points
    scored: peer_protocols.csv) and is named, never drawn on this axis, as is ours in its protocol (its own row).
    Right: the Synthetic MSE vs the noisy values per protocol, one point per seed; the paper's and HeTVAE's
    published numbers at the 3-10 protocol with their published stds as error bars (peer_values.csv), the noise
    variance of the generator (no MSE against noisy values goes below it) and the trivial predictor per protocol."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(13.5, 6.4), gridspec_kw=dict(width_ratios=(1, 1.5)),
                               layout="constrained")
    spiral = res["spiral"]["runs"]
    trials = pd.concat([r["trials"] for r in spiral])
    p = _paper("Spiral", "rmse_clean")
    floor = float(diagnostics.set_index("predictor").rmse[FLOOR])
    a.plot(np.linspace(-0.15, 0.15, len(trials)), trials.rmse_clean, "o", color="tab:blue", mfc="none",
           label=f"ours: {trials.rmse_clean.mean():.4f} (mean of the trials)")
    a.axhline(p["paper"], color="k", lw=1.5, label=f"paper: {p['paper']:g} +- {p['paper_std']:g}")
    a.axhspan(p["paper"] - p["paper_std"], p["paper"] + p["paper_std"], color="k", alpha=0.1)
    a.axhline(floor, color="tab:purple", ls="-.", lw=1.5,
              label=f"least-squares oracle in the generator's family (not a bound): {floor:.4f}")
    for r in (r for r in peer_values(EXPERIMENT) if r["model"] == "ContiFormer" and r["benchmark"] == "Spiral"):
        a.plot([], [], " ", label=f"ContiFormer (peer) {r['value']:g}: another protocol (normalised coordinates, "
                                  "all 150 points), not on this axis")
    if "spiral_contiformer" in res:  # ours in ContiFormer's protocol: its own row, named beside ContiFormer's
        cf = pd.concat([r["trials"] for r in res["spiral_contiformer"]["runs"]]).rmse_interpolation.mean()
        a.plot([], [], " ", label=f"ours in ContiFormer's protocol: interpolation RMSE {cf:.4f} (row '{CONTIFORMER}', "
                                  "normalised units, beside ContiFormer's read x1e-2), not on this axis")
    trivial = res["trivial"]["Spiral"]
    a.plot([0.35], [trivial], "s", color="0.5", label=f"trivial, each spiral's observed mean: {trivial:.3g}")
    a.set(xticks=[], xlim=(-0.5, 0.6), yscale="log", ylabel="RMSE at the hidden points vs the clean curves (log)",
          xlabel="evaluation trials (spread sideways to be seen); the trivial predictor at the right")
    a.set_title(f"Spiral: {_seeds_shown(spiral)}, one point per evaluation trial\n({title_tag(res, 'Spiral')})",
                fontsize=10)
    _legend(a, wrap=60, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.04))
    synthetic = res["synthetic"]["runs"]
    protos = ["3-10"] + [str(k) for k in res["profile"].eval_n_obs]
    for j, proto in enumerate(protos):
        per_seed = [r["series"].loc[r["series"].protocol == proto, "mse_noisy"].mean() for r in synthetic]
        b.plot(j + np.linspace(-0.08, 0.08, len(per_seed)), per_seed, "o", color="tab:blue",
               label="ours, one point per seed (their mean beside)" if j == 0 else None)
        b.annotate(f"{np.mean(per_seed):.4f}", (j + 0.1, float(np.mean(per_seed))), xytext=(4, 0),
                   textcoords="offset points", va="center", fontsize=8, color="tab:blue")
        b.plot([j + 0.38], [res["trivial"][f"Synthetic, {proto}", "mse_noisy"]], "s", color="0.5",
               label="trivial: the training mean" if j == 0 else None)
    p = _paper("Synthetic, 3-10 observed", "mse_noisy")
    b.hlines(p["paper"], -0.45, 0.45, colors="k", lw=1.5)
    b.errorbar([-0.3], [p["paper"]], yerr=[p["paper_std"]], fmt="_", color="k", ms=14, capsize=4,
               label=f"paper (3-10 observed): {p['paper']:g} +- {p['paper_std']:g}")
    for r in (r for r in peer_values(EXPERIMENT) if r["model"] == "HeTVAE" and r["benchmark"].startswith("Synthetic")):
        std = float(r["std"]) if r.get("std") not in (None, "") else None
        b.hlines(r["value"], -0.45, 0.45, colors="tab:gray", linestyles="--")
        b.errorbar([-0.22], [r["value"]], yerr=[std] if std else None, fmt="D", color="tab:gray", ms=4, capsize=4,
                   label=f"HeTVAE (peer, protocol not stated): {r['value']:g}" + (f" +- {std:g}" if std else ""))
    noise = res["profile"].synthetic_data.noise_std ** 2
    b.axhline(noise, color="tab:purple", ls=":", lw=1.5, label=f"noise variance: {noise:g} (the floor)")
    b.set(xticks=range(len(protos)), xticklabels=[f"{p}\nobserved" for p in protos], xlim=(-0.55, len(protos) - 0.45),
          ylim=(0, None), ylabel="MSE at the unobserved points vs the noisy values")
    b.set_title(f"Synthetic: {_seeds_shown(synthetic)}, one point per seed ({title_tag(res, 'Synthetic')})",
                fontsize=10)
    _legend(b, wrap=50, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    fig.suptitle("Table 7, Spiral and Synthetic: ours beside the paper's values, the peers' and the references")
    return fig


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
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"Figure 7: Spiral interpolation ({title_tag(res, 'Spiral')})")
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
    axes[0, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"Figure 8: Synthetic interpolation ({title_tag(res, 'Synthetic')})")
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
        ax.set(xlabel="step", ylabel="training MSE (hidden points, noisy)", yscale="log",
               title=f"{name.capitalize()} ({title_tag(res, name.capitalize())})")
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def plot_fig7_marked(res: dict):
    """`plot_fig7` with the seed it shows in its title."""
    fig = plot_fig7(res)
    fig.suptitle(f"Figure 7: Spiral interpolation, {_seeds_shown(res['spiral']['runs'], 0)} "
                 f"({title_tag(res, 'Spiral')})")
    fig.tight_layout()
    return fig


def plot_fig8_marked(res: dict, n_examples: int = 2):
    """`plot_fig8` with a y label and the seed it shows in its title."""
    fig = plot_fig8(res, n_examples)
    for ax in fig.axes[::len(fig.axes) // n_examples]:
        ax.set_ylabel("value (noisy / clean / predicted)")
    fig.suptitle(f"Figure 8: Synthetic interpolation, {_seeds_shown(res['synthetic']['runs'], 0)} "
                 f"({title_tag(res, 'Synthetic')})")
    fig.tight_layout()
    return fig


def plot_training_curves(res: dict):
    """`plot_learning_curves` with each benchmark's floor drawn: the variance of its generator's noise (the training
    loss is an MSE against noisy values, per coordinate), and the number of seeds in each title."""
    fig = plot_learning_curves(res)
    for ax, name in zip(fig.axes, ("spiral", "synthetic")):
        noise = getattr(res["profile"], f"{name}_data").noise_std ** 2
        ax.axhline(noise, color="k", ls=":", lw=1.2, label=f"noise variance {noise:g} (the floor)")
        ax.set_title(f"{name.capitalize()}, {_seeds_shown(res[name]['runs'])} "
                     f"({title_tag(res, name.capitalize())})")
        _legend(ax, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)  # below: off the curves
    fig.set_size_inches(11, 5.2)  # room for the legends under the panels
    fig.tight_layout()
    return fig


def synthetic_protocols(res: dict) -> pd.DataFrame:
    """Synthetic test MSE per protocol (3-10, 3, 10, 20 observed), against the noisy and the clean values: the mean
    over the trained seeds (the number in Table 7's row) and its std; then each seed's MSE against the noisy values."""
    runs = res["synthetic"]["runs"]
    per = pd.concat([r["series"].groupby("protocol", sort=False)[["mse_noisy", "mse_clean"]].mean()
                     .assign(seed=r["seed"]) for r in runs])
    out = pd.DataFrame(index=per.index.unique())
    for metric in ("mse_noisy", "mse_clean"):
        g = per.groupby(level=0, sort=False)[metric]
        out[f"{metric}, mean of {len(runs)} seeds"] = g.mean()
        out[f"{metric}, std"] = g.std(ddof=1) if len(runs) > 1 else np.nan
    for seed, f in per.groupby("seed"):
        out[f"mse_noisy, seed {seed}"] = f["mse_noisy"]
    out.index.name = "observed"
    return out


def plot_contiformer(res: dict):
    """The Spiral in ContiFormer's protocol: two test spirals of opposite chirality (first trial, first seed) in
    normalised coordinates: the clean curve over all 150 points, the 50 observed noisy points (all in the first
    half), RoMAE's predictions at the hidden points of the first half (interpolation) and of the second (extrapolation),
    each panel titled with the spiral's RMSE over all 150 points (spiral.py's, the observed points scored by their
    noisy values)."""
    d = res["spiral_contiformer"]["runs"][0]["first"]
    half = len(d["t"]) // 2
    picks = [int(np.argmax(~d["clockwise"])), int(np.argmax(d["clockwise"]))]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    for ax, i in zip(axes, picks):
        obs, second = d["observed"][i], np.arange(len(d["t"])) >= half
        err = float(np.sqrt(((d["recon"][i] - d["clean"][i]) ** 2).sum(-1).mean()))
        ax.plot(*d["clean"][i].T, color="tab:green", lw=1.2, label="clean trajectory (150 points)")
        ax.plot(*d["values"][i][obs].T, "o", color="tab:red", ms=3.5, label=f"observed (noisy): {obs.sum()} of the "
                                                                           f"first {half}")
        ax.plot(*d["recon"][i][~obs & ~second].T, "o", mfc="none", color="tab:blue", ms=4,
                label="RoMAE, interpolation (hidden, first half)")
        ax.plot(*d["recon"][i][second].T, "^", mfc="none", color="tab:purple", ms=4,
                label="RoMAE, extrapolation (second half)")
        ax.set(title=("clockwise" if d["clockwise"][i] else "counter-clockwise") + f" (test spiral {i}): RMSE "
                     f"{err:.4f}", xlabel="x (min-max normalised)", ylabel="y (min-max normalised)", aspect="equal")
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"Spiral in ContiFormer's protocol, {_seeds_shown(res['spiral_contiformer']['runs'], 0)} "
                 f"({title_tag(res, CONTIFORMER)})")
    fig.tight_layout()
    return fig
