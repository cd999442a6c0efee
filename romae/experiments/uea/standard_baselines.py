"""The standard baselines scored on RoMAE's test series (1-NN DTW, MiniRocket, regridded MiniRocket, the majority
class)."""

from __future__ import annotations

import time

import pandas as pd

from ... import baselines, metrics, runtime
from ...compendium import report
from ...compendium.report import record

from .profiles import EXPERIMENT, UEARun, PROFILES, _pct
from .data import labelled_index
from .tables import TRIVIAL


BASELINE_WINDOW = 0.1  # 1-NN DTW's Sakoe-Chiba radius, a share of the longer series (the UCR archive's usual 10 %)


def baseline_scores(data: dict, cfg: UEARun) -> pd.DataFrame:
    """Simple standard baselines on exactly the test series RoMAE is scored on (after the drop, and thinning if
    planned): 1-nearest-neighbour DTW (`romae.baselines.nn1_dtw`: dependent DTW over the kept steps in the file's
    units, Sakoe-Chiba band of BASELINE_WINDOW) with every training series labelled and, for each label-scarce
    budget, with the labelled series of each seed (`labelled_index`); MiniRocket on the kept steps and on the kept
    steps regridded by their times (`minirocket_rows`); and the most frequent training class.
    -> rows: model, labels, seed (None where no seed is involved), n_labelled, accuracy, macro_f1, seconds."""
    train, test = data["train"], data["test"]
    y, truth = train.tensors["labels"].numpy(), test.tensors["labels"].numpy()
    t0 = time.perf_counter()
    D = baselines.dtw_distances(test, train, BASELINE_WINDOW)  # [test, train], computed once
    seconds = time.perf_counter() - t0

    def row(model, labels, seed, n, pred, s=0.0):
        return dict(model=model, labels=labels, seed=seed, n_labelled=n, accuracy=metrics.accuracy(truth, pred),
                    macro_f1=metrics.macro_f1(truth, pred), seconds=s)

    rows = [row("1-NN DTW", "all labels", None, len(y), baselines.nn1_dtw(train, test, labels=y, distances=D), seconds)]
    for k in cfg.label_budgets:
        for seed in cfg.seeds:
            idx = labelled_index(train, k, seed)
            rows.append(row("1-NN DTW", f"{k} labelled per class", seed, len(idx),
                            baselines.nn1_dtw(train, test, labels=y[idx], distances=D[:, idx])))
    rows += minirocket_rows(train, test, cfg, row)
    rows.append(row("majority class", "all labels", None, len(y), baselines.majority_class(y, len(truth))))
    return pd.DataFrame(rows).astype({"seed": "Int64"})


ROCKETS = {  # model -> romae.baselines function: the kept steps in order, or interpolated by their times
    "MiniRocket": baselines.minirocket,
    "regridded MiniRocket": baselines.regridded_minirocket,
}


def minirocket_rows(train, test, cfg: UEARun, row) -> list[dict]:
    """Each of ROCKETS (aeon's MiniRocket on the same kept steps in the file's units: `romae.baselines.minirocket`
    pads them at their ends to one length, `regridded_minirocket` interpolates them by their true times onto one
    regular grid, the file's own step) with every training series labelled, once per seed (the seed draws its
    kernels), and for each label-scarce budget with the labelled series of each seed (`labelled_index`)."""
    y = train.tensors["labels"].numpy()
    out = []
    for model, fn in ROCKETS.items():
        for seed in cfg.seeds:
            t0 = time.perf_counter()
            pred = fn(train, test, labels=y, seed=seed)
            out.append(row(model, "all labels", seed, len(y), pred, time.perf_counter() - t0))
        for k in cfg.label_budgets:
            for seed in cfg.seeds:
                idx = labelled_index(train, k, seed)
                pred = fn(train.subset(idx), test, seed=seed)
                out.append(row(model, f"{k} labelled per class", seed, len(idx), pred))
    return out


BASELINE_MODELS = {  # model -> how record_baselines describes it in a results.csv note
    "1-NN DTW": "1-nearest-neighbour, dependent DTW over the kept steps in the file's units, Sakoe-Chiba radius "
                "{window} of the longer series (romae.baselines)",
    "MiniRocket": "MiniRocket (aeon {aeon}, 10,000 kernels, ridge classifier; romae.baselines.minirocket) over the "
                  "kept steps in the file's units, each series padded at its end with its last step",
    "regridded MiniRocket": "MiniRocket (aeon {aeon}, 10,000 kernels, ridge classifier; "
                            "romae.baselines.regridded_minirocket) over the kept steps in the file's units, linearly "
                            "interpolated by their true times onto one regular grid (the smallest gap between kept "
                            "steps: the file's own step), each series held at its end values beyond them",
}


BASELINE_SETTING = "{name}{labels}, {model} (baseline)"  # results.csv settings of the baselines' rows


def _aeon_version() -> str:
    try:
        from importlib.metadata import version

        return version("aeon")
    except Exception:  # noqa: BLE001 -- not installed: minirocket itself says so
        return "?"


def record_baselines(r: dict, profile: str, trivial: float, reports_dir=None) -> None:
    """results.csv rows of one dataset's 1-NN DTW and MiniRocket baselines (`baseline_scores`): "<name>, <model>
    (baseline)" and "<name>, <k> labelled per class, <model> (baseline)" (mean over the seeds' labelled series, or
    MiniRocket's kernel seeds), accuracy and macro-F1, with their scale facts (labelled series; seeds where they
    draw the labelled series or the kernels)."""
    name, full, paper = r["name"], r["full_stats"], PROFILES["paper"]
    base = r["baselines"]
    for (model, labels), g in base[base.model.isin(list(BASELINE_MODELS))].groupby(["model", "labels"], sort=False):
        budget = labels != "all labels"
        seeded = bool(g.seed.notna().any())
        n_labelled = int(g.n_labelled.iloc[0])
        k = int(labels.split()[0]) if budget else None
        fields = dict(data=(n_labelled, full["n_train"] if k is None else min(full["n_train"], k * full["classes"])))
        if seeded:
            fields["seeds"] = (len(g), len(paper.seeds))
        if r["data"]["generated"]:
            fields["dataset"] = ("generated series (dry run)", name)
        note = ((f"{runtime.DRY_LABEL} (generated series of {name}'s shape); " if r["data"]["generated"] else "")
                + BASELINE_MODELS[model].format(window=_pct(BASELINE_WINDOW), aeon=_aeon_version())
                + f"; the same {len(r['data']['test'])} test series as RoMAE ({_pct(r['config'].drop)} of steps dropped)"
                + (f"; {n_labelled} labelled training series per seed" if budget else "")
                + ("; mean over seeds" if seeded and not budget else ""))
        setting = BASELINE_SETTING.format(name=name, labels=f", {labels}" if budget else "", model=model)
        for metric in ("accuracy", "macro_f1"):
            record(EXPERIMENT, setting, metric, float(g[metric].mean()),
                   ours_std=float(g[metric].std(ddof=1)) if len(g) > 1 else None, n_seeds=len(g) if seeded else 1,
                   profile=profile, scale=report.scale(**fields), note=note,
                   learned=report.learned(1 - float(g.accuracy.mean()), trivial, trivial=TRIVIAL),
                   reports_dir=reports_dir)
