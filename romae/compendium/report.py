"""Every artefact of the compendium goes through here: figures, tables, result rows.

    save_figure(fig, "fig2_position_range")            -> <folder>/figures/fig2_position_range.png
    save_table(df, "table1_position_reconstruction")   -> <folder>/tables/<name>.csv + .md
    record("table1_position_reconstruction", "tiny, with [CLS]", "mse", 0.05, ours_std=0.01,
           n_seeds=5, profile="quick")                 -> a row of <folder>/results.csv

<folder> is `reports_dir` when given (`make reproduce` gives each notebook a staging folder and publishes it into
reports/ when the notebook succeeds), else the ROMAE_REPORTS setting, else runs/interactive/ (git-ignored;
`romae.compendium.settings.reports_folder`): a kernel started by hand (JupyterLab, nbconvert, papermill) never
writes into the committed reports/.

The summary (reports/summary.csv + reports/SUMMARY.md) is built from these rows by the runner
(`romae.runner.summary.build_summary`); the verdicts a row gets are `romae.compendium.verdicts`', the
statistics behind them `romae.compendium.stats`' (both re-exported here: `report.difference`,
`report.row_status`, ... keep working).

Paths are built from the repository root, never from the working directory (papermill, nbval and
JupyterLab start kernels in different folders). `reports_path` is the published folder the runner reads and
writes (reports/, or the one `--reports` or ROMAE_REPORTS names).

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
from ..runtime import device_label  # the library's; re-exported for notebooks and the runner
from ..data import files
from . import settings
from .reference import paper_values
# the statistics and the verdicts live in their own modules; notebooks call them through here
from .stats import (LEVEL, _OLD_RULE, ERRATIC_STEP, SPIKE_FACTOR, _difference_verdict,  # noqa: F401
                    _interval_of, difference, difference_text, interval, loss_curve, loss_flags, outlying_seeds,
                    rederive_verdicts, slope, t_quantile, training_losses)
from .verdicts import (DECISIVE, LEARN_FACTOR, QUALIFIER_OF, SCALE_FIELDS, _parse, _plain, comparison,  # noqa: F401
                       flags_of, gate, interval_text, learned, learned_text, paper_scale, qualifiers,
                       reference_name, row_interval, row_status, scale, scale_text, status, title_tag,
                       tolerance_band)

ROOT = Path(__file__).resolve().parents[2]
REPORTS = ROOT / "reports"
RESULT_COLUMNS = ["experiment", "setting", "metric", "ours", "ours_std", "n_seeds", "profile", "device",
                  "note", "scale", "learned", "flags", "interval"]
PROFILE_RANK = {"paper": 0, "quick": 1, "smoke": 2}  # best available first in the summary


def reports_path(reports_dir: str | Path | None = None) -> Path:
    """The published reports folder (the runner's): `reports_dir` if given (non-empty), else the ROMAE_REPORTS
    setting if set, else <repo>/reports. (The test suite points ROMAE_REPORTS at a scratch folder, so nbval's smoke
    runs never overwrite the committed reports.) A kernel's artefacts go where `settings.reports_folder` says."""
    if reports_dir:
        return Path(reports_dir)
    return Path(os.environ["ROMAE_REPORTS"]) if os.environ.get("ROMAE_REPORTS") else REPORTS




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
    """Save a matplotlib figure as <folder>/figures/<name>.png (name = the paper artefact id; <folder>: the module
    docstring); only the main process of a distributed run writes."""
    path = settings.reports_folder(reports_dir) / "figures" / f"{name}.png"
    if not writer():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path


def save_table(df: pd.DataFrame, name: str, reports_dir: str | Path | None = None) -> tuple[Path, Path]:
    """Save a table as <folder>/tables/<name>.csv and a Markdown twin <name>.md (main process only)."""
    folder = settings.reports_folder(reports_dir) / "tables"
    csv, md = folder / f"{name}.csv", folder / f"{name}.md"
    if not writer():
        return csv, md
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(csv, df)
    write_atomic(md, _markdown(df))
    return csv, md


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
    """Add (or replace) one result row in <folder>/results.csv (the module docstring), keyed by (experiment, setting, metric, profile);
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
        upsert_results(pd.DataFrame([row]), settings.reports_folder(reports_dir) / "results.csv")
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


def _markdown(df: pd.DataFrame) -> str:
    """A plain GitHub Markdown table (no tabulate dependency)."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v).replace("|", "\\|")
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


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
