"""The committed records and the difference table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...compendium import report
from ...compendium.report import REPORTS, difference, difference_text, scale
from .. import frequency, interpolation

from .settings import SOURCES, CHECK_SEED, CONTROL, TOLERANCE, NOT_COMPARED, control_config


def committed_quick(path=None) -> dict:
    """{(source experiment, setting, metric): (value, std, n_seeds)} of the quick rows of the committed
    <repo>/reports/results.csv (never the ROMAE_REPORTS scratch folder)."""
    path = path or REPORTS / "results.csv"
    try:
        rows = pd.read_csv(path)
    except FileNotFoundError:
        return {}
    rows = rows[rows.experiment.isin(SOURCES) & (rows.profile == "quick")]
    return {(r.experiment, r.setting, r.metric): (float(r.ours), None if pd.isna(r.ours_std) else float(r.ours_std),
                                                  int(r.n_seeds)) for r in rows.itertuples()}


def committed_per_seed(value: float, std: float | None, n_seeds: int) -> tuple[float, ...]:
    """The two per-seed values behind a committed 2-seed mean and sample std: mean -+ std / sqrt(2)."""
    if n_seeds != 2 or std is None:
        return ()
    half = std / math.sqrt(2)
    return value - half, value + half


def _source(setting: str) -> str:
    return "fig3_frequency_retention" if setting.endswith(CONTROL) else "table7_interpolation"


def _better(metric: str, zeros: float, normal: float) -> str:
    if metric.endswith("slope_per_hz") or not (np.isfinite(zeros) and np.isfinite(normal)):
        return NOT_COMPARED
    if abs(zeros - normal) <= 1e-12 * max(abs(zeros), abs(normal), 1.0):
        return "tie"
    return "normal" if normal < zeros else "zeros"


def _piece(setting: str) -> str:
    """The piece a (source) setting belongs to: Spiral, Synthetic or raw-t control."""
    return "raw-t control" if setting.endswith(CONTROL) else "Synthetic" if setting.startswith("Synthetic") else "Spiral"


def _positions(position_scale: float) -> str:
    return "t" if position_scale == 1.0 else f"t x {position_scale:g}"


def piece_scale(profile: str, piece: str, seeds_run: int | None = None) -> dict:
    """A row's scale: the piece's training data, epochs, seeds, model and positions in `profile` against the
    `paper` profile of its source module (interpolation: Tables 19 / 20; the control: frequency.run_scale)."""
    if piece == "raw-t control":
        return frequency.run_scale(control_config(profile, "zeros"))
    prof, paper = interpolation.config(profile), interpolation.config("paper")
    if piece == "Spiral":
        run, prun, n, pn = prof.spiral, paper.spiral, prof.spiral_data.n_train, paper.spiral_data.n_train
    elif piece == "Synthetic":
        run, prun = prof.synthetic, paper.synthetic
        n, pn = prof.synthetic_data.sizes()["train"], paper.synthetic_data.sizes()["train"]
    else:
        raise ValueError(f"unknown piece {piece!r}")
    return scale(data=(n, pn), epochs=(run.epochs, prun.epochs),
                 seeds=(len(run.seeds) if seeds_run is None else seeds_run, len(prun.seeds)),
                 model=(f"encoder {run.encoder}, decoder {run.decoder}", f"encoder {prun.encoder}, decoder {prun.decoder}"),
                 positions=(_positions(run.position_scale), _positions(prun.position_scale)))


def _losses(histories) -> list[list[float]]:
    """The logged training losses of each run (history frames) of a piece."""
    return [report.loss_curve(h) for h in histories]


MARGIN = 0.05  # normal vs zeros: a difference below 5 % of the zeros error is taken not to matter


def _zeros_per_seed(res_runs: dict, committed: dict, fresh: bool) -> dict:
    """{seed: {(setting, metric): zeros value}} of Synthetic: the fresh runs', or (quick, committed zeros) the two
    per-seed values recovered from the committed 2-seed mean and std, seed CHECK_SEED taking the one closer
    to its fresh re-run and the other seed the other."""
    if fresh:
        return res_runs["zeros"]["per_seed"]
    normal_seeds = sorted(res_runs["normal"]["per_seed"])
    if len(normal_seeds) != 2 or CHECK_SEED not in normal_seeds:
        return {}
    other = next(s for s in normal_seeds if s != CHECK_SEED)
    out = {CHECK_SEED: {}, other: {}}
    for key, mine in res_runs["zeros"]["per_seed"][CHECK_SEED].items():
        pair = committed_per_seed(*committed[("table7_interpolation",) + key]) \
            if ("table7_interpolation",) + key in committed else ()
        if len(pair) == 2:
            near = min(pair, key=lambda v: abs(v - mine))
            out[CHECK_SEED][key], out[other][key] = near, pair[1] if near == pair[0] else pair[0]
    return out


def difference_table(res_runs: dict, zeros_per_seed: dict, zeros: dict) -> pd.DataFrame:
    """Normal minus zeros for every error metric of the three pieces, paired by seed (`report.difference`, margin
    MARGIN x the zeros mean): Synthetic over its seeds (`zeros_per_seed`), Spiral and the control over their one
    seed (`zeros`: {(setting, metric): the zeros value}; never resolved). Columns: setting, metric, diff, se, n,
    margin, verdict, text."""
    rows = []
    normal = res_runs["normal"]
    for (setting, metric), value in normal["metrics"].items():
        if metric.endswith("slope_per_hz"):
            continue  # not an error
        if _piece(setting) == "Synthetic":
            seeds = [s for s in sorted(normal["per_seed"]) if (setting, metric) in zeros_per_seed.get(s, {})]
            a = [normal["per_seed"][s][(setting, metric)] for s in seeds]
            b = [zeros_per_seed[s][(setting, metric)] for s in seeds]
        else:
            z = zeros.get((setting, metric), float("nan"))
            a, b = ([value], [z]) if np.isfinite(z) else ([], [])
        if not a:
            continue
        res = difference(a, b, MARGIN * max(abs(float(np.mean(b))), 1e-12), names=("normal", "zeros"))
        rows.append(dict(setting=setting, metric=metric, **res, text=difference_text(res)))
    return pd.DataFrame(rows, columns=["setting", "metric", "diff", "se", "n", "margin", "verdict", "text"])


def _reproduction_check(fresh: dict, committed: dict) -> dict:
    """{(setting, metric): {fresh, committed (the closer per-seed value), abs_diff, reproduces}}."""
    out = {}
    for key, value in fresh.items():
        c = committed.get(("table7_interpolation",) + key)
        candidates = committed_per_seed(*c) if c else ()
        best = min(candidates, key=lambda v: abs(v - value)) if candidates else float("nan")
        diff = abs(best - value)
        out[key] = dict(fresh=value, committed=best, abs_diff=diff, reproduces=bool(diff <= TOLERANCE))
    return out
