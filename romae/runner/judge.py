"""A result row judged for the front page, at summary time (issue 43): the compendium's gates and comparison
(`romae.compendium.verdicts.row_status`, unchanged, what the notebooks print) read with three rules a reviewer
would sign, stated in SUMMARY.md:

- **learned** (`learned_now`): a model learned its task when its error is clearly below the trivial predictor's:
  the upper end of its 95 % t interval over seeds (or, with one seed, its error) at most `LEARN_RATIO` x the
  trivial predictor's error. The ratio is one that every paper number with a recorded trivial predictor passes
  (tested): the paper's own Synthetic 0.233 sits at 0.50x its training mean, its PhysioNet 0.57 at 0.54x.
- **seeds** (`seed_values`, `converged`): where a run published its seeds (`tables/<experiment>_per_seed.csv`
  with `setting`, `seed` and the metric's column), a seed far out on the worse side (more than `OUTLIER`
  robust deviations from the others' median) did not converge: the row is judged on the seeds that did, and says
  so ("on 4 of 5 seeds 0.0043-0.006; seed 46 did not converge: 0.903"). One seed is said.
- **floor** (`floor_of`): a reference better than what any model can reach on the data (paper_values' `floor`,
  a number the notebook computed, e.g. least squares in the Spiral generator's own family) is not reproducible:
  a row worse than it reads "not reproduced: the paper's 0.0183 lies below the attainable floor 0.0275".

This module is the runner's: no kernel imports it, so its rules can change without staling an artefact.
"""

from __future__ import annotations

import functools
import math
from fnmatch import fnmatchcase
from pathlib import Path

import pandas as pd

from ..compendium.stats import LEVEL
from ..compendium.verdicts import _parse, qualifiers, row_interval, row_status as gated_status

LEARN_RATIO = 0.8  # clearly better than the trivial predictor: at most 0.8x its error (the paper's own pass)
OUTLIER = 10.0  # robust deviations (1.4826 x MAD) from the other seeds' median, on the worse side


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def learned_now(row: dict) -> dict | None:
    """The row's trivial-predictor check re-read by this module's rule (see the module docstring): the recorded
    cell with `ok`, `factor` (LEARN_RATIO) and `upper` (the error the rule compared) replaced; None without one."""
    info = _parse(row.get("learned"))
    if info is None:
        return None
    model, trivial = float(info["model"]), float(info["trivial"])
    upper, how = model, "its error"
    ci = row_interval(row) if _seeds(row) >= 2 else None
    if ci is not None:
        ours = float(row["ours"])
        # the error is the row's number (MSE, RMSE) or one minus it (accuracy); else its interval is not the error's
        high = ci["high"] if _close(model, ours) else 1 - ci["low"] if _close(model, 1 - ours) else None
        if high is not None:
            upper, how = max(model, high), f"the upper end of its {100 * ci.get('level', LEVEL):g} % interval"
    return dict(info, ok=bool(upper <= LEARN_RATIO * trivial), factor=LEARN_RATIO, upper=upper, how=how)


def learned_note(row: dict) -> str:
    """'learned: error 0.2545 (0.54x) vs 0.4686 for the training mean; needs the upper end of its 95 % interval
    <= 0.8x' (or 'did not learn: ...'), '' without a check."""
    info = learned_now(row)
    if info is None:
        return ""
    ratio = info["model"] / info["trivial"] if info["trivial"] > 0 else math.inf
    return (f"{'learned' if info['ok'] else 'did not learn'}: error {info['model']:.4g} ({ratio:.2f}x) vs "
            f"{info['trivial']:.4g} for {info['predictor']}; needs {info['how']} <= {LEARN_RATIO:g}x")


def _seeds(row: dict) -> int:
    try:
        return int(float(row.get("n_seeds")))
    except (TypeError, ValueError):
        return 0


def _table(path: Path) -> pd.DataFrame | None:
    """A published table (CSV), or None when there is none: read once per version of the file (every row of a
    summary asks for its experiment's per-seed table)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return _read_table(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _read_table(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    return pd.read_csv(path)


# --- seeds -------------------------------------------------------------------------------------------------

def seed_values(row: dict, tables: Path) -> pd.DataFrame | None:
    """The row's per-seed values (columns seed, value) from `tables/<experiment>_per_seed.csv` when that table has
    `setting`, `seed` and the row's metric as columns and `profile` matches (or is absent); else None."""
    table = _table(Path(tables) / f"{row['experiment']}_per_seed.csv")
    if table is None:
        return None
    if not {"setting", "seed", row["metric"]} <= set(table.columns):
        return None
    mine = table[table.setting == row["setting"]]
    if "profile" in table.columns:
        mine = mine[mine.profile == row.get("profile")]
    if mine.empty or len(mine) != _seeds(row):  # another run's seeds: not this row's
        return None
    return pd.DataFrame({"seed": mine.seed.to_numpy(), "value": mine[row["metric"]].astype(float).to_numpy()})


def converged(values: pd.DataFrame, better: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(converged seeds, failed seeds): a seed failed when it lies more than OUTLIER robust deviations from the
    other seeds' median on the worse side (`better`: 'lower' | 'higher'); nothing fails with fewer than 3 seeds
    or no direction."""
    if len(values) < 3 or better not in ("lower", "higher"):
        return values, values.iloc[0:0]
    bad = []
    for i, v in enumerate(values.value):
        others = values.value.drop(values.index[i])
        med = float(others.median())
        mad = 1.4826 * float((others - med).abs().median())
        spread = max(mad, 1e-12 * max(abs(med), 1.0))
        worse = (v - med) if better == "lower" else (med - v)
        bad.append(worse / spread > OUTLIER)
    bad = pd.Series(bad, index=values.index)
    if bad.sum() * 2 >= len(values):  # most seeds "failed": no failure is named, the spread is the result
        return values, values.iloc[0:0]
    return values[~bad], values[bad]


def _on_converged(row: dict, good: pd.DataFrame) -> dict:
    n = len(good)
    std = float(good.value.std(ddof=1)) if n > 1 else float("nan")
    return dict(row, ours=float(good.value.mean()), ours_std=std, n_seeds=n, interval=None)


# --- the reference's attainable floor -----------------------------------------------------------------------

def floor_of(paper: dict, tables: Path) -> tuple[float, str] | None:
    """(value, what) of the attainable floor paper_values names for a row (`floor`: 'table|row pattern|column',
    read from `tables/<table>.csv`, first column matched), or None."""
    spec = str(paper.get("floor") or "").strip()
    if not spec:
        return None
    try:
        table, pattern, column = spec.split("|")
    except ValueError:
        raise ValueError(f"paper_values.csv: floor {spec!r} must be 'table|row pattern|column'") from None
    frame = _table(Path(tables) / f"{table}.csv")
    if frame is None:
        return None
    hit = frame[[fnmatchcase(str(v), pattern) for v in frame.iloc[:, 0]]]
    if hit.empty or column not in hit.columns:
        return None
    return float(hit[column].iloc[0]), f"{str(hit.iloc[0, 0]).split(' (')[0]}: {table}"


def _below_floor(paper: dict, floor: float) -> bool:
    return (paper.get("better") == "lower" and paper["paper"] < floor) or \
           (paper.get("better") == "higher" and paper["paper"] > floor)


# --- the row's verdict ----------------------------------------------------------------------------------------

def judge(paper: dict, row: dict, tables: Path) -> str:
    """The verdict of a result row against its reference (a paper_values row, or a peer's number in that shape)
    for the summary and the claims: the gated comparison (`romae.compendium.verdicts.row_status`) of the row with
    the learned check re-read (`learned_now`), judged on its converged seeds (`converged`, the failed ones named),
    a reference below the attainable floor named (`floor_of`)."""
    row = dict(row)
    seeds_note = ""
    values = seed_values(row, tables)
    if values is not None:
        good, failed = converged(values, paper.get("better", ""))
        if len(failed):
            row = _on_converged(row, good)
            failed_text = "; ".join(f"seed {s:g} did not converge: {v:.3g}" for s, v in zip(failed.seed, failed.value))
            seeds_note = (f"on {len(good)} of {len(values)} seeds {good.value.min():.2g}-{good.value.max():.2g}; "
                          f"{failed_text}")
    info = learned_now(row)
    if info is not None:
        row["learned"] = {k: info[k] for k in ("model", "trivial", "predictor", "factor", "ok")}
    state = gated_status(paper, row)
    quals = qualifiers(row.get("scale"), row.get("profile", ""))
    bare = state.split(" (")[0] if quals else state
    floor = floor_of(paper, tables)
    if floor is not None and bare.startswith(("worse than", "differs")) and _below_floor(paper, floor[0]):
        who = "the paper's" if paper.get("reference", "paper") == "paper" else f"{paper['reference']}'s"
        bare = (f"not reproduced: {who} {paper['paper']:g} lies below the attainable floor {floor[0]:.3g}, "
                f"{floor[1]}")
        state = f"{bare} ({', '.join(quals)})" if quals else bare
    return f"{state}; {seeds_note}" if seeds_note else state


def peer_reference(paper: dict, peer: dict) -> dict:
    """A published peer's number in the shape of a paper_values row, compared by the row's direction: within
    2 x the peer's published std (or 2 % of its value without one) is 'matches' / 'within tolerance'."""
    std = peer.get("std")
    tol = 2 * float(std) if std not in (None, "") and math.isfinite(float(std)) else 0.02 * abs(float(peer["value"]))
    return dict(experiment=paper["experiment"], setting=paper["setting"], metric=paper["metric"],
                paper=float(peer["value"]), paper_std=std, rule="abs", tolerance=tol, better=paper.get("better", ""),
                reference=peer["model"], expect="", floor="")
