"""The records: generated for a dry run, prepared, bounded and winsorised; the hidden rows scored."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ... import runtime
from ...data import physionet as P

from .profiles import PAPER_MAX_TOKENS, BOUND_QUANTILES, CATEGORICAL_MAX, UNITS, Profile


# ----------------------------------------------------------------------------- data

def dry_records() -> pd.DataFrame:
    """A dry run's records where the archives are absent (`runtime.DRY_LABEL`): 40 generated records of the
    benchmark's shape, 41 variables over 48 h, every eighth with the longest training record's PAPER_MAX_TOKENS
    cells, the others 50-800 (438 on average in the data). Not data."""
    return P.generate(40, lengths=(50, 800), longest=PAPER_MAX_TOKENS)


def prepare(prof: Profile, root=None, cache_dir=None, generated: bool = False) -> dict:
    """Long tables of the split (raw values, time in [0, 1] as `t`), and both scalings fitted on train.
    generated: a dry run without the archives: `dry_records` instead of the records (`source` says which)."""
    df = dry_records() if generated else P.records(root, quantization=prof.quantization, cache_dir=cache_dir)
    train_ids, test_ids = P.split(df.record_id)
    train_ids, test_ids = np.sort(train_ids), np.sort(test_ids)
    if runtime.dry_run():  # a few records, the longest training record among them (the paper's padded length)
        longest = df[df.record_id.isin(train_ids)].groupby("record_id").size().idxmax()
        train_ids = np.union1d([longest], train_ids[: runtime.dry_count(len(train_ids)) - 1])
        test_ids = test_ids[: runtime.dry_count(len(test_ids), at_most=8)]  # x 2 units x 2 draws x 2 models
    if prof.run.max_train_records:
        train_ids = train_ids[: prof.run.max_train_records]
    if prof.max_test_records:
        test_ids = test_ids[: prof.max_test_records]
    parts = {}
    for name, ids in (("train", train_ids), ("test", test_ids)):
        d = df[df.record_id.isin(ids)].reset_index(drop=True)
        parts[name] = d.assign(t=d.time / d.time.max())  # mTAN: each split's times / its largest time
    tr = parts["train"]
    # statistics of the recorded values (HeTVAE's trimmed z-score, mTAN's min-max), then the gross errors clipped
    scalings = {m: P.Scaling.fit(m, tr.variable.to_numpy(), tr.value.to_numpy()) for m in P.Scaling.METHODS}
    bounds = anomaly_bounds(tr.variable.to_numpy(), tr.value.to_numpy())
    parts = {name: winsorise(d, bounds) for name, d in parts.items()}
    tr = parts["train"]
    freq = tr.groupby("variable").size().reindex(range(len(P.VARIABLES)), fill_value=0)
    return dict(**parts, scalings=scalings, bounds=bounds, source=runtime.DRY_LABEL if generated else
                "PhysioNet 2012 set-a + set-b", train_mean=tr.groupby("variable").value.mean()
                .reindex(range(len(P.VARIABLES))).to_numpy(), obs_per_record=(freq / len(train_ids)).to_numpy())


def anomaly_bounds(variable, value, n_variables: int = len(P.VARIABLES)) -> np.ndarray:
    """HeTVAE's anomaly bounds per variable, [2, n_variables] (low, high): the BOUND_QUANTILES of the variable's
    training values (`filter_anomalies` in reml-lab/hetvae src/utils.py). -inf / +inf for a variable never
    observed, or one with at most CATEGORICAL_MAX distinct values (a code such as Gender -1/0/1, which HeTVAE's
    z-score leaves unscaled and which is not to be clipped)."""
    variable, value = np.asarray(variable), np.asarray(value, dtype=np.float64)
    bounds = np.stack([np.full(n_variables, -np.inf), np.full(n_variables, np.inf)])
    for j in range(n_variables):
        x = value[variable == j]
        if len(np.unique(x)) > CATEGORICAL_MAX:
            bounds[:, j] = np.quantile(x, BOUND_QUANTILES)
    return bounds


def winsorise(df: pd.DataFrame, bounds: np.ndarray) -> pd.DataFrame:
    """`df` with `value` clipped to its variable's `bounds` ([2, n_variables], `anomaly_bounds`) and the value as
    recorded kept in `raw`; every method sees, and is scored on, `value`."""
    raw = df["raw"].to_numpy() if "raw" in df else df.value.to_numpy()
    var = df.variable.to_numpy()
    return df.assign(raw=raw, value=np.clip(raw, bounds[0, var], bounds[1, var]))


def hidden_rows(df: pd.DataFrame, unit: str, seed: int, keep: float = 0.5) -> np.ndarray:
    """Evaluation mask over the rows of a long table: True = hidden (scored). Per record, floor(n * keep)
    of its n observed tokens (unit 'token') or of its observed time points (unit 'timepoint') stay
    visible, at least one; draws depend on (seed, record id) only, not on which other records are present."""
    if unit not in UNITS:
        raise ValueError(f"unknown masking unit {unit!r}; choose one of {list(UNITS)}")
    key_cols = ["record_id"] if unit == "token" else ["record_id", "time"]
    units = df[key_cols] if unit == "token" else df[key_cols].drop_duplicates()
    rid = units.record_id.to_numpy()
    if len(rid) and (np.diff(rid) < 0).any():
        raise ValueError("the table must be sorted by record_id")
    starts = np.flatnonzero(np.r_[True, rid[1:] != rid[:-1]]) if len(rid) else np.array([], int)
    ends = np.r_[starts[1:], len(rid)]
    hide = np.zeros(len(rid), dtype=bool)
    for s, e in zip(starts, ends):  # a generator per record, seeded by (seed, record id)
        rank = np.random.default_rng([seed, int(rid[s])]).random(e - s).argsort().argsort()
        hide[s:e] = rank >= max(math.floor((e - s) * keep), 1)
    if unit == "token":
        return hide
    merged = df[key_cols].merge(units.assign(_h=hide), on=key_cols, how="left", validate="many_to_one")
    return merged._h.to_numpy(bool)
