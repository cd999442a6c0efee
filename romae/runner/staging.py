"""A notebook run's files on their way to the reports: the staging folder, publishing into place (never over a
better profile's run: `destination`, `set_aside`), the runs log (<reports>/runs.csv) and the redaction of this
machine's paths from everything published (`redactor`). Used by `romae.runner.reproduce`.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import nbformat
import pandas as pd

from ..compendium import report
from ..data import files

ROOT = report.ROOT
RUN_COLUMNS = ["notebook", "profile", "device", "seconds", "commit", "status", "error", "params", "note", "torch",
               "cuda", "precision", "processes"]


def strip_timestamps(path: Path, output_path: Path | None = None, redact=None) -> None:
    """Drop papermill's and nbclient's timings from an executed notebook (outputs stay), so a re-run
    gives a small diff. The run's duration is kept in runs.csv instead. `output_path`: where the copy
    will live (it was executed in a staging folder). `redact`: a `redactor` applied to every text of the
    copy (sources, outputs, metadata; never image data), so no path of this machine is published."""
    nb = nbformat.read(path, as_version=4)
    meta = nb.metadata.get("papermill", {})
    for key in ("start_time", "end_time", "duration"):
        meta.pop(key, None)
    if output_path is not None and meta:
        meta["output_path"] = str(output_path)
    if meta.get("parameters", {}).get("reports_dir") and redact is None:  # the staging folder: not informative
        meta["parameters"]["reports_dir"] = "<staging folder, published to reports/>"
    for key in ("input_path", "output_path"):  # repository-relative where possible
        if meta.get(key) and Path(meta[key]).is_relative_to(ROOT):
            meta[key] = str(Path(meta[key]).relative_to(ROOT))
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = drop_progress_bars(cell.get("outputs", []))
    if redact is not None:
        nb = nbformat.from_dict(redact_tree(nb, redact))
    nbformat.write(nb, path)


# a tqdm bar's line: "train:  45%|####5     | 283/632 [00:10<00:12, 28.1it/s]" (also "?/?", "1.2M/3.4M")
_BAR = re.compile(r"\|\s*[\d.]+[kMGTP]?/[\d.?]+[kMGTP]?\s*\[[\d:?<]")
# noise about bars: tqdm.auto's warning that ipywidgets is missing (a kernel without widgets) and the source line
# it quotes; it says nothing about the run and quoted the path of the virtual environment
_BAR_NOISE = re.compile(r"TqdmWarning: IProgress not found|^\s*from \.autonotebook import tqdm as notebook_tqdm\s*$")


def drop_progress_bars(outputs: list) -> list:
    """Outputs without progress bars: the lines of stderr/stdout streams that are tqdm bars (each redraw,
    '\\r'-separated, is one) or tqdm's warning that widgets are missing are removed, streams left empty are
    dropped, and so are progress widgets. Bars are for people watching a run; in an executed copy they made
    pages megabytes long. Other text stays."""
    kept = []
    for out in outputs:
        if out.get("output_type") == "stream":
            lines = re.split(r"(?<=[\r\n])", out.get("text", ""))
            text = "".join(line for line in lines if not (_BAR.search(line) or _BAR_NOISE.search(line)))
            if text.strip():
                out["text"] = text
                kept.append(out)
        elif out.get("output_type") == "display_data" and "application/vnd.jupyter.widget-view+json" in out.get("data", {}) \
                and _BAR.search(str(out.get("data", {}).get("text/plain", ""))):
            continue
        else:
            kept.append(out)
    # consecutive pieces of one stream, split where bars were, joined again
    merged = []
    for out in kept:
        if merged and out.get("output_type") == "stream" and merged[-1].get("output_type") == "stream" \
                and merged[-1].get("name") == out.get("name"):
            merged[-1]["text"] += out["text"]
        else:
            merged.append(out)
    return merged


# ---------------------------------------------------------------- no machine paths in published files
# What is published (executed copies, pages, tables, results, summaries, runs.csv) names files relative to the
# clone or as $ROMAE_DATA/..., never by this machine's paths. The kernels' own messages do name absolute paths
# (the data root, the staging folder they write to, warnings quoting site-packages), so the runner rewrites
# them as it publishes.

LOCAL = "[local path]"  # stands for an absolute path of the machine that ran (its last component is kept)
_END = r"\s\"'<>`|:,;()\[\]{}&\\"  # characters that end a path in prose, markup, JSON and tables
# top-level folders of machines' file systems (Linux, macOS, containers, clusters, Colab, Kaggle)
_TOP = ("tmp", "var", "home", "root", "usr", "opt", "mnt", "media", "srv", "work", "workspace", "scratch", "data",
        "private", "Users", "Volumes", "content", "kaggle", "gpfs", "lustre", "nfs", "run", "etc", "proc", "sys")
_NOT_AFTER = r"(?<![\w.~/:+\\-])"  # a path starts here: not inside a word, a URL, a relative path or base64


def _absolute(*folders) -> re.Pattern:
    """An absolute path under one of the usual top-level folders or under the top-level folder of one of
    `folders` (this clone, the home, the temporary folder, the data root: a machine may keep them under a top
    folder of its own, such as /check or /build)."""
    tops = set(_TOP)
    for folder in folders:
        if folder is not None:
            for form in {os.path.abspath(folder), os.path.realpath(folder)}:
                parts = Path(form).parts
                if len(parts) > 1 and parts[0] == "/":
                    tops.add(parts[1])
    return re.compile(_NOT_AFTER + "/(?:" + "|".join(map(re.escape, sorted(tops))) + rf")/[^{_END}]*")


_WINDOWS = re.compile(r"(?<![^\s\"'(=>])[A-Za-z]:\\[^\s\"'<>`|:,;()\[\]{}&]*")  # C:\Users\...
_SITE = re.compile(_NOT_AFTER + rf"/[^{_END}]*?/(?:site|dist)-packages(?=/)")  # a Python's installed packages
_DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")  # embedded images: never rewritten


def _shown(path: str | Path, reports: Path | None = None) -> str:
    """How a published file names the absolute `path`: relative to the clone; under '[reports]' in a reports
    folder outside the clone (--reports elsewhere); else LOCAL and its last component."""
    path = Path(os.path.abspath(path))
    if path.is_relative_to(ROOT):
        return path.relative_to(ROOT).as_posix()
    if reports is not None and path.is_relative_to(reports):
        return "/".join(("[reports]", *path.relative_to(reports).parts))
    return f"{LOCAL}/{path.name}" if path.name else LOCAL


def _windows_shown(match: re.Match) -> str:
    name = re.split(r"[\\/]", match.group(0).rstrip("\\/"))[-1]
    return f"{LOCAL}/{name}" if not name.endswith(":") else LOCAL


def redactor(reports: Path | None = None, stage: Path | None = None, dest: Path | None = None,
             data_root: Path | None = None):
    """text -> the same text without this machine's paths, as a reader of the published files can use them:
    `stage` (a run's staging folder) as `dest` (the folder it is published to); the data root (`data_root`, else
    the folder $ROMAE_DATA names) as `$ROMAE_DATA` ('$ROMAE_DATA=<root>' as '$ROMAE_DATA'); a Python's
    site-packages as '[site-packages]'; the clone's root as nothing (its paths become relative; the root alone,
    '.'); a `reports` folder outside the clone as '[reports]'; any other absolute path (/tmp/..., /home/...,
    C:\\...) as LOCAL and its last component. Embedded base64 data (images) is left as it is."""
    reports = Path(os.path.abspath(reports)) if reports is not None else None
    if data_root is None and os.environ.get(files.ENV_VAR):
        data_root = Path(os.environ[files.ENV_VAR])
    named = [(ROOT, ""), (data_root, "$ROMAE_DATA")]
    if reports is not None and not reports.is_relative_to(ROOT):
        named.append((reports, "[reports]"))
    if stage is not None and dest is not None:
        named.append((stage, _shown(dest, reports)))
    prefixes = {}  # absolute folder -> what it becomes, in its written and its real form
    for folder, shown in named:
        if folder is not None:
            for form in {os.path.abspath(folder), os.path.realpath(folder)}:
                if form.rstrip(os.sep):
                    prefixes[form.rstrip(os.sep)] = shown
    # a file URL is its path; a Python's installed packages are the same on every machine
    rules = [(re.compile(r"\bfile://(?=/)"), lambda m: ""), (_SITE, lambda m: "[site-packages]")]
    for prefix in sorted(prefixes, key=len, reverse=True):  # the longest first: a staging folder before the root
        shown = prefixes[prefix]
        if shown == "$ROMAE_DATA":  # files.describe_root's "$ROMAE_DATA=<root>": said once
            rules.append((re.compile(re.escape(f"${files.ENV_VAR}={prefix}") + rf"(?=/|[{_END}]|$)"),
                          lambda m: "$ROMAE_DATA"))
        # the folder itself (then a "/" or the end of the path), never a longer name that starts with it
        rules.append((re.compile(_NOT_AFTER + re.escape(prefix) + rf"(?:/|(?=[{_END}]|$))"),
                      lambda m, s=shown: (s + "/" if s else "") if m.group(0).endswith("/") else (s or ".")))
    try:
        here = [Path.home(), Path.cwd()]
    except (RuntimeError, OSError):  # no home folder, or the working folder was deleted
        here = []
    absolute = _absolute(ROOT, tempfile.gettempdir(), data_root, reports, *here)
    rules += [(absolute, lambda m: _shown(m.group(0))), (_WINDOWS, _windows_shown)]

    def apply(text: str) -> str:
        if "/" in text or "\\" in text:
            for pattern, replace in rules:
                text = pattern.sub(replace, text)
        return text

    def redact(text: str) -> str:
        out, last = [], 0
        for m in _DATA_URI.finditer(text):  # rewrite only between embedded images
            out += [apply(text[last:m.start()]), m.group(0)]
            last = m.end()
        return "".join(out) + apply(text[last:])

    return redact


def redact_tree(obj, redact):
    """Every string of a JSON-like tree (a notebook) through `redact`; image data (keys 'image/...') kept."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, list):
        return [redact_tree(v, redact) for v in obj]
    if isinstance(obj, dict):
        return {k: v if str(k).startswith("image/") else redact_tree(v, redact) for k, v in obj.items()}
    return obj


TEXT_SUFFIXES = (".csv", ".md", ".html", ".json", ".txt", ".tex", ".svg", ".log", ".xml")


def redact_file(path: Path, redact) -> bool:
    """Rewrite a published text file (by suffix; an executed notebook through its JSON) through `redact`;
    True if it changed."""
    path = Path(path)
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text(encoding="utf-8"))
        new = redact_tree(nb, redact)
        if new == nb:
            return False
        nbformat.write(nbformat.from_dict(new), path)
        return True
    if path.suffix not in TEXT_SUFFIXES:
        return False
    with open(path, encoding="utf-8", newline="") as f:  # line endings as they are (csv rows end in \r\n)
        text = f.read()
    new = redact(text)
    if new != text:
        report.write_atomic(path, new)
    return new != text


def _first_line(error: BaseException) -> str:
    ename, evalue = getattr(error, "ename", None), getattr(error, "evalue", None)
    text = f"{ename}: {evalue}" if ename else f"{type(error).__name__}: {error}"
    return (text.strip().splitlines() or [type(error).__name__])[0][:300]


def all_runs(reports: Path) -> pd.DataFrame:
    """Every row of runs.csv, in the order the runs ended."""
    path = reports / "runs.csv"
    runs = pd.read_csv(path, dtype=str, keep_default_na=False) if path.exists() else pd.DataFrame(columns=RUN_COLUMNS)
    for col in RUN_COLUMNS:  # rows written before a column existed
        if col not in runs:
            runs[col] = ""
    return runs


def runs_with_variants(reports: Path) -> pd.DataFrame:
    """Every row of runs.csv, then each variant folder's own (<reports>/variants/<v>/runs.csv). A variant logs into
    its folder; its rows in the main runs.csv were written before that, so the folders' rows come after them."""
    folders = sorted(p.parent for p in Path(reports).glob("variants/*/runs.csv"))
    return pd.concat([all_runs(reports), *(all_runs(f) for f in folders)], ignore_index=True)


def best_profile(reports: Path, notebook: str) -> str | None:
    """The best profile of any successful run of `notebook` (stem) published in `reports`, or None
    (any, not the latest: a later failed run left the published artefacts in place)."""
    runs = all_runs(reports)
    ok = runs[(runs.notebook == notebook) & (runs.status == "ok") & (runs.params == "")]
    return min(ok.profile, key=lambda p: report.PROFILE_RANK.get(p, 9)) if len(ok) else None


def destination(reports: Path, notebook: str, profile: str, variant: str = "") -> Path:
    """Where a successful run's files go: <reports>/variants/<variant>/ for a variant; <reports>/<profile>/ when
    `reports` holds a successful run of this notebook in a better profile; else `reports`."""
    if variant:
        return reports / "variants" / variant
    best = best_profile(reports, notebook)
    rank = report.PROFILE_RANK
    return reports / profile if best is not None and rank[best] < rank[profile] else reports


def publish(stage: Path, reports: Path, notebook: str, profile: str, variant: str = "") -> Path:
    """Move a successful run's artefacts from `stage` into `reports` -> the folder they went to.

    Files (executed copy, tables, figures, provenance record) go to `destination`: `reports`, unless it holds a
    successful run of this notebook in a better profile (then <reports>/<profile>/, so a lesser run never
    replaces a better artefact). Result rows join <reports>/results.csv (they carry their profile). A `variant`
    (a run with non-default parameters) keeps everything apart in <reports>/variants/<variant>/, its rows in
    its own results.csv: never in the main results, the paper artefacts' status or the front page's rows.
    Every text file is written without this machine's paths (`redactor`)."""
    dest = destination(reports, notebook, profile, variant)
    reports.mkdir(parents=True, exist_ok=True)
    if dest == reports:
        set_aside(stage, reports, notebook, profile)
    redact = redactor(reports, stage, dest)
    if (stage / "results.csv").exists():
        redact_file(stage / "results.csv", redact)
        report.upsert_results(pd.read_csv(stage / "results.csv"), (dest if variant else reports) / "results.csv")
    for path in sorted(p for p in stage.rglob("*") if p.is_file() and p.name != "results.csv"):
        # the executed copy is rewritten through its JSON (strip_timestamps); a provenance record names files as
        # report.freshness finds them (relative to the clone for its own notebooks)
        if path.suffix != ".ipynb" and path.parent.name != "provenance":
            redact_file(path, redact)
        target = dest / path.relative_to(stage)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)  # same file system: atomic per file
    return dest


# the src a page in <reports>/html/ loads MathJax from (`pages.render_page`, `_point_at_mathjax`)
MATHJAX_URL = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe,local/romae"


def mathjax_src(html_dir: Path, page: Path) -> str:
    """The src from which `page` (anywhere under the reports folder) loads the MathJax vendored in `html_dir`."""
    return Path(os.path.relpath(html_dir, page.parent), MATHJAX_URL).as_posix()


def set_aside(stage: Path, reports: Path, notebook: str, profile: str) -> list[Path]:
    """Before a better profile's run of `notebook` publishes into `reports` (paper over quick), move the files it
    would replace, those of the run published there now, into <reports>/<their profile>/ (the same paths), with
    its page: the lesser run stays reachable (its page, results rows and provenance), never overwritten."""
    record = reports / "provenance" / f"{notebook}.json"
    try:
        old = json.loads(record.read_text()).get("profile", "")
    except (OSError, ValueError):
        return []
    rank = report.PROFILE_RANK
    if old == profile or old not in rank or rank[old] <= rank.get(profile, 9):
        return []
    moved = []
    pairs = [(p.relative_to(stage), reports / p.relative_to(stage)) for p in stage.rglob("*") if p.is_file()
             and p.name != "results.csv"]
    pairs.append((Path(f"{notebook}.html"), reports / "html" / f"{notebook}.html"))  # its page: <profile>/<nb>.html
    for rel, current in pairs:
        if current.is_file():
            target = reports / old / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(current, target)
            if current.parent == reports / "html" and target.suffix == ".html":
                _point_at_mathjax(target, reports / "html")
            moved.append(target)
    return moved


def _point_at_mathjax(page: Path, html_dir: Path) -> None:
    """A page moved out of <reports>/html/ loads MathJax from there (`pages.render_page` writes its src relative to
    the page; a page set aside keeps its mtime, so it is not rendered again)."""
    body = page.read_text(encoding="utf-8")
    if f'"{MATHJAX_URL}' in body:
        report.write_atomic(page, body.replace(f'"{MATHJAX_URL}', f'"{mathjax_src(html_dir, page)}'))


def clean_stale_staging(reports: Path) -> None:
    """Remove staging folders left by runs that were killed (their process no longer exists)."""
    for stage in reports.glob(".staging-*"):
        try:
            pid = int(stage.name.split("-")[-2])
            os.kill(pid, 0)  # alive: another runner's folder, leave it
        except (ValueError, IndexError, ProcessLookupError, PermissionError):
            shutil.rmtree(stage, ignore_errors=True)


def append_run(row: dict, reports: Path) -> None:
    """Append a row to <reports>/runs.csv; a file written before a column existed is rewritten with it."""
    path = reports / "runs.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        with open(path, newline="") as f:
            header = next(csv.reader(f), [])
        if header != RUN_COLUMNS:  # an older layout: rewrite it under the new header, atomically
            report.write_atomic(path, all_runs(reports)[RUN_COLUMNS])
    new = not path.exists()
    redact = redactor(reports)  # notes and errors name the data root or files: never as this machine's paths
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=RUN_COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow({k: redact(v) if isinstance(v, str) else v for k, v in
                         ((k, row.get(k, "")) for k in RUN_COLUMNS)})


def latest_runs(reports: Path) -> pd.DataFrame:
    """The last row of `runs_with_variants` for every (notebook, profile, params), sorted by notebook then profile:
    the latest run of a variant is its folder's last row, never an older one left in the main log."""
    runs = runs_with_variants(reports).drop_duplicates(["notebook", "profile", "params"], keep="last")
    return runs.sort_values(["notebook", "profile", "params"], kind="stable").reset_index(drop=True)
