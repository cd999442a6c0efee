"""Notebook 11's figures."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ...compendium import report
from ...images import mae_reconstruction
from ...model import RoMAEForPreTraining
from ...compendium.reference import paper_values, peer_values

from .profiles import EXPERIMENT


# ----------------------------------------------------------------------------- figures

def title_tag(profile: str) -> str:
    """'(quick profile, reduced)' for a figure title; '(paper profile)' at the paper's settings."""
    return f"({report.title_tag(profile)})"


def plot_accuracy(res: dict):
    """Our accuracy per setting beside the published values as horizontal lines: the paper's RoMAE-small rows
    (Table 3) and the peers (SSAST after AudioSet-20k / LibriSpeech as the paper quotes them, SSAST from scratch
    from its own paper). With several folds the bar is the mean over folds and a dot each fold's accuracy (mean
    over seeds), so the fold spread is seen; with one split, the mean over seeds and a dot per seed."""
    f, profile = res["per_run"], res["profile"]
    by = "split" if f.split.nunique() > 1 else "seed"
    acc = f.groupby(["setting", by], sort=False).accuracy_pct.mean()
    unit = "fold" if by == "split" else "seed"
    names = list(dict.fromkeys(acc.index.get_level_values(0)))
    fig, ax = plt.subplots(figsize=(9, 4.8), layout="constrained")
    x = np.arange(len(names))
    ax.bar(x, [acc[n].mean() for n in names], 0.55, color="tab:blue", alpha=0.35, label=f"ours, mean over {unit}s")
    for i, n in enumerate(names):
        ax.plot(np.full(len(acc[n]), i), acc[n].to_numpy(), "o", color="tab:blue", label=f"ours, one {unit}" if i == 0 else None)
        if len(acc[n]) > 1:
            ax.errorbar(i + 0.32, acc[n].mean(), yerr=acc[n].std(ddof=1), fmt="none", ecolor="tab:blue", capsize=3,
                        label=f"ours, +-1 std over {unit}s" if i == 0 else None)
    published = [(f"paper: {r['setting']}", r["paper"]) for r in paper_values() if r["experiment"] == EXPERIMENT]
    published += [(f"{r['model']} (published)", r["value"]) for r in peer_values(EXPERIMENT)]
    styles = ["-", "--", "-.", ":", (0, (5, 1))]
    for k, (name, v) in enumerate(published):
        ax.axhline(v, color="k" if name.startswith("paper") else f"C{k + 1}", ls=styles[k % len(styles)], lw=1.2,
                   label=f"{name}: {v:g} %")
    ax.axhline(100 / len(res["data"]["classes"]), color="0.5", ls=":", lw=1, label="chance")
    ax.set_xticks(x, [n.replace(", ", ",\n") for n in names], fontsize=7)
    ax.set(ylabel="accuracy (%)", ylim=(0, 100))
    what = ("ours on the subset, no external pre-training: not comparable with the published rows" if res["subset"]
            else "ESC-50, 5-fold cross-validation")
    ax.set_title(f"Table 3: ESC-50 accuracy {title_tag(profile)}\n{what}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def reconstruct(model: RoMAEForPreTraining, data, idx, seed: int = 0) -> dict:
    """MAE's picture (`romae.images.mae_reconstruction`) of clips idx: {original, masked, prediction, pasted}
    log-Mel spectrograms [B, T, F] (NaN where nothing is shown) and the mask [B, N]."""
    r = mae_reconstruction(model, data, idx, seed)
    return {k: v if k == "mask" else v[:, 0] for k, v in r.items()}


def pretrained_model(res: dict, label: str, split: str, seed: int) -> RoMAEForPreTraining:
    model = RoMAEForPreTraining(res["config"].model_config())
    model.load_state_dict(res["results"][(label, split, seed)]["pretrained_state"])
    return model.eval()


def plot_reconstruction(res: dict, label: str, split: str, seed: int, i: int = 0):
    """One test clip: its spectrogram, the 75 % masked input, the prediction pasted among visible patches."""
    data = res["views"][split]["test"]
    r = reconstruct(pretrained_model(res, label, split, seed), data, [i])
    fig, axes = plt.subplots(3, 1, figsize=(9, 6.6), sharex=True)
    titles = ("log-Mel spectrogram", "masked input (75 % of the 16x16 patches hidden)",
              "reconstruction: predicted patches among the visible ones (each with the original patch's mean/std)")
    vmin, vmax = np.nanpercentile(r["original"][0].numpy(), [1, 99])
    for ax, key, title in zip(axes, ("original", "masked", "pasted"), titles):
        ax.imshow(r[key][0].T.numpy(), origin="lower", aspect="auto", cmap="magma", vmin=vmin, vmax=vmax,
                  interpolation="nearest")
        ax.set(title=title, ylabel="Mel bin")
    axes[-1].set(xlabel="frame (10 ms)")
    name = res["data"]["classes"][int(data.labels[i])]
    fig.suptitle(f"{label}, seed {seed}: test clip of class '{name}' {title_tag(res['profile'])}", fontsize=9)
    fig.tight_layout()
    return fig


def plot_per_class(res: dict, label: str):
    """Accuracy per class on the test clips, summed over splits and seeds of one setting."""
    correct = np.zeros(len(res["data"]["classes"]))
    total = np.zeros_like(correct)
    for (lab, split, _), r in res["results"].items():
        if lab != label:
            continue
        y = res["views"][split]["test"].labels.numpy()
        p = r["outputs"].argmax(-1).numpy()
        np.add.at(total, y, 1)
        np.add.at(correct, y, (p == y).astype(float))
    acc = np.divide(correct, total, out=np.full_like(correct, np.nan), where=total > 0)
    order = np.argsort(-np.nan_to_num(acc, nan=-1))
    fig, ax = plt.subplots(figsize=(12, 3.4))
    ax.bar(range(len(order)), acc[order], color="tab:blue")
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels([res["data"]["classes"][k] for k in order], rotation=90, fontsize=6)
    ax.set(ylabel="accuracy", ylim=(0, 1),
           title=f"per-class accuracy on the test clips {title_tag(res['profile'])}: {label}")
    fig.tight_layout()
    return fig
