"""Notebook 02's figures (Figs. 3-5 and the control)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...compendium import report

from .scoring import one_sided_spectrum, per_case, trend_fit
from .experiment import positions_label


def plot_control(res: dict):
    """Time-domain MSE (hidden points, vs noisy values) per frequency: scaled positions vs raw t, with the
    trivial predictor's level (grey) and the noise floor; legend outside the axes."""
    fig, ax = plt.subplots(figsize=(9, 4))
    for r, label, color in ((res, f"positions t x {res['config'].position_scale:g}", "tab:blue"),
                            (res["control"], "positions raw t in [0, 1] (authors)", "tab:orange")):
        g = r["one"].groupby("f1")["time_mse_noisy"]
        ax.errorbar(g.mean().index, g.mean(), yerr=g.std(ddof=0), marker="o", capsize=3, color=color, label=label)
    t = res["trivial"]["one"].groupby("f1")["time_mse_noisy"].mean()
    ax.plot(t.index, t.values, color="tab:gray", ls="-.", marker="x", label=f"trivial: {res['trivial']['name']}")
    ax.axhline(res["config"].sines.noise_std ** 2, color="k", ls=":", lw=1, label="noise variance (floor)")
    ax.set(xlabel="frequency f [Hz]", ylabel="MSE on hidden points", yscale="log",
           title=f"One mode: the effect of the position scale ({report.title_tag(res['profile'])})")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- figures

def _tag(res: dict) -> str:
    """A figure title's run description with the positions used: 'quick profile, positions t x 99, reduced'."""
    tag = report.title_tag(res["profile"]).split(", ", 1)
    return ", ".join([tag[0], f"positions {positions_label(res['config'].position_scale)}", *tag[1:]])


def plot_fig3(res: dict, f_min: int = 9):
    """Figure 3: mean (+- std) FFT MSE (left) and time-domain MSE (right) vs frequency, one mode;
    the two-mode series averaged over the pairs that contain f are overlaid (dashed); grey: the trivial
    predictor (`trivial`) on the same series. Middle: the claim's test on its own scale, the one-mode FFT MSE over
    f >= f_min (per-frequency means) with its least-squares line drawn over the markers (red), whose slope is the
    paper's claim (> 0, App. B.4)."""
    one, two = res["one"], res["two"]
    both = pd.concat([two.assign(f=two.f1), two.assign(f=two.f2)])  # each pair counts for both its frequencies
    triv = res["trivial"]["one"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.2), width_ratios=(1, 0.8, 1))
    for ax, cols, title in ((axes[0], [("fft_mse", "FFT MSE", "tab:blue")], "MSE on the FFT"),
                            (axes[2], [("time_mse_noisy", "vs noisy", "tab:blue"),
                                       ("time_mse_clean", "vs clean", "tab:green")],
                             "MSE in the time domain (hidden points)")):
        for col, label, color in cols:  # one colour per metric: solid = 1 mode, dashed = 2 modes
            g = one.groupby("f1")[col]
            ax.errorbar(g.mean().index, g.mean(), yerr=g.std(ddof=0), marker="o", capsize=3, color=color,
                        label=f"1 mode, {label} (mean +- std)")
            m2 = both.groupby("f")[col].mean()
            ax.plot(m2.index, m2.values, ls="--", marker=".", color=color, alpha=0.7,
                    label=f"2 modes, {label} (mean over pairs with f)")
        t = triv.groupby("f1")[cols[0][0]].mean()
        ax.plot(t.index, t.values, color="tab:gray", ls="-.", marker="x", label=f"trivial, 1 mode, {cols[0][1]}")
        ax.set(xlabel="frequency f [Hz]", ylabel="MSE", title=title)
    fit = trend_fit(one, "fft_mse", f_min)
    m = one[one.f1 >= f_min].groupby("f1").fft_mse.mean()
    axes[1].plot(m.index, m.values, "o", color="tab:blue", ms=6, zorder=2, label=f"1 mode, FFT MSE, mean per f")
    if fit is not None:  # drawn over the markers, on the claim's own scale
        axes[1].plot(m.index, fit["slope"] * m.index.values + fit["intercept"], color="tab:red", lw=2, zorder=3,
                     label=f"least-squares line: slope {fit['slope']:.2g} /Hz,\n95 % CI [{fit['low']:.2g}, "
                           f"{fit['high']:.2g}] (paper: > 0)")
    axes[1].set(xlabel="frequency f [Hz]", ylabel="FFT MSE", title=f"The claim's test: 1 mode, f >= {f_min} Hz")
    for ax in axes:  # one column under each panel: two columns were wider than the panel and overlapped
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=1)
    fig.suptitle(f"Frequency retention: interpolating 50 of 100 points ({_tag(res)}); "
                 f"trivial = {res['trivial']['name']}")
    fig.tight_layout()
    return fig


def plot_fig4(res: dict):
    """Figure 4: two modes; mean FFT MSE (left) and time-domain MSE (right) per pair (f1, f2)."""
    table = per_case(res["two"])
    freqs = sorted(set(table.f1) | set(table.f2))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    for ax, col, title in ((axes[0], "fft_mse", "MSE on the FFT"), (axes[1], "time_mse_noisy", "MSE in time (hidden)")):
        grid = np.full((len(freqs), len(freqs)), np.nan)
        for r in table.itertuples():
            i, j = freqs.index(r.f1), freqs.index(r.f2)
            grid[i, j] = grid[j, i] = getattr(r, col)
        im = ax.imshow(grid, origin="lower", cmap="viridis")
        ax.set(xticks=range(len(freqs)), xticklabels=freqs, yticks=range(len(freqs)), yticklabels=freqs,
               xlabel="f2 [Hz]", ylabel="f1 [Hz]",
               title=f"{title}\ntrivial predictor's mean: {res['trivial']['two'][col].mean():.3g}")
        fig.colorbar(im, ax=ax, shrink=0.85)
    fig.suptitle(f"Two frequency modes ({_tag(res)})")
    fig.tight_layout(rect=(0, 0, 1, 0.95))  # room for the suptitle above the two-line panel titles
    return fig


def plot_fig5(res: dict):
    """Figure 5: one 1 + 5 Hz realisation in time (left) and its one-sided FFT magnitude (right)."""
    ex = res["example"]
    t, obs = ex["t"], ex["observed"][0]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    ax = axes[0]
    ax.plot(t, ex["clean"][0], color="k", lw=1, label="clean signal")
    ax.plot(t[obs], ex["values"][0][obs], "o", ms=4, color="tab:blue", label="observed (noisy)")
    ax.plot(t[~obs], ex["values"][0][~obs], "x", ms=4, color="tab:gray", label="hidden (noisy)")
    ax.plot(t[~obs], ex["recon"][0][~obs], "o", ms=4, mfc="none", color="tab:red", label="RoMAE prediction")
    f = ex["freqs"][0]
    ax.set(xlabel="t", ylabel="x(t)", title=f"time domain, f = {f[0]} + {f[1]} Hz")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=4)
    ax = axes[1]
    fs = (len(t) - 1) / (t[-1] - t[0])  # sampling rate: bin k is k * fs / T Hz
    hz = np.fft.rfftfreq(len(t), d=1 / fs)
    ax.plot(hz, one_sided_spectrum(ex["clean"][0].astype(np.float64)), "k-", label="clean")
    ax.plot(hz, one_sided_spectrum(ex["recon"][0].astype(np.float64)), "r--", label="observed + predicted")
    ax.set(xlabel="frequency [Hz]", ylabel="|FFT| (one-sided)", title="spectrum", xlim=(0, 30))
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    fig.suptitle(f"Figure 5: one realisation ({_tag(res)})")
    fig.tight_layout()
    return fig
