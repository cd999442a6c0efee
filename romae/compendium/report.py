"""Every artefact of the compendium goes through here: figures, tables, result rows, the summary.

    save_figure(fig, "fig2_position_range")            -> reports/figures/fig2_position_range.png
    save_table(df, "table1_position_reconstruction")   -> reports/tables/<name>.csv + .md
    record("table1_position_reconstruction", "tiny, with [CLS]", "mse", 0.05, ours_std=0.01,
           n_seeds=5, profile="quick")                 -> a row of reports/results.csv
    build_summary()                                    -> reports/summary.csv + reports/SUMMARY.md

Paths are built from the repository root, never from the working directory (papermill, nbval and
JupyterLab start kernels in different folders). A different reports folder is passed explicitly as
`reports_dir`, or named once by the ROMAE_REPORTS setting (as ROMAE_DATA names the data folder).

The paper's numbers come only from `romae/reference/paper_values.csv`; our numbers only from
`record` calls made by code that computed them.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
from pathlib import Path

import pandas as pd
import torch

from .. import runtime
from ..data import files
from .reference import paper_values

ROOT = Path(__file__).resolve().parents[2]
REPORTS = ROOT / "reports"
RESULT_COLUMNS = ["experiment", "setting", "metric", "ours", "ours_std", "n_seeds", "profile", "device",
                  "note", "scale", "learned", "flags", "interval"]
# status: the verdict against the reference after the gates (`row_status`); measured: the bare comparison of
# the two numbers (`comparison`), shown for readers, never a verdict
SUMMARY_COLUMNS = ["experiment", "setting", "metric", "reference", "paper", "ours", "ours_std", "n_seeds",
                   "profile", "scale", "status", "measured", "device", "note"]
PROFILE_RANK = {"paper": 0, "quick": 1, "smoke": 2}  # best available first in the summary


def reports_path(reports_dir: str | Path | None = None) -> Path:
    """The reports folder: `reports_dir` if given (non-empty), else the ROMAE_REPORTS setting if set,
    else <repo>/reports. (The test suite points ROMAE_REPORTS at a scratch folder, so nbval's smoke
    runs never overwrite the committed reports.)"""
    if reports_dir:
        return Path(reports_dir)
    return Path(os.environ["ROMAE_REPORTS"]) if os.environ.get("ROMAE_REPORTS") else REPORTS


def device_label(device: str | torch.device | None = None) -> str:
    """A readable name of the device results were computed on, e.g. 'cpu (AMD EPYC, 2 threads)'."""
    dev = torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    name = platform.processor() or platform.machine()
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        name = next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"cpu ({name}, {torch.get_num_threads()} threads)"


MANIFEST = "ROMAE_RUN_MANIFEST"  # set by romae.runner.reproduce: where the kernel lists the package modules it ran


def file_hash(path: Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def imported_modules() -> dict[str, str]:
    """{'romae/model.py': sha256, ...}: every module of this package the running process has imported, with a
    hash of its file as it is on disk now."""
    import sys

    package = Path(__file__).resolve().parent
    out = {}
    for name, module in list(sys.modules.items()):
        f = getattr(module, "__file__", None)
        if (name == "romae" or name.startswith("romae.")) and f and Path(f).suffix == ".py":
            path = Path(f).resolve()
            if path.is_relative_to(package) and path.exists():
                out[path.relative_to(ROOT).as_posix()] = file_hash(path)
    return dict(sorted(out.items()))


def _note_modules() -> None:
    """Add the modules imported so far to the run's manifest (the file named by ROMAE_RUN_MANIFEST), so the
    run records which code produced its artefacts (called by record, save_figure and save_table)."""
    target = os.environ.get(MANIFEST)
    if not target or not writer():
        return
    path = Path(target)
    try:
        known = json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        known = {}
    known.update(imported_modules())
    files.write_atomic(path, json.dumps(dict(sorted(known.items())), indent=1) + "\n")


def freshness(provenance: dict) -> tuple[str, list[str]]:
    """('current', []) when every file a run recorded (its romae modules and its notebook) is unchanged on
    disk, else ('stale', the files changed or gone since); a run without a record is stale."""
    files = dict(provenance.get("modules", {}), **provenance.get("notebook_file", {}))
    if not files:
        return "stale", ["(no record of the code it ran)"]
    changed = [f for f, h in files.items() if not (ROOT / f).exists() or file_hash(ROOT / f) != h]
    return ("stale", sorted(changed)) if changed else ("current", [])


def provenance_of(notebook: str, profile: str, reports_dir: str | Path | None = None) -> dict:
    """The provenance record of a notebook's published run in `profile` ({} if none): written by
    romae.runner.reproduce beside the artefacts (<reports>/provenance/, or <reports>/<profile>/provenance/)."""
    folder = reports_path(reports_dir)
    for path in (folder / "provenance" / f"{notebook}.json", folder / profile / "provenance" / f"{notebook}.json"):
        if path.exists():
            record = json.loads(path.read_text())
            if record.get("profile") == profile:
                return record
    return {}


def writer() -> bool:
    """Whether this process writes reports: the main one of a distributed run (`accelerate launch` sets
    RANK), or the only one. The others compute the same numbers and must not race on the same files."""
    return os.environ.get("RANK", "0") == "0"


def save_figure(fig, name: str, reports_dir: str | Path | None = None, dpi: int = 150) -> Path:
    """Save a matplotlib figure as reports/figures/<name>.png (name = the paper artefact id); only the
    main process of a distributed run writes."""
    path = reports_path(reports_dir) / "figures" / f"{name}.png"
    if not writer():
        return path
    _note_modules()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path


def save_table(df: pd.DataFrame, name: str, reports_dir: str | Path | None = None) -> tuple[Path, Path]:
    """Save a table as reports/tables/<name>.csv and a Markdown twin <name>.md (main process only)."""
    folder = reports_path(reports_dir) / "tables"
    csv, md = folder / f"{name}.csv", folder / f"{name}.md"
    if not writer():
        return csv, md
    _note_modules()
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(csv, df)
    write_atomic(md, _markdown(df))
    return csv, md


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
LEARN_FACTOR = 0.5  # default: the model's error at most half the trivial predictor's


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


# --- training flags: a loss that spikes or diverges is said in the row -------------------------------------
SPIKE_FACTOR = 10.0  # a logged loss above 10x the median of all losses logged before it is a spike
ERRATIC_STEP = 0.3  # a curve whose typical step between logged losses is a factor 10**0.3 = 2 is erratic


def loss_flags(losses, spike: float = SPIKE_FACTOR, erratic: float = ERRATIC_STEP) -> str:
    """'' for a well-behaved training curve; else what is wrong, for the row's note and for the notebook to
    refrain from conclusions: 'diverged' (a non-finite loss, or the last tenth's median above the first
    tenth's), 'loss spikes' (after the first tenth, a loss above `spike` x the median of all before it),
    'erratic' (positive losses whose median |log10 step| between consecutive logged values after the first
    tenth exceeds `erratic`: jumping up and down by 2x and more with no trend; a smooth curve with 5 % noise
    scores about 0.02). `losses`: the logged training losses in order (at least 10 for these rules)."""
    import numpy as np

    x = np.asarray(list(losses), dtype=float).reshape(-1)
    if x.size == 0:
        return ""
    if not np.isfinite(x).all():
        return f"diverged: non-finite loss at log entry {int(np.argmin(np.isfinite(x)))} of {x.size}"
    tenth = max(1, x.size // 10)
    flags = []
    if x.size >= 10 and np.median(x[-tenth:]) > np.median(x[:tenth]):
        flags.append(f"diverged: median loss of the last tenth {np.median(x[-tenth:]):.3g} > first tenth's "
                     f"{np.median(x[:tenth]):.3g}")
    if x.size >= 10:
        before = np.array([np.median(x[:i]) for i in range(tenth, x.size)])
        ratio = x[tenth:] / np.maximum(before, np.finfo(float).tiny)
        n = int((ratio > spike).sum())
        if n:
            flags.append(f"loss spikes: {n} of {x.size} logged losses above {spike:g}x the median before them "
                         f"(largest {ratio.max():.3g}x)")
        if (x > 0).all():
            step = float(np.median(np.abs(np.diff(np.log10(x[tenth:])))))
            if step > erratic:
                flags.append(f"erratic: the median step between logged losses is a factor {10 ** step:.3g} "
                             f"(more than {10 ** erratic:.2g})")
    return "; ".join(flags)


def _device_column() -> str:
    """Where a row's numbers were computed: this device and stack; where trainings of another device stand behind
    the notebook's rows (read from `romae.compendium.trainings`' record: trained on a GPU, published on a CPU), every device its
    trainings ran on first (per notebook process, not per row)."""
    from . import trainings

    here = device_label(runtime.current().device)
    used = trainings.devices()
    if used and used != [here]:
        return f"trained on {', '.join(used)}; published on {here}; {runtime.stack_label()}"
    return f"{here}; {runtime.stack_label()}"


def record(experiment: str, setting: str, metric: str, ours: float, *, profile: str, scale: dict,
           ours_std: float | None = None, n_seeds: int = 1, device: str | None = None, note: str = "",
           learned: dict | None = None, losses=None, interval: dict | None = None,
           reports_dir: str | Path | None = None) -> dict:
    """Add (or replace) one result row in reports/results.csv, keyed by (experiment, setting, metric, profile);
    in a distributed run only the main process writes (every process gets the row back).

    `scale`: `report.scale(...)`, the facts the row's qualifiers come from (`{}` for a number that is not a
    run's at any scale, e.g. a parameter count). `learned`: `report.learned(...)`, required for a
    claim to count as tested. `losses`: the training loss curve(s) (one sequence or a list of them):
    a spike or divergence (`loss_flags`) is written into the `flags` column (and the note); a flagged row is
    never judged against the paper. `interval`: the confidence interval of `ours` (`report.interval`, or the
    result of `slope` / `difference`, which carry one): a claim checked against a threshold ('gt') holds only
    when the whole interval lies beyond it."""
    if profile not in PROFILE_RANK:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILE_RANK)}")
    if not math.isfinite(float(ours)):
        raise ValueError(f"{experiment} / {setting} / {metric}: result is not finite ({ours})")
    if not isinstance(scale, dict):
        raise ValueError(f"{experiment} / {setting} / {metric}: scale must be report.scale(...) (or {{}} for a "
                         f"number that is not a run's), got {scale!r}")
    curves = [] if losses is None else (list(losses) if len(losses) and hasattr(losses[0], "__len__") else [losses])
    flags = "; ".join(f for f in (loss_flags(c) for c in curves) if f)
    ran = runtime.notes()  # a dry run, a precision other than FP32: said in every row
    row = dict(experiment=experiment, setting=setting, metric=metric, ours=float(ours),
               ours_std=None if ours_std is None else float(ours_std), n_seeds=int(n_seeds), profile=profile,
               device=device or _device_column(),
               note="; ".join(x for x in (ran, f"TRAINING FLAG: {flags}" if flags else "", note) if x),
               scale=json.dumps(scale),
               learned=None if learned is None else json.dumps(learned), flags=flags or None,
               interval=None if interval is None else json.dumps(_interval_of(interval)))
    if writer():  # one writer in a distributed run
        upsert_results(pd.DataFrame([row]), reports_path(reports_dir) / "results.csv")
        _note_modules()
    return row


def write_atomic(path: str | Path, content: str | pd.DataFrame) -> Path:
    """`romae.data.files.write_atomic` of text, or of a table as CSV without its index."""
    return files.write_atomic(path, content.to_csv(index=False) if isinstance(content, pd.DataFrame) else content)


def upsert_results(rows: pd.DataFrame, path: Path) -> None:
    """Put `rows` into the results file `path`, replacing rows with the same (experiment, setting, metric,
    profile); written through a temporary file and os.replace, so a kill never leaves it truncated."""
    path.parent.mkdir(parents=True, exist_ok=True)
    old = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=RESULT_COLUMNS)
    key = ["experiment", "setting", "metric", "profile"]
    keep = old[~old.set_index(key).index.isin(rows.set_index(key).index)] if len(old) else old
    write_atomic(path, pd.concat([keep, rows], ignore_index=True)[RESULT_COLUMNS])


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
    flag (`flags_of`) -> "not tested: training flagged"; its model did not beat the trivial predictor (`learned`;
    a claim in words ('gt') needs that check recorded) -> "not tested: the model did not learn", unless the
    reference itself is at the trivial level (paper_values' `expect` = 'trivial', e.g. Table 1 without [CLS],
    where not learning is the claim); a setup that decides the outcome differs from the paper's (`DECISIVE`
    qualifiers: stand-in data, another device class, positions rescaled, a fraction of the training or data) ->
    "not comparable". Fewer seeds alone do not gate: the same experiment, a wider uncertainty."""
    if flags_of(row):
        return "not tested: training flagged"
    info = _parse(row.get("learned"))
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


# Checks computed from recorded rows (same experiment, setting, profile): metric -> (inputs, formula, note)
DERIVED = {
    ("fig2_position_range", "edge_over_interior"): (
        ("abs_error_lower_edge", "abs_error_upper_edge", "abs_error_interior_median"),
        lambda lo, hi, mid: max(lo, hi) / mid,
        "derived: max(abs_error_lower_edge, abs_error_upper_edge) / abs_error_interior_median"),
}


def derived_rows(results: pd.DataFrame) -> pd.DataFrame:
    """Rows of the checks in DERIVED, computed from the recorded rows they need."""
    out = []
    for (experiment, metric), (inputs, formula, note) in DERIVED.items():
        mine = results[results.experiment == experiment]
        for (setting, profile), g in mine.groupby(["setting", "profile"]):
            vals = g.set_index("metric").ours
            if all(m in vals for m in inputs):
                first = g.iloc[0]
                out.append(dict(experiment=experiment, setting=setting, metric=metric,
                                ours=float(formula(*(vals[m] for m in inputs))), ours_std=None,
                                n_seeds=first.n_seeds, profile=profile, device=first.device,
                                note=f"{note}; {first.note}", scale=first.get("scale"),
                                learned=first.get("learned"), flags=first.get("flags"), interval=None))
    return pd.DataFrame(out, columns=RESULT_COLUMNS)


def build_summary(reports_dir: str | Path | None = None) -> pd.DataFrame:
    """Join our results with the paper's values -> reports/summary.csv and reports/SUMMARY.md."""
    folder = reports_path(reports_dir)
    results = pd.read_csv(folder / "results.csv") if (folder / "results.csv").exists() else \
        pd.DataFrame(columns=RESULT_COLUMNS)
    derived = derived_rows(results)
    results = pd.concat([results, derived], ignore_index=True) if len(derived) else results
    for column in ("scale", "learned", "flags", "interval"):  # a results.csv written before these columns existed
        if column not in results:
            results[column] = None
    paper = pd.DataFrame(paper_values())
    rows = []

    def ours(r, **extra):
        return dict(experiment=r.experiment, setting=r.setting, metric=r.metric, ours=r.ours, ours_std=r.ours_std,
                    n_seeds=r.n_seeds, profile=r.profile, scale=scale_text(r.scale), device=r.device,
                    note="; ".join(x for x in (rederive_verdicts(str(r.note)) if isinstance(r.note, str) else "",
                                               interval_text(r.interval),
                                               learned_text(r.learned) if _parse(r.learned) else "") if x),
                    **extra)

    for _, p in paper.iterrows():
        mine = results[(results.experiment == p.experiment) & (results.setting == p.setting)
                       & (results.metric == p.metric)]
        if mine.empty:
            rows.append(dict(experiment=p.experiment, setting=p.setting, metric=p.metric,
                             reference=reference_name(p.to_dict()), paper=p.paper, status="not run", note=""))
        for _, r in mine.iterrows():
            rows.append(ours(r, reference=reference_name(p.to_dict()), paper=p.paper,
                             status=row_status(p.to_dict(), r.to_dict()), measured=comparison(p.to_dict(), r.to_dict())))
    # our rows of a paper experiment and metric that the paper has no value for (e.g. the from-scratch
    # controls): shown, with no reference number and status "no paper value" (qualified by their scale)
    known = set(zip(paper.experiment, paper.setting, paper.metric))
    metrics_of = set(zip(paper.experiment, paper.metric))
    for _, r in results.iterrows():
        if (r.experiment, r.setting, r.metric) not in known and (r.experiment, r.metric) in metrics_of:
            quals = qualifiers(r.scale, r.profile)
            flagged = "training flagged; " if flags_of(r.to_dict()) else ""
            rows.append(ours(r, reference="", paper=None,
                             status=flagged + "no paper value" + (f" ({', '.join(quals)})" if quals else "")))
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    summary["_rank"] = summary.profile.map(PROFILE_RANK).fillna(9)
    summary = summary.sort_values(["experiment", "setting", "metric", "_rank"], kind="stable")
    summary = summary.drop(columns="_rank").reset_index(drop=True)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "summary.csv", summary)
    write_atomic(folder / "SUMMARY.md", _summary_markdown(summary, folder))
    return summary


def artefact_view(summary: pd.DataFrame, reports_dir: str | Path | None = None,
                  runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per paper artefact with the verdicts of its rows (`romae.runner.frontpage.artefact_view`)."""
    from ..runner import frontpage

    return frontpage.artefact_view(summary, reports_dir, runs)


def _summary_markdown(summary: pd.DataFrame, reports_dir=None) -> str:
    """SUMMARY.md's text: the claims table, the coverage line, the artefacts, every row (`romae.runner.frontpage`)."""
    from ..runner import frontpage

    return frontpage.summary_markdown(summary, reports_dir)


def _markdown(df: pd.DataFrame) -> str:
    """A plain GitHub Markdown table (no tabulate dependency)."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v).replace("|", "\\|")
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


# --- statistics: every interval the compendium prints is a t interval with n - 1 degrees of freedom --------
LEVEL = 0.95  # the confidence level of every interval and verdict


def t_quantile(df: int, level: float = LEVEL) -> float:
    """The two-sided t quantile: an interval mean +- t_quantile(n - 1) x se covers with probability `level`."""
    from scipy.stats import t

    if df < 1:
        raise ValueError(f"t_quantile(): needs at least 1 degree of freedom, got {df}")
    if not 0 < level < 1:
        raise ValueError(f"t_quantile(): level must be in (0, 1), got {level!r}")
    return float(t.ppf(0.5 + level / 2, df))


def outlying_seeds(runs, by: list[str], value: str, factor: float = 10.0) -> str:
    """Markdown naming the runs (one row each of `runs`, e.g. one per seed) whose positive `value` is more than
    `factor` x, or less than 1 / `factor` x, the median of its group (`by`), with the group's median and the
    mean of the others: a seed that did not converge is reported beside the mean it moves, never dropped.
    '' when there is none."""
    import pandas as pd

    if not factor > 1:
        raise ValueError(f"outlying_seeds(): factor must be > 1, got {factor!r}")
    missing = [c for c in [*by, value] if c not in runs.columns]
    if missing:
        raise ValueError(f"outlying_seeds(): no column(s) {missing} in {list(runs.columns)}")
    lines = []
    for key, g in runs.groupby(by, sort=False):
        x = pd.to_numeric(g[value], errors="coerce")
        med = float(x.median())
        if len(g) < 3 or not med > 0 or not (x > 0).all():
            continue
        far = (x > factor * med) | (x < med / factor)
        for i in g.index[far]:
            rest = x[~far]
            name = ", ".join(f"{c} {v}" for c, v in zip(by, key if isinstance(key, tuple) else (key,)))
            extra = ", ".join(f"{c} {g.at[i, c]}" for c in ("seed", "split") if c in g.columns)
            lines.append(f"- {name}{', ' + extra if extra else ''}: {value} {x[i]:.4g}, against the median "
                         f"{med:.4g} of the {len(g)} runs (the other {len(rest)}: mean {rest.mean():.4g}, "
                         f"{rest.min():.4g}-{rest.max():.4g})")
    if not lines:
        return ""
    return (f"**Runs far from the others of their setting** (more than {factor:g}x from its median, e.g. a seed "
            "that did not converge): reported, never dropped; the setting's mean and its interval include them.\n\n"
            + "\n".join(lines))


def interval(values, level: float = LEVEL) -> dict:
    """The t confidence interval of the mean of `values` (one per seed or fold): mean, se, n, df, low, high,
    level. One value has no interval (low = high = nan)."""
    import numpy as np

    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"interval(): need finite values, got {x.tolist()}")
    mean = float(x.mean())
    if x.size < 2:
        return dict(mean=mean, se=float("nan"), n=1, df=0, low=float("nan"), high=float("nan"), level=level)
    se = float(x.std(ddof=1) / math.sqrt(x.size))
    half = t_quantile(x.size - 1, level) * se
    return dict(mean=mean, se=se, n=int(x.size), df=int(x.size - 1), low=mean - half, high=mean + half, level=level)


def slope(x, y, level: float = LEVEL) -> dict:
    """Least-squares line y = intercept + slope x with the t interval of the slope (n - 2 degrees of freedom):
    slope, intercept, se, low, high, r2, n, df, level. A claim on a slope's sign holds only when its interval
    excludes the other side. Needs 3 points of at least 2 distinct x."""
    import numpy as np

    x, y = np.asarray(x, dtype=float).reshape(-1), np.asarray(y, dtype=float).reshape(-1)
    if x.shape != y.shape or x.size < 3:
        raise ValueError(f"slope(): need the same number (>= 3) of x and y values, got {x.size} and {y.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("slope(): a value is not finite")
    sxx = float(((x - x.mean()) ** 2).sum())
    if sxx == 0:
        raise ValueError("slope(): all x values are equal")
    b = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    a = float(y.mean() - b * x.mean())
    resid = y - (a + b * x)
    df = x.size - 2
    se = float(math.sqrt((resid ** 2).sum() / df / sxx))
    syy = float(((y - y.mean()) ** 2).sum())
    half = t_quantile(df, level) * se
    return dict(slope=b, intercept=a, se=se, low=b - half, high=b + half,
                r2=1 - float((resid ** 2).sum()) / syy if syy > 0 else 1.0, n=int(x.size), df=int(df), level=level)


def _interval_of(res: dict) -> dict:
    """The [low, high] at `level` of an `interval`, `slope` or `difference` result, for results.csv."""
    if not all(k in res for k in ("low", "high")):
        raise ValueError(f"interval must be report.interval(...), slope(...) or difference(...), got {res!r}")
    return dict(low=float(res["low"]), high=float(res["high"]), level=float(res.get("level", LEVEL)))


def difference(a, b, margin: float, names: tuple[str, str] = ("A", "B"), level: float = LEVEL) -> dict:
    """Is a paired comparison of two variants resolved at this scale? `a`, `b`: one number per seed (or fold;
    same order: a paired difference each); `margin`: the smallest difference that would matter, in the metric's
    units. Returns diff (mean of a - b), se, n, the t interval [low, high] at `level` (n - 1 degrees of freedom:
    with 2 pairs the 95 % interval is +- 12.7 standard errors) and a verdict: "resolved: A > B" / "resolved: A < B"
    when the interval excludes 0; "equal within +-margin" when it lies inside (-margin, margin); else "not resolved
    at this scale". One pair has no interval: "not resolved at this scale (1 pair)". Pairs that all differ by the
    same amount have a zero-width interval."""
    import numpy as np

    x, y = np.asarray(a, dtype=float).reshape(-1), np.asarray(b, dtype=float).reshape(-1)
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"difference(): need one value per seed for both variants, got {x.size} and {y.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("difference(): a per-seed value is not finite")
    if not math.isfinite(margin) or margin <= 0:
        raise ValueError(f"difference(): margin must be a finite number > 0, got {margin!r}")
    ci = interval(x - y, level)
    out = dict(diff=ci["mean"], se=ci["se"], n=ci["n"], margin=float(margin), low=ci["low"], high=ci["high"],
               level=level)
    return dict(out, verdict=_difference_verdict(out, names))


def _difference_verdict(res: dict, names: tuple[str, str] = ("A", "B")) -> str:
    if res["n"] < 2:
        return "not resolved at this scale (1 seed)"
    if res["low"] > 0 or res["high"] < 0:
        return f"resolved: {names[0]} {'>' if res['diff'] > 0 else '<'} {names[1]}"
    if -res["margin"] < res["low"] and res["high"] < res["margin"]:
        return f"equal within +-{res['margin']:g}"
    return "not resolved at this scale"


def difference_text(res: dict, unit: str = "", replicates: str = "seeds") -> str:
    """'+0.012 [95 % CI +0.004, +0.020] (t, 3 seeds): resolved: A > B': the interval the verdict used
    (`replicates`: what the pairs are, e.g. folds)."""
    u = f" {unit}" if unit else ""
    if res["n"] < 2:
        return f"{res['diff']:+.4g}{u} (1 pair, no interval): {res['verdict']}"
    return (f"{res['diff']:+.4g}{u} [{100 * res.get('level', LEVEL):g} % CI {res['low']:+.2g}, {res['high']:+.2g}] "
            f"(t, {res['n']} {replicates}): {res['verdict']}")


# verdicts printed by the rule this module used before the t interval: '+0.008 +- 0.0037 (2 se, 2 seeds): ...'
_OLD_RULE = re.compile(
    r"(?P<diff>[+-]?[0-9.]+(?:e[+-]?\d+)?) \+- (?P<two_se>[0-9.]+(?:e[+-]?\d+)?)(?P<unit> [^()]*?)? "
    r"\(2 se, (?P<n>\d+) (?P<what>[^)]*)\): (?P<verdict>resolved: [^;]*?|equal within \+-(?P<margin>[0-9.e+-]+)"
    r"|not resolved at this scale)(?=;|$)")


def rederive_verdicts(note: str) -> str:
    """A note written by the old rule (|mean| > 2 standard errors, whatever the number of seeds) with each verdict
    re-derived from the mean and standard error it printed, by the t interval with n - 1 degrees of freedom
    (`difference`); marked as re-derived. Other text is unchanged."""
    def redo(m):
        n, diff, se = int(m["n"]), float(m["diff"]), float(m["two_se"]) / 2
        if n < 2:
            return m.group(0)
        half = t_quantile(n - 1) * se
        names = ("A", "B")
        if m["verdict"].startswith("resolved: "):
            pair = m["verdict"][len("resolved: "):]
            for op in (" > ", " < "):
                if op in pair:
                    names = tuple(pair.split(op, 1)) if op == " > " else tuple(reversed(pair.split(op, 1)))
        margin = float(m["margin"]) if m["margin"] else 0.0  # the run's margin is printed only with "equal within"
        res = dict(diff=diff, se=se, n=n, margin=margin, low=diff - half, high=diff + half, level=LEVEL)
        verdict = _difference_verdict(res, names)
        unit = m["unit"] or ""
        return (f"{diff:+.4g}{unit} [{100 * LEVEL:g} % CI {res['low']:+.2g}, {res['high']:+.2g}] (t, {n} {m['what']}; "
                f"re-derived from the run's mean and standard error, which it judged by 2 se): {verdict}")
    return _OLD_RULE.sub(redo, note) if isinstance(note, str) else note


def title_tag(profile: str, *scales) -> str:
    """What a figure title says about the run: 'quick profile, reduced' ('paper profile' alone at the paper's
    settings). With the `scale`s of the rows it shows, their qualifiers (`qualifiers`) instead of the
    profile's default: 'quick profile, positions rescaled, reduced'."""
    if scales:
        quals = dict.fromkeys(q for s in scales for q in qualifiers(s, profile))
    else:
        quals = {} if profile == "paper" else {"reduced": None}
    return ", ".join([f"{profile} profile", *quals])


def loss_curve(history) -> list[float]:
    """The logged training losses of one training history (`fit`'s rows, or a DataFrame of them), in order:
    rows without a training loss (validation rows) or with a NaN one left out."""
    rows = history.to_dict("records") if isinstance(history, pd.DataFrame) else (history or [])
    return [float(r["loss"]) for r in rows if r.get("loss") is not None and not math.isnan(float(r["loss"]))]


def training_losses(results) -> list[list[float]]:
    """The logged training losses of each stage of each run, for `record(losses=)`: `results` are
    `recipe.pretrain_finetune` results (pre-training and fine-tuning histories) or `fit_cached` results
    (one history each). Stages without losses are left out."""
    keys = ("pretrain_history", "finetune_history")
    curves = [loss_curve(res.get(k)) for res in results
              for k in (keys if any(k in res for k in keys) else ("history",))]
    return [c for c in curves if c]


def status_table(rows: list[dict]) -> pd.DataFrame:
    """The summary's status of recorded rows (`record`'s return values, with the checks derived from them,
    `derived_rows`) that have a reference value: setting, metric, reference, paper, ours, status (the verdict after
    the gates), measured (the bare comparison), learned. For a notebook to say what its own run found, as the
    summary will read it."""
    frame = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    derived = derived_rows(frame)
    frame = pd.concat([frame, derived], ignore_index=True) if len(derived) else frame
    out = []
    for p in paper_values():
        hit = frame[(frame.experiment == p["experiment"]) & (frame.setting == p["setting"])
                    & (frame.metric == p["metric"])]
        for r in hit.to_dict("records"):
            out.append(dict(setting=p["setting"], metric=p["metric"], reference=reference_name(p), paper=p["paper"],
                            ours=r["ours"], status=row_status(p, r), measured=comparison(p, r),
                            learned=learned_text(r["learned"])))
    return pd.DataFrame(out, columns=["setting", "metric", "reference", "paper", "ours", "status", "measured", "learned"])


# ----------------------------------------------------------------------------- variants' folder names

def show_params(overrides: dict) -> list[str]:
    """['name=value', ...] sorted, a list as its comma-separated names (as typed on the command line)."""
    return [f"{k}={','.join(map(str, v)) if isinstance(v, (list, tuple)) else v}" for k, v in sorted(overrides.items())]


def variant_slug(stem: str, profile: str, overrides: dict) -> str:
    """A folder name for a run with non-default parameters: <notebook>--<profile>--name=value... ('' for none:
    the notebook's own run)."""
    return _slug([stem, profile, *show_params(overrides)]) if overrides else ""


def _slug(parts: list[str]) -> str:
    return re.sub(r"[^A-Za-z0-9_.,=+-]", "_", "--".join(parts))[:150]
