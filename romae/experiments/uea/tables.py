"""Reading the recorded rows: differences, scales and the comparison table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import runtime
from ...compendium import report
from ...compendium.reference import peer_values

from .profiles import EXPERIMENT, UEARun, PROFILES


def reading(res: dict) -> list[str]:
    """One sentence per dataset that ran: the pre-trained RoMAE's accuracy (mean +- std over seeds, `spread`)
    against the paper's, the best published peer's, the same classifier's trained from scratch (all labels: the
    control for the claim that pre-training helps) and the baselines' (1-NN DTW, MiniRocket on the kept steps and
    regridded by their times) on the same test series, saying plainly when RoMAE's mean is below the best baseline's."""
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    out = []
    for name, r in res["results"].items():
        f = r["per_seed"]
        ours = f[f.variant == "pre-trained"].accuracy
        p = peers[peers.benchmark == name]
        paper = p[p.model.str.startswith("RoMAE")].value
        ref = f"the paper's {paper.iloc[0]:.4f}" if len(paper) else "no published value"
        best = p[~p.model.str.startswith("RoMAE")].sort_values("value").tail(1)
        peer = f", best published peer {best.model.iloc[0]} {best.value.iloc[0]:.4f}" if len(best) else ""
        kind = f", {runtime.DRY_LABEL}" if r["data"]["generated"] else ""
        b = r["baselines"]
        dtw = b[(b.model == "1-NN DTW") & (b.labels == "all labels")].accuracy.iloc[0]
        rockets = {m: b[(b.model == m) & (b.labels == "all labels")].accuracy
                   for m in ("MiniRocket", "regridded MiniRocket")}
        rockets = {m: acc for m, acc in rockets.items() if len(acc)}
        scratch = f[f.variant == "from scratch"].accuracy
        control = f"; trained from scratch {spread(scratch)}" if len(scratch) else ""
        mr = "".join(f", {m} {spread(acc)}" for m, acc in rockets.items())
        best = max([("1-NN DTW", dtw)] + [(m, acc.mean()) for m, acc in rockets.items()], key=lambda x: x[1])
        plain = (f" RoMAE's mean is below {best[0]}'s ({ours.mean():.4f} < {best[1]:.4f}): on this set the simpler "
                 f"method is at least as good." if len(ours) and ours.mean() < best[1] else "")
        out.append(f"{name} ({res['profile']}{kind}): pre-trained RoMAE {spread(ours)} against {ref}{peer}"
                   f"{control}; baselines on the same {len(r['data']['test'])} test series: 1-NN DTW {dtw:.4f}{mr}."
                   + plain + _scarce_losses(f, b))
    return out


def _scarce_losses(per_seed: pd.DataFrame, base: pd.DataFrame) -> str:
    """A sentence per label-scarce budget where the pre-trained RoMAE's mean is below the better baseline's with the
    same labelled series ('' where it is not)."""
    out = ""
    for variant in per_seed.variant.unique():
        if not variant.startswith("pre-trained, "):
            continue
        labels = variant[len("pre-trained, "):]
        ours = per_seed[per_seed.variant == variant].accuracy.mean()
        same = base[base.labels == labels].groupby("model", sort=False).accuracy.mean().drop("majority class",
                                                                                             errors="ignore")
        if len(same) and ours < same.max():
            out += (f" With {labels}, RoMAE's mean is below {same.idxmax()}'s ({ours:.4f} < {same.max():.4f}) with "
                    "the same labelled series.")
    return out


def spread(values, digits: int = 4) -> str:
    """'mean +- std over n seeds' of some per-seed values, the std 'n/a' for one seed (a spread needs two)."""
    v = pd.Series(values, dtype=float).dropna()
    std = f"{v.std(ddof=1):.{digits}f}" if len(v) > 1 else "n/a"
    return f"{v.mean():.{digits}f} ± {std} over {len(v)} seed{'s' if len(v) != 1 else ''}"


DIFF_METRIC = "accuracy"  # what `differences` compares


TRIVIAL = "the most frequent training class"  # the trivial classifier (`majority_error`)


def scale_of(r: dict, variant: str, n_labelled: int, n_seeds: int) -> dict:
    """One row's facts beside the `paper` profile's (Tables 12, 13; seeds 69, 84, 1066) on the whole dataset:
    epochs of each training, seeds, labelled training series, model, the longest series' tokens, and for a dry
    run's generated series the dataset -> `report.scale`."""
    name, rc, full = r["name"], r["config"], r["full_stats"]
    paper = PROFILES["paper"]
    scratch, budget = variant.startswith("from scratch"), ", " in variant
    k = int(variant.split(", ")[1].split()[0]) if budget else None
    n_paper = full["n_train"] if k is None else min(full["n_train"], k * full["classes"])

    def epochs(c: UEARun, n_pre: int, n_ft: int) -> str:
        ft = f"fine-tuning {c.finetune_config(name, n_ft).epochs}"
        return ft if scratch else f"pre-training {c.pretrain_config(n_pre).epochs} + {ft}"

    ours_tokens = r["stats"]["max_len"] if rc.max_tokens is None else min(r["stats"]["max_len"], rc.max_tokens)
    fields = dict(epochs=(epochs(rc, r["stats"]["n_train"], n_labelled), epochs(paper, full["n_train"], n_paper)),
                  seeds=(n_seeds, len(paper.seeds)), data=(n_labelled, n_paper), model=(rc.encoder, paper.encoder),
                  resolution=(f"{ours_tokens} steps", f"{full['max_len']} steps"))
    if r["data"]["generated"]:
        fields["dataset"] = ("generated series (dry run)", name)
    return report.scale(**fields)


def loss_curves(histories: dict) -> list[list[float]]:
    """The logged training losses of one run's pre-training (if any) and fine-tuning, each in order."""
    curves = [report.loss_curve(histories.get(stage)) for stage in ("pretrain", "finetune")]
    return [c for c in curves if c]


def majority_error(data: dict) -> float:
    """Test error of the trivial classifier: always the most frequent class of the training file."""
    train, test = data["train"].tensors["labels"].numpy(), data["test"].tensors["labels"].numpy()
    return float((test != np.bincount(train).argmax()).mean())


def differences(r: dict, metric: str = DIFF_METRIC) -> pd.DataFrame:
    """Pre-trained minus from scratch for one dataset's run, paired by seed, for every labelled budget
    (`report.difference`): margin = one test series of accuracy (1 / the test series), the smallest difference a
    test set of this size can show. -> rows: dataset, labels, pre, scratch, diff, se, n, margin, verdict, flagged
    (the two trainings' loss flags, `report.loss_flags`: no conclusion from a flagged pair), text."""
    f, out = r["per_seed"], []
    grid = f.pivot(index="seed", columns="variant", values=metric)
    margin = 1.0 / len(r["data"]["test"])
    for pre in [v for v in grid.columns if v.startswith("pre-trained")]:
        scratch = pre.replace("pre-trained", "from scratch")
        if scratch not in grid:
            continue
        res = report.difference(grid[pre].to_numpy(), grid[scratch].to_numpy(), margin,
                                names=("pre-trained", "from scratch"))
        flagged = "; ".join(f"{v}: {r.get('flags', {}).get(v)}" for v in (pre, scratch) if r.get("flags", {}).get(v))
        out.append(dict(dataset=r["name"], labels="all labels" if pre == "pre-trained" else pre.split(", ", 1)[1],
                        pre=pre, scratch=scratch, **res, flagged=flagged, text=report.difference_text(res)))
    return pd.DataFrame(out, columns=["dataset", "labels", "pre", "scratch", "diff", "se", "n", "margin", "verdict",
                                      "flagged", "text"])


def pretraining_differences(res: dict) -> pd.DataFrame:
    """`differences` of every dataset of a run, for the notebook's table."""
    frames = [differences(r) for r in res["results"].values()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def comparison_table(results: dict, profile: str, encoder: str = "tiny") -> pd.DataFrame:
    """Table 6 as published (peers and the paper's RoMAE) beside ours (mean test accuracy over seeds;
    the stds are in the summary and the per-seed table) and the baselines on the same test series
    (`baseline_scores`): one column per dataset that ran, and only the published rows with a value in one."""
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    columns = [f"{name} ({runtime.DRY_LABEL})" if r["data"]["generated"] else name  # not beside the published values
               for name, r in results.items()]
    table = peers.pivot_table(index="model", columns="benchmark", values="value", sort=False).reindex(columns=columns)
    table = table.dropna(how="all")  # a peer without a value for any dataset that ran
    for (name, r), col in zip(results.items(), columns):
        for variant in r["per_seed"].variant.unique():
            f = r["per_seed"][r["per_seed"].variant == variant]
            table.loc[f"RoMAE-{encoder}, {variant} (ours, {profile}, mean of {len(f)} seeds)", col] = f.accuracy.mean()
        for (model, labels), g in r.get("baselines", pd.DataFrame(columns=["model", "labels"])).groupby(
                ["model", "labels"], sort=False):
            seeds = ("" if not g.seed.notna().any() else f", mean of {len(g)} seeds"
                     + ("' labelled series" if labels != "all labels" else ""))
            table.loc[f"{model}{'' if labels == 'all labels' else ', ' + labels} (ours, baseline{seeds})", col] = \
                g.accuracy.mean()
    return table.reset_index().rename(columns={"index": "model"})
