"""The notebook's `run` and the tables it returns."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd

from ...compendium import report
from ... import runtime
from ...compendium.cache import cached
from ...data import physionet as P
from ...data.catalog import require
from ...compendium.reference import peer_values
from ...compendium.report import record, save_table

from .profiles import (
    EXPERIMENT, PAPER_TRAIN_RECORDS, PAPER_TEST_RECORDS, PAPER_POSITIONS, NORMS, UNITS, METHODS, TRIVIAL,
    setting, RunConfig, PROFILES, config, data_needs)
from .records import prepare
from .training import train, _load, evaluate
from .spikes import batch_extremes


# ----------------------------------------------------------------------------- the experiment

def run(profile: str = "smoke", reports_dir=None, data_root=None, cache_dir=None, refresh: bool = False,
        checkpoints: bool | None = None) -> dict:
    """Prepare the data, train (cached), evaluate every method, record rows, save the tables."""
    prof = config(profile)
    checkpoints = profile != "smoke" if checkpoints is None else checkpoints
    if runtime.dry_run():  # two mask draws: the std over draws is still computed
        prof = dataclasses.replace(prof, mask_draws=runtime.dry_count(prof.mask_draws, at_most=2))
    generated = runtime.dry_run() and not P.present(data_root)  # a dry run without the data: generated records
    if generated:
        print(f"PhysioNet 2012 is not under the data root; {runtime.DRY_LABEL}")
    else:
        require(data_needs(profile), data_root)  # DataMissing with the fetch command, before any work
    data = prepare(prof, data_root, cache_dir, generated)
    runs = {"RoMAE": prof.run} | ({"RoMAE, raw time": prof.control} if prof.control is not None else {})
    batches = batch_extremes(data, prof.run)  # the training batches, replayed (the control draws the same ones)
    trained = {name: train(prof, r, data, cache_dir, refresh, checkpoints, profile) for name, r in runs.items()}
    models = {name: (runs[name], _load(runs[name], t)) for name, t in trained.items()}
    key = dict(prof=dataclasses.asdict(prof), runs={k: t["run_id"] for k, t in trained.items()}, v=2)
    ev = cached("physionet_eval", key, lambda: evaluate(prof, data, models), cache_dir=cache_dir, refresh=refresh)

    summary = ordered(ev["mse"].groupby(["method", "norm", "unit"]).mse.agg(["mean", "std", "count"]).reset_index()
                      .rename(columns={"count": "mask_draws"}))
    summary["n_models"] = [int(m in runs) for m in summary.method]  # trained models behind the row
    n_train, n_test = data["train"].record_id.nunique(), data["test"].record_id.nunique()
    generated = data["source"] == runtime.DRY_LABEL
    flags = {name: report.loss_flags(loss_curve(t["history"])) for name, t in trained.items()}
    excluded = unscored(ev["mse"])
    means = summary.set_index(["method", "norm", "unit"])["mean"]
    for row in summary.itertuples():
        method = row.method
        draws = ((f"one trained model (seed {runs[method].seed})" if method in runs else "no training")
                 + f", scored on {row.mask_draws} seeded evaluation mask draw(s) (mean +- std over the draws)")
        score = scoring_note(row.norm, excluded) + (f"; {runtime.DRY_LABEL}" if generated else "")
        if method in runs:
            r = runs[method]
            note = (f"{'RoMAE' if method == 'RoMAE' else 'control: RoMAE with raw time'}, {r.encoder} encoder + "
                    f"{r.decoder} decoder with [CLS], trained on {NORMS[r.scaling]} values with "
                    f"{UNITS[r.train_unit]}s, batch {r.batch_size}, lr {r.lr:g}; {draws}; {score}")
            extra = dict(scale=scale_of(r, n_train, n_test, generated), losses=loss_curve(trained[method]["history"]),
                         learned=report.learned(row.mean, means[TRIVIAL, row.norm, row.unit],
                                                trivial="the training mean of each variable"))
        else:
            note = f"baseline ({method}); {draws}; {score}"
            extra = dict(scale=scale_of(None, n_train, n_test, generated))
        std = None if not math.isfinite(row.std) else float(row.std)
        record(EXPERIMENT, setting(row.norm, row.unit, method), "mse", float(row.mean), ours_std=std,
               n_seeds=int(row.n_models), profile=profile, note=note, reports_dir=reports_dir, **extra)
    table = summary.assign(setting=[setting(n, u) for n, u in zip(summary.norm, summary.unit)],
                           source=[f"this run ({profile}; {m} trained model(s), {d} mask draws)"
                                   for m, d in zip(summary.n_models, summary.mask_draws)])
    table = table.rename(columns={"mean": "value"})
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    peers = peers[peers.benchmark.str.startswith("PhysioNet")].rename(columns={"benchmark": "setting",
                                                                              "model": "method"})
    full = pd.concat([peers[["setting", "method", "metric", "value", "std", "source"]],
                      table.assign(metric="mse")[["setting", "method", "metric", "value", "std", "source"]]],
                     ignore_index=True)
    save_table(full, "table7_physionet", reports_dir)
    return dict(profile=prof, data=data, trained=trained, runs=runs, eval=ev, summary=summary, table=full,
                profile_name=profile, flags=flags, scale=scale_of(prof.run, n_train, n_test, generated),
                batches=batches)


def ordered(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows in reading order: the headline scoring first (NORMS), token mask first, RoMAE before the others."""
    rank = {col: {v: i for i, v in enumerate(order)}
            for col, order in (("norm", NORMS), ("unit", UNITS), ("method", METHODS))}
    return summary.sort_values(["norm", "unit", "method"], key=lambda c: c.map(rank[c.name]).fillna(len(rank[c.name])),
                               kind="stable").reset_index(drop=True)


def scale_of(run: RunConfig | None, n_train: int, n_test: int, generated: bool = False) -> dict:
    """A row's facts beside the paper's (`report.scale`): for a RoMAE run (`run`) its epochs, trained models,
    model and positions against the `paper` profile's Table 21 (seeds: not stated in the paper) and App. D.9's
    raw positions; for a baseline (`run` None) only the records it used."""
    fields = dict(data=(f"{n_train} train / {n_test} test records",
                        f"{PAPER_TRAIN_RECORDS} train / {PAPER_TEST_RECORDS} test records"))
    if generated:
        fields["dataset"] = ("generated records (dry run)", "PhysioNet 2012 set-a + set-b")
    if run is not None:
        paper = PROFILES["paper"].run
        fields.update(epochs=(run.epochs, paper.epochs), seeds=(1, None),
                      model=(f"{run.encoder} encoder + {run.decoder} decoder",
                             f"{paper.encoder} encoder + {paper.decoder} decoder"),
                      positions=(f"t x {run.time_scale:g}", PAPER_POSITIONS))
    return report.scale(**fields)


loss_curve = report.loss_curve  # a history's logged training losses


def unscored(mse: pd.DataFrame) -> float:
    """The share of hidden values the 'gross outliers unscored' scoring leaves out (recorded outside HeTVAE's
    anomaly bounds), over every draw and unit."""
    n = mse[mse.method == mse.method.iloc[0]].groupby("norm").n_scored.sum()
    return float(1 - n["zscore_inliers"] / n["zscore"]) if len(n) and n.get("zscore", 0) else 0.0


def scoring_note(norm: str, excluded: float) -> str:
    """How a scoring scores, for a row's note."""
    values = "values winsorised at HeTVAE's anomaly bounds (0.1 %/99.95 % training quantiles per variable)"
    if norm == "zscore_inliers":
        return (f"{values}; scored on the z-score without the hidden values recorded beyond the bounds "
                f"({100 * excluded:.2f} % of the hidden values)")
    if norm == "zscore":
        return (f"{values}; every hidden value scored on the z-score (the paper's protocol, HeTVAE's "
                "evaluate_hetvae)")
    return f"{values}; every hidden value scored on mTAN's min-max scale"
