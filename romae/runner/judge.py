"""A result row judged for the front page, at summary time: the compendium's gates and comparison
(`romae.compendium.verdicts.row_status`, what the notebooks print, with its one learned gate) read with rules a
reviewer would sign, stated in SUMMARY.md:

- **seeds** (`seed_values`): a row is judged on all its seeds (its mean and t interval); where the run published
  them (`tables/<experiment>_per_seed.csv`), the verdict lists each seed's value beside it, so a seed far from the
  others is seen, never left out ("5 seeds: 0.0043, 0.0052, 0.006, 0.0049, 0.903").
- **ceiling** (`ceiling`): a cell where a trivial predictor or a standard baseline run beside ours (a row
  '<setting>, <name> (baseline)' or '<setting>, baseline: <name>' of the same run) also reaches the reference
  cannot tell models apart: the claims read it "at ceiling", not for.

This module is the runner's: no kernel imports it, so its rules can change without staling an artefact.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pandas as pd

from ..compendium.verdicts import LEARN_FACTOR, _parse, learned_now, row_status as gated_status
from ..compendium.verdicts import status as compare


def learned_note(row: dict) -> str:
    """'learned: error 0.2545 (0.54x) vs 0.4686 for the training mean; needs the upper end of its 95 % interval
    <= 0.8x' (or 'did not learn: ...'), '' without a check."""
    info = learned_now(row)
    if info is None:
        return ""
    ratio = info["model"] / info["trivial"] if info["trivial"] > 0 else math.inf
    return (f"{'learned' if info['ok'] else 'did not learn'}: error {info['model']:.4g} ({ratio:.2f}x) vs "
            f"{info['trivial']:.4g} for {info['predictor']}; needs {info['how']} <= {LEARN_FACTOR:g}x")


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


# --- the row's verdict ----------------------------------------------------------------------------------------

def judge(paper: dict, row: dict, tables: Path) -> str:
    """The verdict of a result row against its reference (a paper_values row, or a peer's number in that shape)
    for the summary and the claims: the gated comparison (`romae.compendium.verdicts.row_status`) on all its seeds,
    each seed's value listed where the run published them (`seeds_text`)."""
    seeds_note = seeds_text(row, tables)
    state = gated_status(paper, row)
    return f"{state}; {seeds_note}" if seeds_note else state


def seeds_text(row: dict, tables: Path) -> str:
    """'5 seeds: 0.0043, 0.0052, 0.006, 0.0049, 0.903' (at most 5 listed, else their range) from the run's
    per-seed table (`seed_values`), '' without one."""
    values = seed_values(row, tables)
    if values is None or len(values) < 2:
        return ""
    shown = ", ".join(f"{v:.3g}" for v in values.value) if len(values) <= 5 else \
        f"{values.value.min():.3g}-{values.value.max():.3g}"
    return f"{len(values)} seeds: {shown}"


def ceiling(paper: dict, row: dict, rows: pd.DataFrame) -> str:
    """What else reaches the reference `paper` in `row`'s cell, '' when nothing does: the row's trivial predictor
    (its learned check), or a baseline run beside it (same experiment, profile and metric, setting '<setting>,
    <name> (baseline)' or '<setting>, baseline: <name>') whose number matches, lies within tolerance of or beats
    the reference by the reference's own rule. Such a cell cannot tell a model from the baseline."""
    info, found, better = _parse(row.get("learned")), [], paper.get("better", "")
    if info is not None and better in ("lower", "higher"):  # the trivial predictor's error, or 1 - its accuracy
        as_error = better == "lower" or math.isclose(float(info["model"]), float(row["ours"]), rel_tol=1e-9)
        trivial = float(info["trivial"]) if as_error else 1 - float(info["trivial"])
        if not compare(paper["paper"], trivial, paper["rule"], paper["tolerance"], better).startswith("worse"):
            found.append(f"{info['predictor']} {trivial:.4g}")
    setting = str(row["setting"])
    base = rows[(rows.experiment == row["experiment"]) & (rows.metric == row["metric"])
                & (rows.profile == row.get("profile"))]
    for r in base.itertuples():
        name = str(r.setting)
        if not name.startswith(setting + ", "):
            continue
        rest = name[len(setting) + 2:]
        if not (rest.endswith("(baseline)") or rest.startswith("baseline: ")) or "," in rest:
            continue
        try:
            verdict = compare(paper["paper"], float(r.ours), paper["rule"], paper["tolerance"], paper.get("better", ""))
        except (TypeError, ValueError):
            continue
        if verdict in ("matches", "within tolerance") or verdict.startswith("better than"):
            found.append(f"{rest.removesuffix(' (baseline)').removeprefix('baseline: ')} {float(r.ours):.4g}")
    return " and ".join(found)


def peer_reference(paper: dict, peer: dict) -> dict:
    """A published peer's number in the shape of a paper_values row, compared by the row's direction: within
    2 x the peer's published std (or 2 % of its value without one) is 'matches' / 'within tolerance'."""
    std = peer.get("std")
    tol = 2 * float(std) if std not in (None, "") and math.isfinite(float(std)) else 0.02 * abs(float(peer["value"]))
    return dict(experiment=paper["experiment"], setting=paper["setting"], metric=paper["metric"],
                paper=float(peer["value"]), paper_std=std, rule="abs", tolerance=tol, better=paper.get("better", ""),
                reference=peer["model"], expect="")
