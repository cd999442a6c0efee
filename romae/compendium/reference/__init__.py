"""The reference numbers our results are compared with, in one machine-readable file with provenance
(`paper_values.csv`).

Each row's `reference` says whose number it is: "paper" (the paper's published value), "the authors' code"
(a value found only in the authors' code, e.g. a curve hard-coded in a plotting script) or a peer model
quoted in the paper's tables (e.g. "S5", where that is the like-for-like comparator of our metric). Code that
computes our numbers never reads an expected value from this file; it only puts the two side by side.
"""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

PAPER_VALUES = Path(__file__).with_name("paper_values.csv")


def _num(text: str) -> float | None:
    return float(text) if text.strip() else None


@lru_cache
def paper_values() -> tuple[dict, ...]:
    """All rows of paper_values.csv: experiment, setting, metric, paper, paper_std, rule, tolerance, better,
    source, reference (whose value: paper | the authors' code | a peer; default paper).

    `rule`, `tolerance` and `better` (higher | lower | empty) state how `romae.compendium.report.status` compares
    our number with the paper's and in which direction a difference is an improvement.
    """
    with open(PAPER_VALUES, newline="") as f:
        return tuple({**row, "paper": float(row["paper"]), "paper_std": _num(row["paper_std"]),
                      "tolerance": float(row["tolerance"]), "better": row.get("better") or "",
                      "reference": row.get("reference") or "paper"}
                     for row in csv.DictReader(f))


def paper_value(experiment: str, setting: str, metric: str) -> float:
    """The paper's value for one (experiment, setting, metric); KeyError naming it if absent."""
    for row in paper_values():
        if (row["experiment"], row["setting"], row["metric"]) == (experiment, setting, metric):
            return row["paper"]
    raise KeyError(f"no paper value for {experiment} / {setting} / {metric} in {PAPER_VALUES.name}")


PEER_VALUES = Path(__file__).with_name("peer_values.csv")


@lru_cache
def _peer_rows() -> tuple[dict, ...]:
    with open(PEER_VALUES, newline="") as f:
        return tuple({**row, "value": float(row["value"]), "std": _num(row["std"])} for row in csv.DictReader(f))


def peer_values(experiment: str) -> list[dict]:
    """Published numbers of other models (and the paper's own row) for the comparison tables of one
    experiment: benchmark, model, metric, value, std, source. Never used to compute our numbers."""
    rows = [dict(r) for r in _peer_rows() if r["experiment"] == experiment]
    if not rows:
        raise KeyError(f"no published peer values for {experiment!r} in {PEER_VALUES.name}")
    return rows


ARTEFACTS = Path(__file__).with_name("artefacts.csv")


@lru_cache
def artefacts() -> tuple[dict, ...]:
    """Every table and figure of the paper that the compendium regenerates (artefacts.csv): artefact, kind,
    paper_ref, notebook (NN prefixes), experiments (ids of paper_values.csv rows checking it), figure
    (file stem under reports/figures), what."""
    with open(ARTEFACTS, newline="") as f:
        return tuple({**row, "notebook": row["notebook"].split(), "experiments": row["experiments"].split()}
                     for row in csv.DictReader(f))
