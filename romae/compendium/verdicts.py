"""A result row's verdict against the paper: its scale beside the paper's (`scale`, `qualifiers`), whether its
model learned (`learned`), and the comparison after the gates (`status`, `comparison`, `gate`, `row_status`).

Re-exported by `romae.compendium.report`, where notebooks call them (`report.scale`, `report.row_status`).
"""

from __future__ import annotations

import json
import math

from .stats import LEVEL, t_quantile


# --- scale: what a row's run used beside what the paper used; its status qualifiers come from these -----
# Each field is a pair (ours, the paper's). A paper value of None means the paper does not state it: shown,
# never counted as a difference. "dataset" differing -> "stand-in" (other data, not a subset); "device"
# (the device class, recorded by speed measurements) -> "other device", and the comparison becomes "not
# comparable"; "positions" (how positions were scaled) -> "positions rescaled"; "seeds" below the paper's ->
# "fewer seeds" (the same experiment, a wider uncertainty: still comparable); any other field differing ->
# "reduced". A quick-profile row is at least "reduced" unless every field equals the paper's (no scale recorded
# at all counts as not equal).
SCALE_FIELDS = ("dataset", "data", "resolution", "model", "steps", "epochs", "seeds", "positions", "device")
QUALIFIER_OF = {"dataset": "stand-in", "device": "other device", "positions": "positions rescaled", "seeds": "fewer seeds"}
# qualifiers that change what is measured (not only how precisely): a row carrying one is "not comparable"
# with the paper's number (`row_status`)
DECISIVE = ("stand-in", "other device", "positions rescaled", "reduced", "scale not recorded")


def scale(**fields) -> dict:
    """A row's scale: `field=(ours, paper)` for the SCALE_FIELDS that apply, e.g.
    scale(steps=(474, 31250), seeds=(2, 5), data=(20000, 100000), resolution=("32 px", "64 px")).
    Values are numbers or short strings; the paper's may be None (not stated). Anything else is refused."""
    out = {}
    for name, pair in fields.items():
        if name not in SCALE_FIELDS:
            raise ValueError(f"unknown scale field {name!r}; choose among {', '.join(SCALE_FIELDS)}")
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"scale field {name!r} must be a pair (ours, the paper's), got {pair!r}")
        for v in pair:
            if v is not None and not isinstance(v, (int, float, str)) or isinstance(v, bool):
                raise ValueError(f"scale field {name!r}: {v!r} is not a number, a string or None")
        ours, paper = pair
        if ours is None:
            raise ValueError(f"scale field {name!r}: our value is None; leave the field out if it does not apply")
        out[name] = [_plain(ours), _plain(paper)]
    return out


def _plain(v):
    return int(v) if isinstance(v, float) and v.is_integer() else v


def _parse(cell) -> dict | None:
    """A scale / learned cell of results.csv (JSON) -> dict, or None when absent (rows written before it)."""
    if isinstance(cell, dict):
        return cell
    if cell is None or (isinstance(cell, float) and math.isnan(cell)) or str(cell).strip() == "":
        return None
    return json.loads(cell)


def qualifiers(scale_cell, profile: str) -> list[str]:
    """The status qualifiers of a row, from its scale fields only (never from its note): 'stand-in',
    'other device', 'positions rescaled', 'fewer seeds', 'reduced'; see SCALE_FIELDS. More seeds than the
    paper's is no qualifier."""
    fields = _parse(scale_cell)
    if fields is None:
        return ["reduced", "scale not recorded"] if profile != "paper" else ["scale not recorded"]
    def differs(k, ours, paper):
        if paper is None or ours == paper:
            return False
        if k == "seeds" and isinstance(ours, (int, float)) and isinstance(paper, (int, float)):
            return ours < paper
        return True
    differ = [k for k, (ours, paper) in fields.items() if differs(k, ours, paper)]
    out = [QUALIFIER_OF[k] for k in SCALE_FIELDS if k in QUALIFIER_OF and k in differ]
    if any(k not in QUALIFIER_OF for k in differ) or (profile != "paper" and differ and differ != ["seeds"]):
        out.append("reduced")
    return out


def paper_scale(scale_cell, profile: str, allow_fewer_seeds: bool = False) -> bool:
    """Whether a row comes from a run at the paper's own scale: every recorded scale field equals the paper's
    (`allow_fewer_seeds`: except the number of seeds). A row without scale facts is not."""
    if _parse(scale_cell) is None:
        return False
    quals = qualifiers(scale_cell, profile)
    return not quals or (allow_fewer_seeds and quals == ["fewer seeds"])


def scale_text(scale_cell) -> str:
    """'steps 474 / 31250; seeds 2 / 5' (ours / the paper's; '?' where the paper does not say)."""
    fields = _parse(scale_cell)
    if not fields:
        return ""
    def show(v):
        return "?" if v is None else (f"{v:,}" if isinstance(v, int) else (f"{v:.4g}" if isinstance(v, float) else str(v)))
    return "; ".join(f"{k} {show(o)}" + ("" if o == p else f" / {show(p)}") for k, (o, p) in fields.items())


# --- learned: a claim about a model is tested only if the model beats the trivial predictor first ----------
# the one learned gate (notebooks, runner, front page): the model's error, or the upper end of its t interval over
# seeds, at most this times the trivial predictor's. Every paper number with a recorded trivial predictor passes it
# (tested): the paper's own Synthetic 0.233 sits at 0.50x its training mean, its PhysioNet 0.57 at 0.54x.
LEARN_FACTOR = 0.8


def learned(model_error: float, trivial_error: float, trivial: str, factor: float = LEARN_FACTOR) -> dict:
    """Evidence that a model learned its task: its error beside the trivial predictor's (`trivial` names it:
    'the constant training mean', 'predicting zero'). It learned when model_error <= factor x trivial_error.
    Rows whose rule is a claim ('gt') read "not tested: the model did not learn" otherwise."""
    for name, v in (("model_error", model_error), ("trivial_error", trivial_error), ("factor", factor)):
        if not math.isfinite(float(v)) or float(v) < 0:
            raise ValueError(f"learned(): {name} must be a finite number >= 0, got {v!r}")
    if not 0 < factor <= 1:
        raise ValueError(f"learned(): factor must be in (0, 1], got {factor!r}")
    return dict(model=float(model_error), trivial=float(trivial_error), predictor=str(trivial),
                factor=float(factor), ok=bool(float(model_error) <= factor * float(trivial_error)))


def learned_now(row) -> dict | None:
    """A row's trivial-predictor check read by the one gate: its recorded cell with `ok`, `factor` (LEARN_FACTOR)
    and `upper` (the error compared: the upper end of the row's t interval over seeds when it has one, else its
    error) replaced; None without a check. An interval is the error's when the check's model error is the row's
    number (MSE, RMSE) or one minus it (accuracy)."""
    info = _parse(row.get("learned"))
    if info is None:
        return None
    model, trivial = float(info["model"]), float(info["trivial"])
    upper, how = model, "its error"
    try:
        seeds = int(float(row.get("n_seeds")))
    except (TypeError, ValueError):
        seeds = 0
    ci = row_interval(row) if seeds >= 2 else None
    if ci is not None:
        ours = float(row["ours"])
        close = lambda a, b: math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)  # noqa: E731
        high = ci["high"] if close(model, ours) else 1 - ci["low"] if close(model, 1 - ours) else None
        if high is not None:
            upper, how = max(model, high), f"the upper end of its {100 * ci.get('level', LEVEL):g} % interval"
    return dict(info, ok=bool(upper <= LEARN_FACTOR * trivial), factor=LEARN_FACTOR, upper=upper, how=how)


def learned_text(cell) -> str:
    info = _parse(cell)
    if info is None:
        return "no trivial-predictor check recorded"
    verdict = "learned" if info["ok"] else "did not learn"
    return (f"{verdict}: error {info['model']:.4g} vs {info['trivial']:.4g} for {info['predictor']} "
            f"(needs <= {info['factor']:g}x)")


def interval_text(cell) -> str:
    """'95 % CI [1.2e-05, 3.4e-05]' for a recorded interval, '' without one."""
    ci = _parse(cell)
    if ci is None:
        return ""
    return f"{100 * ci['level']:g} % CI [{ci['low']:.3g}, {ci['high']:.3g}]"


def status(paper: float, ours: float, rule: str, tolerance: float, better: str = "", who: str = "the paper") -> str:
    """Compare ours with the reference value by the row's stated rule, saying the direction.

    rule 'abs': |ours - paper| <= tolerance; 'rel': |ours - paper| / |paper| <= tolerance -> "matches"
    (within a tenth of the tolerance) or "within tolerance"; beyond it, "better than <who>" /
    "worse than <who>" when the row says which direction is better (`better` = 'higher' | 'lower'),
    else "differs". 'min' (legacy): ours >= paper - tolerance. 'gt': a claim the paper makes in words,
    checked as ours > paper (a threshold) -> "claim holds" / "claim does not hold". `who`: whose value
    it is ("the paper", "the authors' code", "S5").
    """
    if rule == "gt":
        return "claim holds" if ours > paper else "claim does not hold"
    if rule == "min":
        gap = max(paper - ours, 0.0)
    elif rule == "rel":
        gap = abs(ours - paper) / abs(paper)
    elif rule == "abs":
        gap = abs(ours - paper)
    else:
        raise ValueError(f"unknown comparison rule {rule!r}")
    if better not in ("", "higher", "lower"):
        raise ValueError(f"better must be 'higher', 'lower' or '', got {better!r}")
    if gap <= tolerance / 10:
        return "matches"
    if gap <= tolerance:
        return "within tolerance"
    if better:
        return f"better than {who}" if (ours > paper) == (better == "higher") else f"worse than {who}"
    return "differs"


def flags_of(row) -> str:
    """A row's training flags (`loss_flags`): its `flags` column, or for rows written before that column existed,
    the 'TRAINING FLAG: ...' that `record` put into their note."""
    flags = row.get("flags")
    if isinstance(flags, str) and flags.strip():
        return flags.strip()
    note = row.get("note")
    if isinstance(note, str) and "TRAINING FLAG: " in note:
        return note.split("TRAINING FLAG: ", 1)[1].split("; ", 1)[0].strip()
    return ""


def comparison(paper: dict, row) -> str:
    """The bare comparison of our number with the reference by the row's rule (`status`), before any gate; for a
    claim checked against a threshold ('gt') with a recorded interval: "claim holds" only when the whole interval
    lies above it, "claim does not hold" when it lies at or below it, else "not resolved at this scale".
    A mean beyond the tolerance ("better than" / "worse than" / "differs") is said only when the whole t interval
    of our mean (`row_interval`: recorded, else from the seeds' std) lies beyond it too; an interval that reaches
    the tolerance band reads "not resolved at this scale" (one seed of five that did not converge can put a mean
    far off while the other four agree)."""
    ci = _parse(row.get("interval"))
    if paper["rule"] == "gt" and ci is not None and math.isfinite(ci["low"]) and math.isfinite(ci["high"]):
        if ci["low"] > paper["paper"]:
            return "claim holds"
        return "claim does not hold" if ci["high"] <= paper["paper"] else "not resolved at this scale"
    verdict = status(paper["paper"], float(row["ours"]), paper["rule"], paper["tolerance"], paper["better"],
                     who=reference_name(paper))
    if verdict.startswith(("better than", "worse than", "differs")):
        ci = row_interval(row)
        low, high = tolerance_band(paper["paper"], paper["rule"], paper["tolerance"])
        if ci is not None and ci["low"] <= high and ci["high"] >= low:
            return "not resolved at this scale"
    return verdict


def row_interval(row) -> dict | None:
    """The t interval (LEVEL) of a row's mean: its recorded `interval`, else mean +- t(n - 1) x std / sqrt(n) from
    `ours`, `ours_std` (the std over its `n_seeds` seeds, folds or trainings) and `n_seeds`; None with one seed or
    no std."""
    ci = _parse(row.get("interval"))
    if ci is not None and math.isfinite(ci["low"]) and math.isfinite(ci["high"]):
        return ci
    try:
        mean, std, n = float(row["ours"]), float(row.get("ours_std")), float(row.get("n_seeds"))
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(mean) and math.isfinite(std) and math.isfinite(n)) or n < 2 or std < 0:
        return None
    half = t_quantile(int(n) - 1) * std / math.sqrt(n)
    return dict(low=mean - half, high=mean + half, level=LEVEL)


def tolerance_band(paper: float, rule: str, tolerance: float) -> tuple[float, float]:
    """The values `status` reads as within tolerance of `paper` by `rule` ('rel', 'abs', 'min')."""
    if rule == "rel":
        return paper - tolerance * abs(paper), paper + tolerance * abs(paper)
    if rule == "abs":
        return paper - tolerance, paper + tolerance
    if rule == "min":
        return paper - tolerance, math.inf
    raise ValueError(f"tolerance_band(): no band for rule {rule!r}")


def gate(paper: dict, row) -> str:
    """Why a row cannot be judged against the reference ('' when it can), in this order: its training carries a
    flag (`flags_of`) -> "not tested: training flagged"; its model did not beat the trivial predictor (`learned_now`;
    a claim in words ('gt') needs that check recorded) -> "not tested: the model did not learn", unless the
    reference itself is at the trivial level (paper_values' `expect` = 'trivial', e.g. Table 1 without [CLS],
    where not learning is the claim); a setup that decides the outcome differs from the paper's (`DECISIVE`
    qualifiers: stand-in data, another device class, positions rescaled, a fraction of the training or data) ->
    "not comparable". Fewer seeds alone do not gate: the same experiment, a wider uncertainty."""
    if flags_of(row):
        return "not tested: training flagged"
    info = learned_now(row)
    if paper["rule"] == "gt" and info is None:
        return "not tested: no trivial-predictor check recorded"
    if info is not None and not info["ok"] and paper.get("expect") != "trivial":
        return "not tested: the model did not learn"
    if any(q in DECISIVE for q in qualifiers(row.get("scale"), row.get("profile", ""))):
        return "not comparable"
    return ""


def row_status(paper: dict, row) -> str:
    """A summary row's verdict against its reference: the gate's reason (`gate`) if the row cannot be judged,
    else the comparison (`comparison`); followed by the qualifiers from its scale fields (`qualifiers`), never
    its note."""
    quals = qualifiers(row.get("scale"), row.get("profile", ""))
    state = gate(paper, row) or comparison(paper, row)
    return f"{state} ({', '.join(quals)})" if quals else state


def reference_name(paper: dict) -> str:
    """Whose number a paper_values row holds: 'the paper' (default), "the authors' code", or a peer model."""
    ref = str(paper.get("reference") or "paper")
    return "the paper" if ref == "paper" else ref


def title_tag(profile: str, *scales) -> str:
    """What a figure title says about the run: 'quick profile, reduced' ('paper profile' alone at the paper's
    settings). With the `scale`s of the rows it shows, their qualifiers (`qualifiers`) instead of the
    profile's default: 'quick profile, positions rescaled, reduced'."""
    if scales:
        quals = dict.fromkeys(q for s in scales for q in qualifiers(s, profile))
    else:
        quals = {} if profile == "paper" else {"reduced": None}
    return ", ".join([f"{profile} profile", *quals])
