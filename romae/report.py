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
                  "note"]
SUMMARY_COLUMNS = ["experiment", "setting", "metric", "paper", "ours", "ours_std", "n_seeds", "profile",
                   "device", "status", "note"]
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
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path


def save_table(df: pd.DataFrame, name: str, reports_dir: str | Path | None = None) -> tuple[Path, Path]:
    """Save a table as reports/tables/<name>.csv and a Markdown twin <name>.md (main process only)."""
    folder = reports_path(reports_dir) / "tables"
    csv, md = folder / f"{name}.csv", folder / f"{name}.md"
    if not writer():
        return csv, md
    folder.mkdir(parents=True, exist_ok=True)
    df.to_csv(csv, index=False)
    md.write_text(_markdown(df))
    return csv, md


def record(experiment: str, setting: str, metric: str, ours: float, *, profile: str,
           ours_std: float | None = None, n_seeds: int = 1, device: str | None = None, note: str = "",
           reports_dir: str | Path | None = None) -> dict:
    """Add (or replace) one result row in reports/results.csv, keyed by (experiment, setting, metric, profile);
    in a distributed run only the main process writes (every process gets the row back)."""
    if profile not in PROFILE_RANK:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILE_RANK)}")
    if not math.isfinite(float(ours)):
        raise ValueError(f"{experiment} / {setting} / {metric}: result is not finite ({ours})")
    ran = runtime.notes()  # a dry run, a precision other than FP32: said in every row
    row = dict(experiment=experiment, setting=setting, metric=metric, ours=float(ours),
               ours_std=None if ours_std is None else float(ours_std), n_seeds=int(n_seeds), profile=profile,
               device=device or f"{device_label(runtime.current().device)}; {runtime.stack_label()}",
               note="; ".join(x for x in (ran, note) if x))
    if writer():  # one writer in a distributed run
        upsert_results(pd.DataFrame([row]), reports_path(reports_dir) / "results.csv")
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


def status(paper: float, ours: float, rule: str, tolerance: float, better: str = "") -> str:
    """Compare ours with the paper by the row's stated rule, saying the direction.

    rule 'abs': |ours - paper| <= tolerance; 'rel': |ours - paper| / |paper| <= tolerance -> "matches"
    (within a tenth of the tolerance) or "within tolerance"; beyond it, "better than the paper" /
    "worse than the paper" when the row says which direction is better (`better` = 'higher' | 'lower'),
    else "differs". 'min' (legacy): ours >= paper - tolerance. 'gt': a claim the paper makes in words,
    checked as ours > paper (a threshold) -> "claim holds" / "claim does not hold".
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
        return "better than the paper" if (ours > paper) == (better == "higher") else "worse than the paper"
    return "differs"


def qualified(state: str, note: str) -> str:
    """A status with the run's scope kept visible: '... (reduced)' or '... (stand-in)' from its note."""
    text = str(note or "").lower()
    for word in ("stand-in", "reduced"):
        if word in text:
            return f"{state} ({word})"
    return state


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
                                note=f"{note}; {first.note}"))
    return pd.DataFrame(out, columns=RESULT_COLUMNS)


def build_summary(reports_dir: str | Path | None = None) -> pd.DataFrame:
    """Join our results with the paper's values -> reports/summary.csv and reports/SUMMARY.md."""
    folder = reports_path(reports_dir)
    results = pd.read_csv(folder / "results.csv") if (folder / "results.csv").exists() else \
        pd.DataFrame(columns=RESULT_COLUMNS)
    derived = derived_rows(results)
    results = pd.concat([results, derived], ignore_index=True) if len(derived) else results
    paper = pd.DataFrame(paper_values())
    rows = []
    for _, p in paper.iterrows():
        mine = results[(results.experiment == p.experiment) & (results.setting == p.setting)
                       & (results.metric == p.metric)]
        if mine.empty:
            rows.append(dict(experiment=p.experiment, setting=p.setting, metric=p.metric, paper=p.paper,
                             status="not run", note=""))
        for _, r in mine.iterrows():
            rows.append(dict(experiment=p.experiment, setting=p.setting, metric=p.metric, paper=p.paper,
                             ours=r.ours, ours_std=r.ours_std, n_seeds=r.n_seeds, profile=r.profile,
                             device=r.device, status=qualified(status(p.paper, r.ours, p.rule, p.tolerance,
                                                                      p.better), r.note),
                             note=r.note))
    # our rows of a paper experiment and metric that the paper has no value for (e.g. the from-scratch
    # controls): shown, with no paper number and status "no paper value", or "stand-in" for a run on
    # stand-in data (never compared with the paper's number)
    known = set(zip(paper.experiment, paper.setting, paper.metric))
    metrics_of = set(zip(paper.experiment, paper.metric))
    for _, r in results.iterrows():
        if (r.experiment, r.setting, r.metric) not in known and (r.experiment, r.metric) in metrics_of:
            rows.append(dict(experiment=r.experiment, setting=r.setting, metric=r.metric, paper=None, ours=r.ours,
                             ours_std=r.ours_std, n_seeds=r.n_seeds, profile=r.profile, device=r.device,
                             status="stand-in" if "stand-in" in str(r.note).lower() else "no paper value",
                             note=r.note))
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    summary["_rank"] = summary.profile.map(PROFILE_RANK).fillna(9)
    summary = summary.sort_values(["experiment", "setting", "metric", "_rank"], kind="stable")
    summary = summary.drop(columns="_rank").reset_index(drop=True)
    folder.mkdir(parents=True, exist_ok=True)
    summary.to_csv(folder / "summary.csv", index=False)
    (folder / "SUMMARY.md").write_text(_summary_markdown(summary, folder))
    return summary


ARTEFACT_COLUMNS = ["artefact", "paper", "notebook", "status", "profile", "what"]


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
        rows = mine[~mine.status.isin(["no paper value", "stand-in"])]
        stand_in_rows = mine[mine.status == "stand-in"]
        stand_in = len(stand_in_rows.drop_duplicates(["experiment", "setting", "metric"]))
        best = rows.assign(_r=rows.profile.map(PROFILE_RANK).fillna(9)).sort_values("_r", kind="stable")
        best = best.drop_duplicates(["experiment", "setting", "metric"])  # best profile of each row
        counts = best.status.value_counts()
        state = ", ".join(f"{n} {s}" for s, n in counts.items()) if len(best) else ""
        profiles = [p for p in best.profile.dropna().unique() if p]
        profile = min(profiles, key=lambda p: PROFILE_RANK.get(p, 9)) if profiles else ""
        if a["figure"]:
            made = (folder / "figures" / f"{a['figure']}.png").exists()
            fig = "figure made" if made else "figure not made"
            state = f"{fig}; {state}" if state else (fig + ("" if a["experiments"] else ", no quantitative check"))
            profile = profile or (_best_ok_profile(runs, a["notebook"]) if made else "")
        if stand_in:  # runs on stand-in data: said, not counted as a comparison with the paper
            state = ", ".join(x for x in (state, f"{stand_in} stand-in rows") if x)
            profile = profile or min(stand_in_rows.profile, key=lambda p: PROFILE_RANK.get(p, 9))
        out.append(dict(artefact=a["artefact"], paper=a["paper_ref"], notebook=" ".join(a["notebook"]),
                        status=state or "not run", profile=profile, what=a["what"]))
    return pd.DataFrame(out, columns=ARTEFACT_COLUMNS)


def _summary_markdown(summary: pd.DataFrame, reports_dir=None) -> str:
    head = ("# Summary: the paper's numbers and ours\n\n"
            "Generated by `romae.report.build_summary` (run `make reproduce`); do not edit by hand.\n"
            "`paper` comes from `romae/reference/paper_values.csv`; `ours` from running the code in the\n"
            "named profile on the named device. **smoke** rows are seconds-long CI runs, not "
            "reproductions; **quick** rows are reduced CPU runs; **paper** rows use the paper's settings.\n"
            "Status rules per row are in `paper_values.csv` (`rule`, `tolerance`, `better`): matches / within\n"
            "tolerance / better or worse than the paper (direction by the row's `better`) / claim holds or not\n"
            "(a figure's statement in words, checked as a number); '(reduced)' and '(stand-in)' mark runs that\n"
            "are not at the paper's scale or not on the paper's data.\n\n")
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
