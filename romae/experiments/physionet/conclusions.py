"""Reading the results: the wide table, the conclusion and the gross errors."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...compendium import report
from ...data import physionet as P

from .profiles import NORMS, LEAD, UNITS, METHODS, TRIVIAL, published


def wide(res: dict) -> pd.DataFrame:
    """Mean MSE as a grid: rows = method, columns = (normalisation, masking unit)."""
    s = res["summary"]
    grid = s.pivot_table(index="method", columns=["norm", "unit"], values="mean", sort=False)
    return grid.reindex(index=[m for m in METHODS if m in grid.index]).round(4)


def conclusion(res: dict) -> str:
    """What the measurements say about the published values' scale and masking unit (generated text)."""
    s = res["summary"].set_index(["method", "norm", "unit"])["mean"]
    lines, pub = [], published()
    pub_lo, pub_hi = min(pub.values()), max(pub.values())
    # a scale fits the published values unless they exceed 3x the MSE of predicting the training mean there
    plausible = [n for n in NORMS if pub_lo <= 3 * max(s["training mean", n, u] for u in UNITS)]
    for norm in NORMS:
        trivial = min(s["training mean", norm, u] for u in UNITS)
        best = min(s[m, norm, u] for m in s.index.get_level_values(0).unique() for u in UNITS)
        if norm not in plausible:
            verdict = (f"the published values ({pub_lo:.3f}-{pub_hi:.3f}) are over 3x the MSE of predicting the "
                       f"training mean ({trivial:.4f}): they cannot be on this scale")
        else:
            verdict = (f"the published values ({pub_lo:.3f}-{pub_hi:.3f}) lie in the range of the methods measured "
                       f"here ({best:.3f} best, {trivial:.3f} for the training mean): this scale fits them")
        lines.append(f"- {NORMS[norm]}: {verdict}.")
    lin = "linear interpolation"
    lines.append(gross_error_text(res))
    flag = res.get("flags", {}).get("RoMAE", "")
    learned = ("RoMAE" in s.index.get_level_values(0)
               and report.learned(s["RoMAE", LEAD, "token"], s[TRIVIAL, LEAD, "token"], TRIVIAL)["ok"])
    if flag:
        lines.append(f"- RoMAE's training is flagged ({flag}): no conclusion is drawn from its numbers.")
    elif "RoMAE" in s.index.get_level_values(0) and not learned:
        lines.append(f"- RoMAE did not learn: on the headline scoring ({NORMS[LEAD]}, token mask) its MSE "
                     f"{s['RoMAE', LEAD, 'token']:.4g} is not at most {report.LEARN_FACTOR:g} x the training mean's "
                     f"{s[TRIVIAL, LEAD, 'token']:.4g}; no conclusion is drawn from its numbers.")
    elif "RoMAE" in s.index.get_level_values(0):
        ours = ", ".join(f"{s['RoMAE', LEAD, u]:.3f} ({UNITS[u]})" for u in UNITS)
        lines.append(f"- On the scoring of the paper's protocol ({NORMS[LEAD]}, every hidden value) RoMAE scores "
                     f"{ours}; published: " + ", ".join(f"{k} {v:.3f}" for k, v in pub.items()) + ".")
        for norm in NORMS:
            for unit in UNITS:
                r, li = s["RoMAE", norm, unit], s[lin, norm, unit]
                lines.append(f"- {NORMS[norm]}, {UNITS[unit]}: RoMAE {r:.4g} {'beats' if r < li else 'does not beat'} "
                             f"linear interpolation {li:.4g} ({100 * (li - r) / li:+.1f} %; one trained model, the "
                             "same masks for both).")
    return "\n".join(lines)


def gross_outliers(res: dict, n: int = 8, split: str = "test") -> pd.DataFrame:
    """The recorded values of `split` farthest from their variable's training statistics (in z-score units), with
    the value every method sees and is scored on after `winsorise`, and what each would add to the pooled z-score
    MSE if hidden, recorded and winsorised (one hidden value among about half the split's cells)."""
    d, sc = res["data"][split], res["data"]["scalings"]["zscore"]
    var = d.variable.to_numpy()
    z = sc.transform(var, d.raw.to_numpy())
    top = np.argsort(-np.abs(z), kind="stable")[:n]
    zw = sc.transform(var[top], d.value.to_numpy()[top])
    out = d.iloc[top][["record_id", "time", "variable", "raw", "value"]].rename(
        columns={"raw": "recorded", "value": "winsorised"}).assign(z_recorded=z[top], z_winsorised=zw)
    out["variable"] = [P.VARIABLES[v] for v in out.variable]
    out["added_if_hidden_recorded"] = z[top] ** 2 / (len(d) / 2)
    out["added_if_hidden_winsorised"] = zw ** 2 / (len(d) / 2)
    return out.reset_index(drop=True)


def gross_error_text(res: dict) -> str:
    """How much the treatment of the gross recording errors moves the headline MSE (generated text): linear
    interpolation (token mask) with every hidden value scored against with those recorded beyond the bounds
    left out, each with its std over mask draws."""
    s = res["summary"].set_index(["method", "norm", "unit"])
    lin = "linear interpolation"
    a, b = s.loc[(lin, "zscore", "token")], s.loc[(lin, "zscore_inliers", "token")]
    sd = max(np.nan_to_num(a["std"]), np.nan_to_num(b["std"]))
    gap = abs(a["mean"] - b["mean"])
    # the two agree when they differ by less than 2 std over mask draws or 5 % of the headline value
    agree = gap <= max(2 * sd, 0.05 * abs(a["mean"]))
    worst = gross_outliers(res, n=1)
    head = (f"- Gross recording errors (winsorised at the anomaly bounds; the largest recorded in the test split: "
            f"{worst.variable[0]} {worst.recorded[0]:g}, z = {worst.z_recorded[0]:,.0f}, scored as "
            f"{worst.winsorised[0]:g}): linear interpolation scores {a['mean']:.3f}"
            + (f" +- {a['std']:.3f}" if np.isfinite(a["std"]) else "") + f" with every hidden value, "
            f"{b['mean']:.3f}" + (f" +- {b['std']:.3f}" if np.isfinite(b["std"]) else "")
            + " with the values recorded beyond the bounds unscored (token mask)")
    return head + (": their treatment does not move the result." if agree else
                   f": their treatment moves the result by {gap:.3f}, more than the mask draws do.")
