"""The papermill runner behind `make reproduce`: run the notebooks, log the runs, build the reports.

    python -m romae.runner.reproduce --profile quick                 # every notebooks/NN_*.ipynb, in order
    python -m romae.runner.reproduce --profile smoke --only 00,03    # only the notebooks numbered 00 and 03
    python -m romae.runner.reproduce --only 12 --param datasets=JapaneseVowels,Epilepsy   # any notebook parameter
    python -m romae.runner.reproduce --download                      # fetch the data the notebooks need first

A notebook that needs data (its metadata names its experiment module, whose `data_needs(profile,
**parameters)` says what) is checked before a kernel starts: if its data is not under the data root it is
**skipped** (its own status, with the command that fetches the data) and nothing of it is published.
A `romae.data.files.DataMissing` raised while it runs is also a skip. `--param name=value` sets a
parameter of every selected notebook that declares it, converted to the declared type (a `list` takes
comma-separated names); a run with parameters other than the profile is a variant: it publishes into
<reports>/variants/<notebook>--<profile>--<name=value...>/, never over the notebook's default run, with its
own results.csv, provenance record, summary.csv and SUMMARY.md: its rows never join the main results or the
paper artefacts' status; the main SUMMARY.md and index.html list the variants, each current or stale.

Reports are precious, so a run never damages what is there:

* `smoke` runs (seconds, CI) write a separate tree, <reports>/smoke/ (git-ignored), never the front page.
* Each notebook runs in a staging folder <reports>/.staging-<name>-<pid>-*/ (papermill, kernel `python3`,
  cwd = the repository root, parameters `profile` and `reports_dir` = the staging folder); only when it
  succeeds are its executed copy, tables and figures moved into place and its result rows merged into
  results.csv. A failing notebook leaves the last good artefacts untouched (its executed copy, with the
  error, goes to <reports>/failed/<profile>/); an interrupted run (Ctrl-C, SIGTERM) is logged as
  "interrupted" and the summary and index are rebuilt from what is on disk; a killed one leaves only
  its staging folder, removed by the next run.
* The terminal tells the story of each notebook: how long its last successful run of this profile took, the
  lines its kernel says (`romae.compendium.terminal`: its plan and estimates, each training's start, end and a line a
  minute, with trainings done / expected and the time left) and, at the end, its result rows.
* A run never replaces an artefact of a better profile (paper > quick > smoke): a `quick` run of a
  notebook that has a successful `paper` run publishes to <reports>/quick/ instead.
* Nothing published names this machine's paths (`redactor`): the data root is written `$ROMAE_DATA`, the
  clone's files relative to it, the staging folder as the folder it was published to, other absolute paths
  as "[local path]/<name>"; progress bars and tqdm's widget warning are dropped from the executed copies.

Each run appends a row to <reports>/runs.csv (notebook, profile, device, seconds, commit — with
"+dirty" when romae/ or notebooks/ had uncommitted changes —, status ok | failed | interrupted | skipped,
error, params, note: what data it lacked and how to fetch it). A failing notebook does not stop the
others; the exit code is non-zero if any failed (a skipped one is not a failure, except in the paper
profile: a paper run that skipped a notebook is incomplete, says so in its last lines and in SUMMARY.md, and
exits 3 unless --allow-skips). Then:

    <reports>/summary.csv, SUMMARY.md   romae.compendium.report.build_summary + a "Runs" section (latest per
                                        notebook and profile) + a "Variants" section
    <reports>/variants/<v>/summary.csv, SUMMARY.md   each variant's own, from its own results.csv
    <reports>/html/<name>.html          each executed notebook as HTML (figures embedded)
    <reports>/html/mathjax/             a minimal MathJax 2.7 copied from the `jupyter-server-mathjax`
                                        package, so equations render offline
    <reports>/index.html                the front page: summary table, runs, links to every notebook
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import csv
import html
import importlib
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pandas as pd

from . import frontpage
from ..compendium import report, terminal, trainings
from ..compendium.report import _slug, show_params, variant_slug
from .. import runtime
from ..config import PROFILES, as_list, check_profile
from ..data import catalog, files

ROOT = report.ROOT
NOTEBOOKS = ROOT / "notebooks"
RUN_COLUMNS = ["notebook", "profile", "device", "seconds", "commit", "status", "error", "params", "note", "torch",
               "cuda", "precision", "processes"]
# MathJax 2.7 as shipped by jupyter-server-mathjax: the combined TeX + HTML-CSS configuration and the
# files it loads on demand (STIX web fonts; no SVG output, no translations) -- about 2.5 MB.
MATHJAX_PARTS = ("MathJax.js", "LICENSE", "config/TeX-AMS-MML_HTMLorMML-full.js", "config/Safe.js",
                 "extensions", "jax/input/TeX", "jax/element/mml", "jax/output/HTML-CSS",
                 "fonts/HTML-CSS/STIX-Web/woff")
MATHJAX_SKIP = ("a11y", "HTML-CSS", "MathML")  # sub-folders of extensions/ that the pages never load
# The package has only the STIX-Web fonts; MathJax's default web font (TeX) would be missing.
MATHJAX_LOCAL_CONFIG = """\
MathJax.Hub.Config({"HTML-CSS": {availableFonts: [], webFont: "STIX-Web", imageFont: null},
                    menuSettings: {renderer: "HTML-CSS"}});
MathJax.Ajax.loadComplete("[MathJax]/config/local/romae.js");
"""
MATHJAX_URL = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe,local/romae"


# ---------------------------------------------------------------- running notebooks

def select_notebooks(folder: Path, only: str | None = None) -> list[Path]:
    """notebooks/NN_*.ipynb sorted by name; `only` = comma-separated NN prefixes ("00,03"), or all."""
    found = sorted(p for p in Path(folder).glob("[0-9][0-9]_*.ipynb"))
    if not only or only == "all":
        return found
    wanted = {w.strip() for w in only.split(",") if w.strip()}
    unknown = wanted - {p.name[:2] for p in found}
    if unknown:
        raise ValueError(f"--only {only}: no notebook numbered {', '.join(sorted(unknown))} in {folder} "
                         f"(have: {', '.join(p.name[:2] for p in found) or 'none'})")
    return [p for p in found if p.name[:2] in wanted]


# ---------------------------------------------------------------- parameters and data

def notebook_parameters(path: Path) -> dict[str, tuple[str, object]]:
    """{name: (declared type, default)} of the notebook's `parameters` cell (annotated assignments)."""
    nb = json.loads(Path(path).read_text())
    for cell in nb["cells"]:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            out = {}
            for node in ast.parse(src).body:
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    out[node.target.id] = (ast.unparse(node.annotation), ast.literal_eval(node.value))
            return out
    return {}


def convert(value: str, declared: str, name: str):
    """A command-line value for a parameter of declared type `declared` (list, int, float, bool, str)."""
    try:
        if declared.startswith(("list", "tuple")):
            return as_list(value, name)
        if declared == "int":
            return int(value)
        if declared == "float":
            return float(value)
        if declared == "bool":
            low = value.strip().lower()
            if low not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(value)
            return low in ("1", "true", "yes")
    except ValueError:
        raise ValueError(f"parameter {name}: {value!r} is not a valid {declared}") from None
    return value


def parse_params(pairs: list[str] | None) -> dict[str, str]:
    """['name=value', ...] -> {name: value}; the value may hold '=' and commas."""
    out = {}
    for pair in pairs or []:
        name, eq, value = pair.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_]\w*", name.strip()):
            raise ValueError(f"--param {pair!r}: write name=value, e.g. --param datasets=JapaneseVowels,Epilepsy")
        out[name.strip()] = value
    return out


def resolve_params(path: Path, profile: str, given: dict[str, str]) -> tuple[dict, dict]:
    """(every parameter as the notebook will see it, the ones set from `given`) for one notebook."""
    declared = notebook_parameters(path)
    effective = {k: default for k, (_, default) in declared.items()}
    overrides = {k: convert(v, declared[k][0], k) for k, v in given.items() if k in declared}
    effective.update(overrides, profile=profile)
    return effective, overrides


def notebook_needs(path: Path, params: dict) -> list[catalog.Need]:
    """The data a notebook needs with these parameters: its metadata's experiment module's `data_needs`."""
    experiment = json.loads(Path(path).read_text()).get("metadata", {}).get("romae", {}).get("experiment")
    if not experiment:
        return []
    module = importlib.import_module(f"romae.experiments.{experiment}")
    return module.data_needs(**params)


def data_check(path: Path, params: dict) -> tuple[str, str]:
    """(why the notebook cannot run: its required data that is missing, with the commands that fetch it, or
    ""; the optional data it will run without, or "") under its data root, with these parameters."""
    needs = notebook_needs(path, params)
    root = params.get("data_root") or None
    lacking, optional = catalog.missing(needs, root), catalog.missing(needs, root, optional=True)
    return ("; ".join(n.message(root) for n in lacking),
            "; ".join(n.message(root).removeprefix("needs ") for n in optional))


def git_commit() -> str:
    """Short hash of the checked-out commit, '+dirty' if the code (romae/, notebooks/) has uncommitted
    changes, or 'unknown' outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=10)
        if out.returncode != 0 or not out.stdout.strip():
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "romae", "notebooks"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


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


TEXT_SUFFIXES = (".csv", ".md", ".html", ".json", ".txt", ".tex", ".svg")


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
            moved.append(target)
    return moved


def clean_stale_staging(reports: Path) -> None:
    """Remove staging folders left by runs that were killed (their process no longer exists)."""
    for stage in reports.glob(".staging-*"):
        try:
            pid = int(stage.name.split("-")[-2])
            os.kill(pid, 0)  # alive: another runner's folder, leave it
        except (ValueError, IndexError, ProcessLookupError, PermissionError):
            shutil.rmtree(stage, ignore_errors=True)


def run_notebook(source: Path, profile: str, reports: Path, timeout: float | None = None,
                 device: str = "", params: dict | None = None) -> dict:
    """Execute one notebook with papermill in a staging folder and publish it on success; return its
    runs.csv row. A notebook whose required data is missing is not run (status "skipped"). `params`:
    parameter overrides (already converted). KeyboardInterrupt (Ctrl-C, SIGTERM) propagates after the
    staging folder is removed."""
    effective, overrides = resolve_params(source, profile, params or {})
    shown = "; ".join(show_params(overrides))
    row = dict(notebook=source.stem, profile=profile, device=device, seconds=0.0, commit=git_commit(), status="ok",
               error="", params=shown, note="", where="", **runtime.stack())
    try:
        lacking, optional = data_check(source, effective)
    except Exception as e:  # e.g. a parameter its experiment refuses: this notebook fails, the others run
        return dict(row, status="failed", error=_first_line(e))
    dry = runtime.dry_run()
    if lacking and not dry:  # nothing runs, nothing is published: the last good artefacts stay
        return dict(row, status="skipped", note=lacking)
    if lacking:  # a dry run goes on: the experiment trains on generated tokens of the paper's shapes instead
        row["note"] = f"dry run on generated tokens, without {lacking}"
    elif optional:
        row["note"] = f"ran without (optional) {optional}"

    import papermill  # slow import: only when running

    stage = Path(tempfile.mkdtemp(prefix=f".staging-{source.stem}-{os.getpid()}-", dir=reports))
    out = stage / "executed" / source.name
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    status, error, where = "ok", "", ""
    manifest = stage / "modules.json"
    # the kernel lists the package modules it ran (report._note_modules); TQDM_DISABLE quiets the bars that
    # leave `disable` to tqdm (fit's does not: strip_timestamps drops bars from the executed copy)
    # the kernel's lines for the terminal (romae.compendium.terminal.say: plan, trainings, results) are printed as they come
    fd, echo = tempfile.mkstemp(prefix=f"romae-terminal-{source.stem}-", suffix=".log")  # never published
    os.close(fd)
    echo = Path(echo)
    with _restored_env(report.MANIFEST, "TQDM_DISABLE", terminal.ECHO), _echoed(echo):
        os.environ.update({report.MANIFEST: str(manifest), "TQDM_DISABLE": "1", terminal.ECHO: str(echo)})
        try:
            # KERNEL_QUIET: ipykernel's warning that its local TCP transport is unencrypted, once per notebook
            papermill.execute_notebook(str(source), str(out), parameters=dict(overrides, profile=profile,
                                       reports_dir=str(stage)), kernel_name="python3", cwd=str(ROOT),
                                       execution_timeout=timeout, progress_bar=False, extra_arguments=KERNEL_QUIET)
        except KeyboardInterrupt:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        except Exception as e:  # a failing notebook is logged; the others still run
            if _INTERRUPTED:  # the interrupt stopped its kernel, and papermill reported that instead
                shutil.rmtree(stage, ignore_errors=True)
                raise KeyboardInterrupt(f"signal {_INTERRUPTED[-1]}") from None
            status, error = "failed", _first_line(e)
            if getattr(e, "ename", "") == "DataMissing" and not dry:  # data the needs check did not foresee: a skip
                status, error, row["note"] = "skipped", "", str(getattr(e, "evalue", e))
    if _INTERRUPTED:  # an interrupt whose exception was swallowed: not a finished run
        shutil.rmtree(stage, ignore_errors=True)
        raise KeyboardInterrupt(f"signal {_INTERRUPTED[-1]}")
    seconds = time.perf_counter() - start
    if status == "ok":  # which code made these artefacts: the freshness check reads it (report.freshness)
        write_provenance(stage, source, profile, manifest, row["commit"])
        for line in result_lines(stage / "results.csv"):
            print(f"    {line}", flush=True)
    variant = variant_slug(source.stem, profile, overrides)
    try:
        if out.exists() and status != "skipped":
            home = destination(reports, source.stem, profile, variant) if status == "ok" else \
                reports / "failed" / profile
            strip_timestamps(out, home / "executed" / source.name if status == "ok" else home / source.name,
                             redactor(reports, stage, home))
        if status == "ok":
            where = publish(stage, reports, source.stem, profile, variant)
        elif status == "failed" and out.exists():  # the executed copy with the error, apart from the good one
            failed = reports / "failed" / profile / source.name
            failed.parent.mkdir(parents=True, exist_ok=True)
            os.replace(out, failed)
            where = failed.parent
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return dict(row, seconds=round(seconds, 1), status=status, error=error, where=str(where))


KERNEL_QUIET = ["--IPKernelApp.log_level=ERROR"]
SHOWN_RESULTS = 8  # result rows a notebook prints in the terminal; the rest are in SUMMARY.md


@contextmanager
def _echoed(path: Path, indent: str = "    "):
    """Print each whole line appended to `path` (by the kernel: romae.compendium.terminal.say) while the block runs, and
    what is left when it ends; then remove `path`."""
    stop = threading.Event()

    def follow():
        pos = 0
        while True:
            last = stop.is_set()
            try:
                with open(path, "rb") as f:
                    f.seek(pos)
                    chunk = f.read()
            except OSError:
                chunk = b""
            whole = chunk[:chunk.rfind(b"\n") + 1] if not last else chunk
            pos += len(whole)
            for line in whole.decode("utf-8", "replace").splitlines():
                print(indent + line, flush=True)
            if last:
                return
            stop.wait(0.5)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
        path.unlink(missing_ok=True)


def result_lines(path: Path) -> list[str]:
    """The terminal's summary of a notebook's result rows: 'result: <experiment> <setting> <metric> <ours> (n
    seeds)', at most SHOWN_RESULTS of them."""
    if not path.exists():
        return []
    try:
        rows = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError):
        return []
    lines = []
    for r in rows.head(SHOWN_RESULTS).itertuples():
        n = getattr(r, "n_seeds", None)
        n = int(n) if pd.notna(n) else None
        std = getattr(r, "ours_std", None)
        spread = f" +- {std:.4g}" if n and n > 1 and pd.notna(std) else ""
        seeds = f" ({n} seed{'s' if n != 1 else ''})" if n else ""
        value = f"{r.ours:.4g}" if isinstance(r.ours, (int, float)) and pd.notna(r.ours) else str(r.ours)
        lines.append(f"result: {r.experiment} | {r.setting} | {r.metric}: {value}{spread}{seeds}")
    if len(rows) > SHOWN_RESULTS:
        lines.append(f"... and {len(rows) - SHOWN_RESULTS} more result rows (SUMMARY.md)")
    return lines


def write_provenance(stage: Path, source: Path, profile: str, manifest: Path, commit: str) -> Path:
    """<stage>/provenance/<notebook>.json: the profile, the commit, the hash of the notebook and of every
    package module its kernel imported (listed by the kernel in `manifest`); published with the artefacts."""
    modules = json.loads(manifest.read_text()) if manifest.exists() else {}
    manifest.unlink(missing_ok=True)
    rel = source.resolve().relative_to(ROOT).as_posix() if source.resolve().is_relative_to(ROOT) else str(source)
    record = dict(notebook=source.stem, profile=profile, commit=commit, modules=modules,
                  notebook_file={rel: report.file_hash(source)})
    path = stage / "provenance" / f"{source.stem}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


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


def last_took(reports: Path, notebook: str, profile: str, params: dict) -> str:
    """' (its last successful <profile> run took 12 min on <device>)', or '' if there was none. `params`: the
    notebook's overrides (resolve_params), as runs.csv names them."""
    try:
        runs = all_runs(reports)
    except Exception:  # an unreadable log: no estimate, not a failure
        return ""
    if runs.empty:
        return ""
    mine = runs[(runs.notebook == notebook) & (runs.profile == profile) & (runs.status == "ok")
                & (runs.params == "; ".join(show_params(params)))]
    if mine.empty:
        return ""
    last = mine.iloc[-1]
    return f" (its last successful {profile} run took {terminal.duration(float(last.seconds))} on {last.device})"


def latest_runs(reports: Path) -> pd.DataFrame:
    """The last row of runs.csv for every (notebook, profile, params), sorted by notebook then profile."""
    runs = all_runs(reports).drop_duplicates(["notebook", "profile", "params"], keep="last")
    return runs.sort_values(["notebook", "profile", "params"], kind="stable").reset_index(drop=True)


def add_runs_section(reports: Path) -> None:
    """Append the latest run of every notebook and profile to SUMMARY.md; failures in bold."""
    runs = latest_runs(reports)
    if runs.empty:
        return
    runs["status"] = runs.status.map(lambda s: f"**{s.upper()}**" if s not in ("ok", "skipped") else s)
    text = ("\n## Runs\n\nLatest run of each notebook per profile (`python -m romae.runner.reproduce`; full log in "
            "`runs.csv`; executed notebooks in `executed/`, as HTML in `index.html`).\n\n")
    skipped = paper_skipped(runs)
    if skipped:
        text += (f"**Paper profile incomplete: {incomplete_text(skipped)}** in their latest paper-profile run; the "
                 "paper's tables they make were not regenerated at the paper's scale (their rows above come from "
                 "other profiles, if any).\n\n")
    path = reports / "SUMMARY.md"
    report.write_atomic(path, path.read_text() + text + report._markdown(runs))


def add_trainings_section(reports: Path) -> None:
    """Append the committed record of finished paper trainings (<reports>/trainings/, `romae.compendium.trainings`) to SUMMARY.md:
    per training name and device, how many are kept, current or stale, their wall time beside the plan's, peak memory."""
    folder = reports / "trainings"
    if not folder.is_dir():
        return
    table = trainings.table(folder)
    if table.empty:
        return
    g = trainings.grouped(table)
    stale = int(g.stale.sum())
    devices = ", ".join(sorted(set(table.device)))
    text = ("\n## Finished paper trainings kept\n\nEvery training of a paper-profile run is kept in `trainings/` "
            "when it finishes (`python -m romae.compendium.trainings`): a run done in pieces trains only what is missing. "
            f"{len(table)} kept ({devices}); "
            + (f"**{stale} stale** (their code changed: retrained when next run)" if stale else "all current")
            + ". wall / planned: the measured hours beside `romae.compendium.plan`'s estimate for the device, as the plan stood "
            "when it trained, recorded then (the reference CPU on a CPU); ratio: their quotient.\n\n")
    path = reports / "SUMMARY.md"
    report.write_atomic(path, path.read_text() + text + report._markdown(g))


def paper_skipped(runs: pd.DataFrame) -> list[str]:
    """The notebooks whose latest paper-profile run (the notebook's own parameters) was skipped for missing
    data, from `latest_runs`."""
    rows = runs[(runs.profile == "paper") & (runs.params.fillna("") == "")]
    return sorted(rows.notebook[rows.status.str.strip("*").str.lower() == "skipped"])


# ---------------------------------------------------------------- variants: runs with other parameters

VARIANT_COLUMNS = ["variant", "notebook", "profile", "params", "code"]


def variant_table(reports: Path) -> pd.DataFrame:
    """One row per folder of <reports>/variants/: its notebook, profile and parameters (as runs.csv wrote them,
    else as its folder name says), and `code`: 'current' when its provenance record
    (variants/<variant>/provenance/<notebook>.json) matches the files on disk, else 'stale: <why>' (a variant
    without a record, from before records were kept, is stale: nobody can say which code made it)."""
    # a folder holding only the runs.csv of failed runs is no variant (yet)
    folders = sorted(p for p in (reports / "variants").glob("*") if (p / "executed").is_dir()) \
        if (reports / "variants").is_dir() else []
    # a variant's runs are logged in its own folder (older ones in the main runs.csv)
    runs = pd.concat([all_runs(reports), *(all_runs(f) for f in folders)], ignore_index=True)
    runs = runs[(runs.params != "") & (runs.status == "ok")]
    slugs = {_slug([r.notebook, r.profile, *r.params.split("; ")]): r.params for r in runs.itertuples()}
    rows = []
    for folder in folders:
        parts = folder.name.split("--")  # <notebook>--<profile>--<name=value>...
        notebook, profile, params = parts[0], (parts[1:2] or [""])[0], parts[2:]
        state, changed = report.freshness(report.provenance_of(notebook, profile, folder))
        rows.append(dict(variant=folder.name, notebook=notebook, profile=profile,
                         params=slugs.get(folder.name, "; ".join(params)),
                         code=state if state == "current" else f"stale: {', '.join(changed)}"))
    return pd.DataFrame(rows, columns=VARIANT_COLUMNS)


def build_variants(reports: Path) -> pd.DataFrame:
    """Each variant's own summary (<reports>/variants/<variant>/summary.csv and SUMMARY.md, from its own
    results.csv: `report.build_summary`, headed by what the variant is), then a "Variants" section at the end of
    the main SUMMARY.md listing them (call it right after build_summary and add_runs_section, as build_reports
    does); -> `variant_table`."""
    table = variant_table(reports)
    for v in table.itertuples():
        build_variant(reports, v)
    if len(table):
        listed = table.assign(variant=[f"[{v}](variants/{v}/) ([summary](variants/{v}/SUMMARY.md))"
                                       for v in table.variant])
        text = ("\n## Variants\n\nRuns with other notebook parameters (`python -m romae.runner.reproduce --param "
                "name=value`), each kept apart in `variants/<variant>/` with its own executed notebook, tables, "
                "figures, `results.csv`, provenance record and summary; none of their rows is in the tables above "
                "or in the paper artefacts' status. `code`: current or stale, as above.\n\n")
        path = reports / "SUMMARY.md"
        report.write_atomic(path, path.read_text() + text + report._markdown(listed))
    return table


def build_variant(reports: Path, v) -> Path:
    """One variant's own summary.csv and SUMMARY.md (from its own results.csv, headed by what the variant is;
    `v`: its row of `variant_table`) and its page, all inside its folder -> the folder."""
    folder = reports / "variants" / v.variant
    report.build_summary(folder)
    head = (f"# Variant {v.variant}\n\nA run of notebook `{v.notebook}` in the **{v.profile}** profile with other "
            f"parameters than its own (`{v.params}`): its numbers are not the compendium's reproduction of the "
            f"paper and count in none of the main summary's statuses. Code: **{v.code}**. Executed notebook: "
            f"`executed/{v.notebook}.ipynb`; page: `{v.notebook}.html`.\n\n")
    path = folder / "SUMMARY.md"
    body = path.read_text()
    report.write_atomic(path, head + ("#" + body if body.startswith("# ") else body))  # its title, one level down
    redact = redactor(reports)
    for path in (folder / "SUMMARY.md", folder / "summary.csv"):
        if path.exists():
            redact_file(path, redact)
    executed = folder / "executed" / f"{v.notebook}.ipynb"
    if executed.exists():
        render_page(reports, executed, folder / f"{v.notebook}.html")
    return folder


def variant_of(notebook: Path, profile: str, params: dict) -> str:
    """The variant folder's name a run of `notebook` with `params` publishes to ('' for the notebook's own run)."""
    return variant_slug(notebook.stem, profile, resolve_params(notebook, profile, params)[1])


def build_reports(reports: Path, variants: list[str] | None = None) -> Path:
    """Everything a run leaves besides its own files, from what is on disk: summary.csv and SUMMARY.md (with
    the runs and the variants), each variant's summary, the HTML pages and index.html, none with this
    machine's paths -> index.html. `variants`: only these variants ran: their own folders are rebuilt and no
    tracked file outside them changes (the main pages list them the next time they are built) -> the first's
    folder."""
    if variants:
        table = variant_table(reports)
        table = table[table.variant.isin(variants)]
        built = [build_variant(reports, v) for v in table.itertuples()]
        return built[0] if built else reports / "variants"
    report.build_summary(reports)
    add_runs_section(reports)
    add_trainings_section(reports)
    build_variants(reports)  # each variant's own files are redacted by build_variant
    redact = redactor(reports)
    for path in (reports / "SUMMARY.md", reports / "summary.csv"):
        if path.exists():
            redact_file(path, redact)
    return build_index(reports)


# ---------------------------------------------------------------- HTML

def vendor_mathjax(html_dir: Path) -> Path:
    """Copy the minimal MathJax into <html_dir>/mathjax/ (from the jupyter-server-mathjax package)."""
    import jupyter_server_mathjax

    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    dest = html_dir / "mathjax"
    for part in MATHJAX_PARTS:
        target = dest / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if (src / part).is_dir():
            shutil.copytree(src / part, target, dirs_exist_ok=True,
                            ignore=lambda d, names: [n for n in names if n in MATHJAX_SKIP and
                                                     Path(d).name == "extensions"])
        else:
            shutil.copy2(src / part, target)
    (dest / "config" / "local").mkdir(parents=True, exist_ok=True)
    (dest / "config" / "local" / "romae.js").write_text(MATHJAX_LOCAL_CONFIG)
    return dest


def render_notebooks(reports: Path, force: bool = False) -> list[Path]:
    """<reports>/executed/*.ipynb -> <reports>/html/*.html (only new or changed ones unless `force`)."""
    html_dir = reports / "html"
    html_dir.mkdir(parents=True, exist_ok=True)
    vendor_mathjax(html_dir)
    sources = [(nb, html_dir / f"{nb.stem}.html") for nb in sorted((reports / "executed").glob("*.ipynb"))]
    sources += [(nb, nb.parent.parent / f"{nb.stem}.html")  # runs with other parameters: in their own folders
                for nb in sorted((reports / "variants").glob("*/executed/*.ipynb"))]
    sources += [(nb, nb.parent.parent / f"{nb.stem}.html")  # a lesser profile's run set aside by a better one
                for profile in report.PROFILE_RANK if profile != "smoke"
                for nb in sorted((reports / profile / "executed").glob("*.ipynb"))]
    return [render_page(reports, nb, page, force) for nb, page in sources]


def render_page(reports: Path, executed: Path, page: Path, force: bool = False) -> Path:
    """`executed` (a notebook) -> the HTML `page`, unless the page is newer (or `force`); MathJax from
    <reports>/html/ wherever the page lies."""
    from nbconvert import HTMLExporter

    html_dir = reports / "html"
    if force or not page.exists() or page.stat().st_mtime < executed.stat().st_mtime:
        vendor_mathjax(html_dir)
        exporter = HTMLExporter(template_name="lab", mathjax_url=MATHJAX_URL, embed_images=True)
        body, _ = exporter.from_filename(str(executed))
        if page.parent != html_dir:
            body = body.replace(MATHJAX_URL, Path(os.path.relpath(html_dir, page.parent), MATHJAX_URL).as_posix())
        page.parent.mkdir(parents=True, exist_ok=True)
        report.write_atomic(page, redactor(reports)(body))  # the executed copy is clean already
    return page


def _html_table(df: pd.DataFrame, css: str, key: str = "status") -> str:
    """A plain HTML table; floats to 4 significant digits, a row class per `key` (its verdict column)."""
    def cell(v):
        return "" if v is None or (isinstance(v, float) and v != v) else (
            f"{v:.4g}" if isinstance(v, float) else str(v))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    rows = []
    for r in df.itertuples(index=False):
        cls = status_class(str(getattr(r, key, "")))
        rows.append(f'<tr class="{html.escape(cls)}">' +
                    "".join(f"<td>{html.escape(cell(v))}</td>" for v in r) + "</tr>")
    return f'<table class="{css}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n' + "\n".join(rows) + \
        "\n</tbody>\n</table>"


status_class = frontpage.status_class  # CSS class of a verdict (grey for not tested / not comparable)


STYLE = """body{font-family:system-ui,sans-serif;max-width:110em;margin:2em auto;padding:0 1em}
table{border-collapse:collapse;font-size:85%;width:100%;table-layout:auto}
td,th{border:1px solid #ccc;padding:.2em .4em;vertical-align:top;overflow-wrap:anywhere}
td{max-width:28em}table.summary td:last-child,table.artefacts td:nth-last-child(2){min-width:18em}
th{background:#eee;position:sticky;top:0}tr.good td{background:#e6f4e6}tr.mixed td{background:#f4f4dc}
tr.bad td{background:#f8e0e0}tr.not-run td{color:#888}tr.untested td{background:#f0f0f0;color:#555}"""


def _page_profile(reports: Path, notebook: str) -> str:
    """The profile of the run published at the top of `reports` (its provenance record), or ''."""
    try:
        return json.loads((reports / "provenance" / f"{notebook}.json").read_text()).get("profile", "")
    except (OSError, ValueError):
        return ""


def build_index(reports: Path) -> Path:
    """<reports>/index.html: the claims table, the artefacts, the summary table, the latest runs and a link to
    every notebook page."""
    reports = Path(reports)
    pages = render_notebooks(reports)
    summary = pd.read_csv(reports / "summary.csv") if (reports / "summary.csv").exists() else \
        report.build_summary(reports)
    runs = latest_runs(reports)
    every = all_runs(reports)
    every = every[every.params == ""]  # the notebooks' own runs; variants are listed apart
    last = every.drop_duplicates("notebook", keep="last").set_index("notebook").status if len(every) else {}
    items, variants = [], []
    notes = every.drop_duplicates("notebook", keep="last").set_index("notebook").note if len(every) else {}
    for v in variant_table(reports).itertuples():  # their own folders, results and code state: never the rows above
        folder = f"variants/{v.variant}"
        page = reports / folder / f"{v.notebook}.html"
        link = f'<a href="{html.escape(folder)}/{html.escape(page.name)}">{html.escape(v.variant)}</a>' \
            if page in pages else html.escape(v.variant)
        code = f"code {v.code}"
        rows = f', <a href="{html.escape(folder)}/results.csv">results.csv</a>' \
            if (reports / folder / "results.csv").exists() else ", no result rows"
        variants.append(f'<li>{link} (<a href="{html.escape(folder)}/executed/{html.escape(v.notebook)}.ipynb">ipynb</a>, '
                        f'<a href="{html.escape(folder)}/SUMMARY.md">its summary</a>{rows}): notebook '
                        f'{html.escape(v.notebook)}, {html.escape(v.profile)} profile, <code>{html.escape(v.params)}</code>; '
                        + (f"<strong>{html.escape(code)}</strong>" if v.code != "current" else html.escape(code))
                        + "</li>")
    for page in pages:
        if page.parent != reports / "html":  # a variant's, listed above; a lesser profile's, beside its notebook
            continue
        state = last.get(page.stem, "ok")
        why = f": {notes.get(page.stem, '')}" if state == "skipped" and notes.get(page.stem, "") else ""
        mark = f" <strong>(last run {html.escape(state)}{html.escape(why)}; this page is the last complete run)</strong>" \
            if state != "ok" else ""
        profile = _page_profile(reports, page.stem)
        also = [f'<a href="{p}/{html.escape(page.name)}">its {p} run</a>' for p in report.PROFILE_RANK
                if p != "smoke" and reports / p / page.name in pages]
        items.append(f'<li><a href="html/{html.escape(page.name)}">{html.escape(page.stem)}</a> '
                     f'(<a href="executed/{html.escape(page.stem)}.ipynb">ipynb</a>'
                     + (f", {html.escape(profile)} profile" if profile else "") + (", " + ", ".join(also) if also else "")
                     + f"){mark}</li>")
    for nb, state in (last.items() if len(last) else []):  # never completed here: listed, no page
        if state != "ok" and nb not in {p.stem for p in pages}:
            why = notes.get(nb, "") if state == "skipped" else "see failed/"
            items.append(f"<li>{html.escape(nb)} <strong>(last run {html.escape(state)}; no complete run yet: "
                         f"{html.escape(why)})</strong></li>")
    if variants:
        items.append("<li>variants, runs with other parameters (<code>--param</code>), each with its own results, "
                     "provenance and summary (none of their rows is in the tables above):<ul>"
                     + "".join(variants) + "</ul></li>")
    body = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>RoMAE compendium: reports</title>
<style>{STYLE}</style></head><body>
<h1>RoMAE compendium: the paper's numbers and ours</h1>
<p>Generated by <code>python -m romae.runner.reproduce</code>; the same table as
<a href="SUMMARY.md">SUMMARY.md</a> (<a href="summary.csv">summary.csv</a>).
<em>smoke</em> rows are seconds-long CI runs, not reproductions.</p>
<h2>The paper's claims</h2>
{frontpage.claims_html_intro()}
{_html_table(frontpage.claims_view(summary, reports), "claims", key="verdict")}
<p>{html.escape(frontpage.coverage_text(frontpage.coverage(summary, reports)).replace("**", ""))}</p>
<h2>Paper artefacts</h2>
<p>One row per table and figure of the paper: the verdicts of its rows at their best profile, after the gates
(green: every judged row at or better than the paper, or the claim holds; red: one worse, or a claim that does
not hold; yellow: judged rows beside rows not tested; grey: not tested or not comparable, or not run yet). The qualifiers in brackets come from each row's scale fields (steps, seeds, data, resolution,
device, positions: the <code>scale</code> column, ours / the paper's): <em>reduced</em> (not at the paper's
scale), <em>stand-in</em> (not the paper's data), <em>other device</em> (a speed not comparable),
<em>positions rescaled</em>. <em>code</em>: <strong>current</strong> when every file the run imported (its
notebook and the <code>romae</code> modules, recorded by hash in <code>provenance/</code>) is unchanged
since, else <strong>stale</strong>, naming the files changed.</p>
{_html_table(report.artefact_view(summary, reports), "artefacts")}
<h2>Every row</h2>
{_html_table(summary, "summary")}
<h2>Notebooks</h2>
<ul>
{chr(10).join(items) or "<li>none executed yet</li>"}
</ul>
<h2>Runs</h2>
<p>Latest run of each notebook per profile (full log: <a href="runs.csv">runs.csv</a>).</p>
{_html_table(runs, "runs")}
</body></html>
"""
    return report.write_atomic(reports / "index.html", redactor(reports)(body))


# ---------------------------------------------------------------- command line

_INTERRUPTED: list[int] = []  # signals received: a run is stopping


def _interrupt(signum, frame):
    """SIGINT / SIGTERM: stop the notebook's kernel, then raise KeyboardInterrupt. nbclient may swallow the
    exception if it lands between its polls (a run then waited for its cell to finish); with the kernel gone
    it stops within about a second anyway (it polls the kernel), and run_notebook reports the interrupt."""
    _INTERRUPTED.append(signum)
    import psutil  # a requirement of accelerate and IPython

    for child in psutil.Process().children(recursive=True):  # the kernel (in its own session) and its children
        try:
            child.terminate()
        except psutil.Error:
            pass
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def _restored_env(*keys: str):
    """Whatever the body sets of these environment variables is undone on leaving it (a variable that was
    absent is removed again)."""
    saved = {k: os.environ.get(k) for k in keys}
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main(argv: list[str] | None = None) -> int:
    # the runtime was this run's (tests call main in one process): the environment is put back
    with _restored_env(*runtime.ENV, trainings.ENV):
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m romae.runner.reproduce", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="quick", help=f"one of {', '.join(PROFILES)} (default quick)")
    parser.add_argument("--only", default="all", help="comma-separated notebook numbers, e.g. 00,03")
    parser.add_argument("--param", action="append", metavar="NAME=VALUE",
                        help="a notebook parameter (repeatable), e.g. datasets=JapaneseVowels,Epilepsy; set in every "
                             "selected notebook that declares it")
    parser.add_argument("--download", action="store_true",
                        help="first fetch the data the selected notebooks need (needs internet; romae.data.catalog)")
    parser.add_argument("--mirror", default=None, help="with --download: fetch from a mirror of the official files "
                        "(<mirror>/<host>/<path>)")
    parser.add_argument("--reports", default=None,
                        help="reports folder (default: the ROMAE_REPORTS setting if set, else <repo>/reports)")
    parser.add_argument("--notebooks", default=str(NOTEBOOKS), help="notebooks folder (default <repo>/notebooks)")
    parser.add_argument("--timeout", type=float, default=None, help="per-cell time limit in seconds")
    parser.add_argument("--device", choices=runtime.DEVICES, default=None,
                        help="train on this device (default: an accelerator if there is one; the paper profile "
                             "refuses to start without one unless --device cpu)")
    parser.add_argument("--max-steps", type=int, default=None, metavar="N",
                        help="a dry run: every training stops after N optimiser steps, on micro-batches capped on "
                             "the CPU; nothing is cached, reports go to <reports>/dry-run/<profile>/")
    parser.add_argument("--precision", choices=runtime.PRECISIONS, default=None,
                        help="tf32 | bf16: a named deviation from the profile's FP32, said in every row")
    parser.add_argument("--gpu-memory", type=float, default=None, metavar="GB",
                        help="memory per device the plan fits micro-batches into (default: the device's own)")
    parser.add_argument("--allow-skips", action="store_true",
                        help="the paper profile exits 0 even when a notebook was skipped for missing data (by "
                             "default such a run is incomplete and exits 3)")
    args = parser.parse_args(argv)
    _INTERRUPTED.clear()
    try:
        profile = check_profile(args.profile)
        notebooks = select_notebooks(Path(args.notebooks), args.only)
        params = parse_params(args.param)
        declared = {nb.name: notebook_parameters(nb) for nb in notebooks}
        unknown = [k for k in params if not any(k in d for d in declared.values())]
        if unknown:
            raise ValueError(f"--param {', '.join(unknown)}: no selected notebook has such a parameter (theirs: "
                             + "; ".join(f"{n}: {', '.join(d)}" for n, d in declared.items()) + ")")
        for nb in notebooks:  # convert now: a bad value is a usage error, before anything runs
            resolve_params(nb, profile, params)
        given = dict(device=args.device, max_steps=args.max_steps, precision=args.precision,
                     gpu_memory_gb=args.gpu_memory)  # over the ROMAE_* settings of the environment, if any
        rt = dataclasses.replace(runtime.current(), **{k: v for k, v in given.items() if v is not None})
    except ValueError as e:
        parser.error(str(e))
    try:  # before anything runs: the paper profile on a machine without an accelerator is a mistake, unless asked
        os.environ.update(rt.env())  # the kernels inherit it: every fit in them honours device, precision, dry run
        runtime.require_accelerator(profile, f"`make reproduce PROFILE={profile}`")
    except runtime.NoAccelerator as e:
        print(f"== STOPPED before any training: {e}", file=sys.stderr, flush=True)
        return 2
    reports = report.reports_path(args.reports).resolve()
    if rt.dry_run and not args.reports:  # a dry run's numbers are not results: their own git-ignored tree
        reports = reports / "dry-run" / profile
    elif profile == "smoke" and not args.reports:  # seconds-long CI runs never touch the front page
        reports = reports / "smoke"
    reports.mkdir(parents=True, exist_ok=True)
    clean_stale_staging(reports)
    # a paper run keeps every finished training in <reports>/trainings/ (romae.compendium.trainings): committed, a later
    # piece of the run, on a fresh clone, trains only what is missing; other profiles keep nothing there
    if profile == "paper" and not rt.dry_run:
        os.environ[trainings.ENV] = str(reports / "trainings")
    else:
        os.environ.pop(trainings.ENV, None)
    device = report.device_label(rt.device)
    print(f"== reproduce: {len(notebooks)} notebook(s), profile {profile}"
          + (f", DRY RUN ({rt.max_steps} optimiser steps per training)" if rt.dry_run else "")
          + f", {device}, {runtime.stack_label()} -> {reports}; data root {files.describe_root()}", flush=True)
    if args.download:
        for nb in notebooks:
            effective, _ = resolve_params(nb, profile, params)
            try:
                needs = notebook_needs(nb, effective)
                with files.mirror(args.mirror):
                    left = catalog.fetch_needs(needs, effective.get("data_root") or None)
            except Exception as e:  # a failed download: that notebook will be skipped (or fail), the others run
                print(f"== {nb.name}: {_first_line(e)}", flush=True)
                continue
            for need in left:
                print(f"== {nb.name}: cannot fetch: {need.message(effective.get('data_root') or None)}", flush=True)
    failed, skipped, interrupted = [], [], False
    # a run with other parameters than a notebook's own publishes, and logs, into its variant folder alone
    variants = {nb.name: variant_of(nb, profile, params) for nb in notebooks}
    # Ctrl-C and SIGTERM (e.g. a CI time-out): stop the kernel, log, rebuild the pages, stop
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for i, nb in enumerate(notebooks, 1):
            home = reports / "variants" / variants[nb.name] if variants[nb.name] else reports
            print(f"[{i}/{len(notebooks)}] {nb.name} ..." + last_took(home, nb.stem, profile,
                                                                     resolve_params(nb, profile, params)[1]), flush=True)
            start = time.perf_counter()
            try:
                row = run_notebook(nb, profile, reports, args.timeout, device, params)
            except KeyboardInterrupt:
                row = dict(notebook=nb.stem, profile=profile, device=device, commit=git_commit(), **runtime.stack(),
                           seconds=round(time.perf_counter() - start, 1), status="interrupted",
                           error="interrupted (SIGINT/SIGTERM); the previous artefacts are unchanged")
                interrupted = True
            append_run(row, home)
            kept = row.get("where") and Path(row["where"]) != reports and row["status"] == "ok"
            print(f"[{i}/{len(notebooks)}] {nb.stem}: {row['status']} in {row['seconds']:.1f} s"
                  + (f": {row['error']}" if row["error"] else "")
                  + (f": {row['note']}" if row.get("note") else "")
                  + (f" (published apart in {row['where']})" if kept else ""), flush=True)
            if row["status"] == "failed":
                failed.append(nb.name)
            elif row["status"] == "skipped":
                skipped.append(nb.name)
            if interrupted:
                break
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        only_variants = all(variants.values())
        index = build_reports(reports, list(variants.values()) if only_variants else None)
    if only_variants:
        print(f"== variant: {index} (its own SUMMARY.md, page and runs.csv; the main summary and index list it "
              "when they are next built: no tracked file outside the folder changed)", flush=True)
    else:
        print(f"== summary: {reports / 'SUMMARY.md'}; pages: {index}", flush=True)
    if skipped:
        print(f"== SKIPPED, their data is missing: {', '.join(skipped)} (each row of {reports / 'runs.csv'} names "
              f"the command that fetches it; `make reproduce DOWNLOAD=1` fetches what the selected notebooks need)",
              flush=True)
    incomplete = profile == "paper" and bool(skipped)
    if incomplete:
        print(f"== PAPER PROFILE INCOMPLETE: {incomplete_text(skipped)}; the paper's tables these notebooks make "
              "were not regenerated" + (" (a dry run: exit 0)" if rt.dry_run else
                                        " (--allow-skips / ALLOW_SKIPS=1: exit 0)" if args.allow_skips else ""),
              flush=True)
    if interrupted:
        print("== INTERRUPTED: the reports show the last complete runs", flush=True)
        return 130
    if failed:
        print(f"== FAILED: {', '.join(failed)} (executed copies with the error are in {reports / 'failed' / profile};"
              " the last good artefacts are unchanged)", flush=True)
        return 1
    if incomplete and not (rt.dry_run or args.allow_skips):
        return INCOMPLETE
    return 0


INCOMPLETE = 3  # the exit code of a paper run that skipped a notebook for missing data


def incomplete_text(skipped: list[str]) -> str:
    """'notebooks 10, 11, 13 skipped (data missing)' from their file names or stems."""
    numbers = [Path(n).stem.split("_")[0] for n in skipped]
    return f"notebook{'s' if len(numbers) > 1 else ''} {', '.join(numbers)} skipped (data missing)"


if __name__ == "__main__":
    sys.exit(main())
