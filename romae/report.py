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
from pathlib import Path

import pandas as pd
import torch

from . import runtime
from .reference import artefacts, paper_values

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "reports"
RESULT_COLUMNS = ["experiment", "setting", "metric", "ours", "ours_std", "n_seeds", "profile", "device",
                  "note", "scale", "learned"]
SUMMARY_COLUMNS = ["experiment", "setting", "metric", "reference", "paper", "ours", "ours_std", "n_seeds",
                   "profile", "scale", "status", "device", "note"]
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


MANIFEST = "ROMAE_RUN_MANIFEST"  # set by romae.reproduce: where the kernel lists the package modules it ran


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
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(dict(sorted(known.items())), indent=1) + "\n")
    os.replace(tmp, path)


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
    romae.reproduce beside the artefacts (<reports>/provenance/, or <reports>/<profile>/provenance/)."""
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
    df.to_csv(csv, index=False)
    md.write_text(_markdown(df))
    return csv, md


# --- scale: what a row's run used beside what the paper used; its status qualifiers come from these -----
# Each field is a pair (ours, the paper's). A paper value of None means the paper does not state it: shown,
# never counted as a difference. "dataset" differing -> "stand-in" (other data, not a subset); "device"
# (the device class, recorded by speed measurements) -> "other device", and the comparison becomes "not
# comparable"; "positions" (how positions were scaled) -> "positions rescaled"; any other field differing ->
# "reduced". A quick-profile row is "reduced" unless every field equals the paper's (no scale recorded at all
# counts as not equal).
SCALE_FIELDS = ("dataset", "data", "resolution", "model", "steps", "epochs", "seeds", "positions", "device")
QUALIFIER_OF = {"dataset": "stand-in", "device": "other device", "positions": "positions rescaled"}


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
    'other device', 'positions rescaled', 'reduced'; see SCALE_FIELDS."""
    fields = _parse(scale_cell)
    if fields is None:
        return ["reduced", "scale not recorded"] if profile != "paper" else ["scale not recorded"]
    differ = [k for k, (ours, paper) in fields.items() if paper is not None and ours != paper]
    out = [QUALIFIER_OF[k] for k in SCALE_FIELDS if k in QUALIFIER_OF and k in differ]
    if any(k not in QUALIFIER_OF for k in differ) or (profile != "paper" and differ):
        out.append("reduced")
    return out


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


def record(experiment: str, setting: str, metric: str, ours: float, *, profile: str, scale: dict,
           ours_std: float | None = None, n_seeds: int = 1, device: str | None = None, note: str = "",
           learned: dict | None = None, losses=None, reports_dir: str | Path | None = None) -> dict:
    """Add (or replace) one result row in reports/results.csv, keyed by (experiment, setting, metric, profile);
    in a distributed run only the main process writes (every process gets the row back).

    `scale`: `report.scale(...)`, the facts the row's qualifiers come from (`{}` for a number that is not a
    run's at any scale, e.g. a parameter count). `learned`: `report.learned(...)`, required for a
    claim to count as tested. `losses`: the training loss curve(s) (one sequence or a list of them):
    a spike or divergence (`loss_flags`) is written into the note."""
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
               device=device or f"{device_label(runtime.current().device)}; {runtime.stack_label()}",
               note="; ".join(x for x in (ran, f"TRAINING FLAG: {flags}" if flags else "", note) if x),
               scale=json.dumps(scale),
               learned=None if learned is None else json.dumps(learned))
    if writer():  # one writer in a distributed run
        upsert_results(pd.DataFrame([row]), reports_path(reports_dir) / "results.csv")
        _note_modules()
    return row


def upsert_results(rows: pd.DataFrame, path: Path) -> None:
    """Put `rows` into the results file `path`, replacing rows with the same (experiment, setting, metric,
    profile); written through a temporary file and os.replace, so a kill never leaves it truncated."""
    path.parent.mkdir(parents=True, exist_ok=True)
    old = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=RESULT_COLUMNS)
    key = ["experiment", "setting", "metric", "profile"]
    keep = old[~old.set_index(key).index.isin(rows.set_index(key).index)] if len(old) else old
    merged = pd.concat([keep, rows], ignore_index=True)[RESULT_COLUMNS]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    merged.to_csv(tmp, index=False)
    os.replace(tmp, path)


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


def row_status(paper: dict, row) -> str:
    """A summary row's status: the comparison (`status`) unless the row cannot make it -- a claim whose
    model did not beat the trivial predictor is "not tested", a speed measured on another device class is
    "not comparable" -- followed by the qualifiers from its scale fields (`qualifiers`), never its note."""
    quals = qualifiers(row.get("scale"), row.get("profile", ""))
    info = _parse(row.get("learned"))
    if paper["rule"] == "gt" and (info is None or not info["ok"]):
        state = ("not tested: no trivial-predictor check recorded" if info is None
                 else "not tested: the model did not learn")
    elif "other device" in quals:
        state = "not comparable"
    else:
        state = status(paper["paper"], float(row["ours"]), paper["rule"], paper["tolerance"], paper["better"],
                       who=reference_name(paper))
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
                                learned=first.get("learned")))
    return pd.DataFrame(out, columns=RESULT_COLUMNS)


def build_summary(reports_dir: str | Path | None = None) -> pd.DataFrame:
    """Join our results with the paper's values -> reports/summary.csv and reports/SUMMARY.md."""
    folder = reports_path(reports_dir)
    results = pd.read_csv(folder / "results.csv") if (folder / "results.csv").exists() else \
        pd.DataFrame(columns=RESULT_COLUMNS)
    derived = derived_rows(results)
    results = pd.concat([results, derived], ignore_index=True) if len(derived) else results
    for column in ("scale", "learned"):  # a results.csv written before these columns existed
        if column not in results:
            results[column] = None
    paper = pd.DataFrame(paper_values())
    rows = []

    def ours(r, **extra):
        return dict(experiment=r.experiment, setting=r.setting, metric=r.metric, ours=r.ours, ours_std=r.ours_std,
                    n_seeds=r.n_seeds, profile=r.profile, scale=scale_text(r.scale), device=r.device,
                    note="; ".join(x for x in (str(r.note) if isinstance(r.note, str) else "",
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
                             status=row_status(p.to_dict(), r.to_dict())))
    # our rows of a paper experiment and metric that the paper has no value for (e.g. the from-scratch
    # controls): shown, with no reference number and status "no paper value" (qualified by their scale)
    known = set(zip(paper.experiment, paper.setting, paper.metric))
    metrics_of = set(zip(paper.experiment, paper.metric))
    for _, r in results.iterrows():
        if (r.experiment, r.setting, r.metric) not in known and (r.experiment, r.metric) in metrics_of:
            quals = qualifiers(r.scale, r.profile)
            rows.append(ours(r, reference="", paper=None,
                             status="no paper value" + (f" ({', '.join(quals)})" if quals else "")))
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    summary["_rank"] = summary.profile.map(PROFILE_RANK).fillna(9)
    summary = summary.sort_values(["experiment", "setting", "metric", "_rank"], kind="stable")
    summary = summary.drop(columns="_rank").reset_index(drop=True)
    folder.mkdir(parents=True, exist_ok=True)
    summary.to_csv(folder / "summary.csv", index=False)
    (folder / "SUMMARY.md").write_text(_summary_markdown(summary, folder))
    return summary


ARTEFACT_COLUMNS = ["artefact", "paper", "notebook", "status", "profile", "code", "what"]


def _best_ok_profile(runs: pd.DataFrame | None, notebooks: list[str]) -> str:
    """The best profile with a successful run of any of `notebooks` (NN prefixes) in runs.csv, or ''."""
    if runs is None or runs.empty:
        return ""
    ok = runs[(runs.status == "ok") & runs.notebook.str[:2].isin(notebooks)]
    return min(ok.profile, key=lambda p: PROFILE_RANK.get(p, 9)) if len(ok) else ""


def artefact_view(summary: pd.DataFrame, reports_dir: str | Path | None = None,
                  runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per paper artefact (reference/artefacts.csv): the statuses of its rows at their best
    profile, counted ("2 matches, 1 worse than the paper"), or "not run"; figures also say whether the
    figure file exists. The compact front page, before the long table."""
    folder = reports_path(reports_dir)
    if runs is None and (folder / "runs.csv").exists():
        runs = pd.read_csv(folder / "runs.csv", dtype=str, keep_default_na=False)
    out = []
    for a in artefacts():
        mine = summary[summary.experiment.isin(a["experiments"])]
        best = mine.assign(_r=mine.profile.map(PROFILE_RANK).fillna(9)).sort_values("_r", kind="stable")
        best = best.drop_duplicates(["experiment", "setting", "metric"])  # best profile of each row, every run
        counts = best.status.value_counts()
        state = ", ".join(f"{n} {s}" for s, n in counts.items()) if len(best) else ""
        profiles = [p for p in best.profile.dropna().unique() if p]
        profile = min(profiles, key=lambda p: PROFILE_RANK.get(p, 9)) if profiles else ""
        if a["figure"]:
            made = (folder / "figures" / f"{a['figure']}.png").exists()
            fig = "figure made" if made else "figure not made"
            state = f"{fig}; {state}" if state else (fig + ("" if a["experiments"] else ", no quantitative check"))
            profile = profile or (_best_ok_profile(runs, a["notebook"]) if made else "")
        out.append(dict(artefact=a["artefact"], paper=a["paper_ref"], notebook=" ".join(a["notebook"]),
                        status=state or "not run", profile=profile,
                        code=_code_state(a["notebook"], profile, folder) if profile else "", what=a["what"]))
    return pd.DataFrame(out, columns=ARTEFACT_COLUMNS)


def _code_state(notebooks: list[str], profile: str, folder: Path) -> str:
    """'current', or 'stale: <files changed since the run>' for the runs of an artefact's notebooks."""
    stems = sorted({p.stem for nb in notebooks for p in (ROOT / "notebooks").glob(f"{nb}_*.ipynb")})
    changed: set[str] = set()
    for stem in stems:
        state, files = freshness(provenance_of(stem, profile, folder))
        changed.update(f"{stem}: {f}" if f.startswith("(") else f for f in files)
    return "current" if not changed else "stale: " + ", ".join(sorted(changed))


def _summary_markdown(summary: pd.DataFrame, reports_dir=None) -> str:
    head = ("# Summary: the paper's numbers and ours\n\n"
            "Generated by `romae.report.build_summary` (run `make reproduce`); do not edit by hand.\n"
            "`paper` comes from `romae/reference/paper_values.csv`; `ours` from running the code in the\n"
            "named profile on the named device. **smoke** rows are seconds-long CI runs, not "
            "reproductions; **quick** rows are reduced CPU runs; **paper** rows use the paper's settings.\n"
            "Status rules per row are in `paper_values.csv` (`rule`, `tolerance`, `better`, `reference`: the paper,\n"
            "the authors' code or a peer): matches / within tolerance / better or worse than the reference\n"
            "(direction by the row's `better`) / claim holds or not (a figure's statement in words, checked as a\n"
            "number, and only once the model beats the trivial predictor: else 'not tested') / not comparable\n"
            "(a speed measured on another device class). The qualifiers in brackets come from the row's `scale`\n"
            "fields (ours / the paper's), never from its note: 'reduced' (not at the paper's scale), 'stand-in'\n"
            "(not the paper's data), 'other device', 'positions rescaled'. `code`: 'current' when every file the\n"
            "run imported is unchanged since (hashes in `provenance/`), else 'stale', naming the files.\n\n")
    return (head + "## Paper artefacts\n\n" + _markdown(artefact_view(summary, reports_dir)) +
            "\n## Every row\n\n" + _markdown(summary.astype(object).where(summary.notna(), "")))


def _markdown(df: pd.DataFrame) -> str:
    """A plain GitHub Markdown table (no tabulate dependency)."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v).replace("|", "\\|")
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def difference(a, b, margin: float, names: tuple[str, str] = ("A", "B"), z: float = 2.0) -> dict:
    """Is a paired comparison of two variants resolved at this scale? `a`, `b`: one number per seed (same
    seeds, same order; a paired difference per seed); `margin`: the smallest difference that would matter,
    in the metric's units. Returns diff (mean of a - b), se (its standard error over seeds), n and a verdict:
    "resolved: A > B" / "resolved: A < B" when |diff| > z x se; "equal within +-margin" when the whole
    interval diff +- z x se lies inside (-margin, margin); else "not resolved at this scale". One seed has no
    uncertainty: always "not resolved at this scale (1 seed)"."""
    import numpy as np

    x, y = np.asarray(a, dtype=float).reshape(-1), np.asarray(b, dtype=float).reshape(-1)
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"difference(): need one value per seed for both variants, got {x.size} and {y.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("difference(): a per-seed value is not finite")
    if not math.isfinite(margin) or margin <= 0:
        raise ValueError(f"difference(): margin must be a finite number > 0, got {margin!r}")
    d = x - y
    diff = float(d.mean())
    if d.size < 2:
        return dict(diff=diff, se=float("nan"), n=1, margin=margin, verdict="not resolved at this scale (1 seed)")
    se = float(d.std(ddof=1) / math.sqrt(d.size))
    if abs(diff) > z * se and se > 0 or (se == 0 and diff != 0):
        verdict = f"resolved: {names[0]} {'>' if diff > 0 else '<'} {names[1]}"
    elif abs(diff) + z * se < margin:
        verdict = f"equal within +-{margin:g}"
    else:
        verdict = "not resolved at this scale"
    return dict(diff=diff, se=se, n=int(d.size), margin=float(margin), verdict=verdict)


def difference_text(res: dict, unit: str = "", replicates: str = "seeds") -> str:
    """'+0.012 +- 0.004 (2 se, 3 seeds): resolved: A > B' (`replicates`: what the pairs are, e.g. folds)."""
    u = f" {unit}" if unit else ""
    if res["n"] < 2:
        return f"{res['diff']:+.4g}{u} (1 pair): {res['verdict']}"
    return f"{res['diff']:+.4g} +- {2 * res['se']:.2g}{u} (2 se, {res['n']} {replicates}): {res['verdict']}"


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
    `derived_rows`) that have a reference value: setting, metric, reference, paper, ours, status, learned. For a
    notebook to say what its own run found, as the summary will read it."""
    frame = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    derived = derived_rows(frame)
    frame = pd.concat([frame, derived], ignore_index=True) if len(derived) else frame
    out = []
    for p in paper_values():
        hit = frame[(frame.experiment == p["experiment"]) & (frame.setting == p["setting"])
                    & (frame.metric == p["metric"])]
        for r in hit.to_dict("records"):
            out.append(dict(setting=p["setting"], metric=p["metric"], reference=reference_name(p), paper=p["paper"],
                            ours=r["ours"], status=row_status(p, r), learned=learned_text(r["learned"])))
    return pd.DataFrame(out, columns=["setting", "metric", "reference", "paper", "ours", "status", "learned"])
