"""The papermill runner behind `make reproduce`: run the notebooks, log the runs, build the reports.

    python -m romae.runner.reproduce --profile quick                 # every notebooks/NN_*.ipynb, in order
    python -m romae.runner.reproduce --profile smoke --only 00,03    # only the notebooks numbered 00 and 03
    python -m romae.runner.reproduce --only 12 --param datasets=JapaneseVowels,Epilepsy   # any notebook parameter
    python -m romae.runner.reproduce --download                      # fetch the data the notebooks need first
    python -m romae.runner.reproduce --only 12 --timeout 7200        # stop a notebook after 2 h (0: no limit)

`--only` must name notebooks: an empty or blank value (`--only ''`, `make reproduce ONLY=`) or a number no
notebook has is refused with the numbers there are, before anything runs (exit 2).

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
  error, goes to <reports>/failed/<profile>/); an interrupted run (Ctrl-C) is logged "interrupted", one stopped
  cleanly ("paused": a time budget, SIGTERM, SIGUSR1; `romae.runner.pausing`) likewise publishes nothing, and the
  summary and index are rebuilt from what is on disk; a killed one leaves only its staging folder.
* The terminal tells the story of each notebook: how long its last successful run of this profile took, the
  lines its kernel says (`romae.compendium.terminal`: its plan and estimates, each training's start, end and a line a
  minute, with trainings done / expected and the time left) and, at the end, its result rows.
* Every notebook runs under a time limit, so a run ends even when a notebook hangs: `--timeout SECONDS`
  (`make reproduce TIMEOUT=...`) for each notebook, 0 for none; by default LIMIT_FACTOR (4) times its
  estimate, at least an hour (`time_limit`: its longest successful run of the profile and parameters in
  runs.csv and, for the paper profile, the plan's hours; an hour when there is neither, e.g. smoke). A
  notebook still running at its limit has its kernel stopped; the terminal says "notebook NN_name: stopped
  after 1 h 00 min (the time limit; ...)" and it is a failing notebook like any other: logged "failed" with
  that error, its executed copy in <reports>/failed/<profile>/, its published artefacts untouched, the others
  still run, exit code 1.
* A run never replaces an artefact of a better profile (paper > quick > smoke): a `quick` run of a
  notebook that has a successful `paper` run publishes to <reports>/quick/ instead.
* Nothing published names this machine's paths (`redactor`): the data root is written `$ROMAE_DATA`, the
  clone's files relative to it, the staging folder as the folder it was published to, other absolute paths
  as "[local path]/<name>"; progress bars and tqdm's widget warning are dropped from the executed copies.

Each run appends a row to <reports>/runs.csv (notebook, profile, device, seconds, commit — with
"+dirty" when romae/ or notebooks/ had uncommitted changes —, status ok | failed | interrupted | paused |
skipped, error, params, note: what data it lacked and how to fetch it). A failing notebook does not stop the
others; the exit code is non-zero if any failed (a skipped one is not a failure, except in the paper profile: a
paper run that skipped a notebook is incomplete and exits 3 unless --allow-skips; a paused run exits 75). Then:

    <reports>/summary.csv, SUMMARY.md   romae.runner.summary.build_summary + a "Runs" section (latest per
                                        notebook and profile) + a "Variants" section
    <reports>/variants/<v>/summary.csv, SUMMARY.md   each variant's own, from its own results.csv
    <reports>/html/<name>.html          each executed notebook as HTML (figures embedded)
    <reports>/html/mathjax/             a minimal MathJax 2.7 (`jupyter-server-mathjax`): equations offline
    <reports>/index.html                the front page: summary table, runs, links to every notebook
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from ..compendium import report, terminal, trainings, travel
from ..compendium.report import show_params, variant_slug
from .. import runtime
from ..config import PROFILES, check_profile
from ..data import catalog, files
# the run's other jobs, in their own modules (their names stay importable from here)
from . import pausing
from .pausing import _time_limit
from .notebooks import (KERNEL_QUIET, SHOWN_RESULTS, _echoed, convert, data_check,  # noqa: F401
                        notebook_needs, notebook_parameters, parse_params, resolve_params, result_lines,
                        select_notebooks, variant_of, write_provenance)
from .pages import (MATHJAX_URL, VARIANT_COLUMNS, add_runs_section, add_trainings_section,  # noqa: F401
                    build_index, build_reports, build_variant, build_variants, incomplete_text, paper_skipped,
                    render_notebooks, render_page, status_class, variant_table, vendor_mathjax)
from .staging import (LOCAL, RUN_COLUMNS, TEXT_SUFFIXES, _BAR, _BAR_NOISE, _first_line, all_runs,  # noqa: F401
                      append_run, best_profile, clean_stale_staging, destination, drop_progress_bars, latest_runs,
                      publish, redact_file, redact_tree, redactor, set_aside, strip_timestamps)

ROOT = report.ROOT
NOTEBOOKS = ROOT / "notebooks"


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


def run_notebook(source: Path, profile: str, reports: Path, timeout: float | None = None,
                 device: str = "", params: dict | None = None) -> dict:
    """Execute one notebook with papermill in a staging folder and publish it on success; return its
    runs.csv row. A notebook whose required data is missing is not run (status "skipped"). `timeout`: the
    notebook's time limit in seconds (None: none): at it, its kernel is stopped and it fails like a failing
    notebook, with the error "stopped after <limit> (the time limit; ...)". `params`: parameter overrides
    (already converted). KeyboardInterrupt (Ctrl-C, SIGTERM) propagates after the staging folder is removed."""
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
    # TQDM_DISABLE quiets the bars that leave `disable` to tqdm (fit's does not: strip_timestamps drops bars from the executed copy)
    # the kernel's lines for the terminal (romae.compendium.terminal.say: plan, trainings, results) are printed as they come
    fd, echo = tempfile.mkstemp(prefix=f"romae-terminal-{source.stem}-", suffix=".log")  # never published
    os.close(fd)
    echo = Path(echo)
    with _restored_env("TQDM_DISABLE", terminal.ECHO, travel.NOTEBOOK_ENV), _echoed(echo), \
            _time_limit(timeout, source.stem, stopped_text) as hit:
        os.environ.update({"TQDM_DISABLE": "1", terminal.ECHO: str(echo), travel.NOTEBOOK_ENV: source.stem})
        try:
            # KERNEL_QUIET: ipykernel's warning that its local TCP transport is unencrypted, once per notebook;
            # no limit per cell (the notebook's own, _time_limit, bounds every cell)
            papermill.execute_notebook(str(source), str(out), parameters=dict(overrides, profile=profile,
                                       reports_dir=str(stage)), kernel_name="python3", cwd=str(ROOT),
                                       progress_bar=False, extra_arguments=KERNEL_QUIET)
        except KeyboardInterrupt:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        except Exception as e:  # a failing notebook is logged; the others still run
            if _INTERRUPTED or pausing.STOPPED:  # the interrupt stopped its kernel, and papermill reported that instead
                shutil.rmtree(stage, ignore_errors=True)
                raise KeyboardInterrupt(f"signal {(_INTERRUPTED or pausing.STOPPED)[-1]}") from None
            status, error = "failed", _first_line(e)
            if getattr(e, "ename", "") == "TrainingPaused":  # stopped cleanly (a time budget, SIGTERM): not a failure
                status, error = "paused", str(getattr(e, "evalue", e))
            elif hit:  # its time limit stopped the kernel: that, not the dead kernel, is what went wrong
                error = stopped_text(hit[0])
            elif getattr(e, "ename", "") == "DataMissing" and not dry:  # data the needs check did not foresee: a skip
                status, error, row["note"] = "skipped", "", str(getattr(e, "evalue", e))
    if _INTERRUPTED or pausing.STOPPED:  # an interrupt whose exception was swallowed: not a finished run
        shutil.rmtree(stage, ignore_errors=True)
        raise KeyboardInterrupt(f"signal {(_INTERRUPTED or pausing.STOPPED)[-1]}")
    seconds = time.perf_counter() - start
    if status == "ok":  # which code made these artefacts: the freshness check reads it (provenance.freshness)
        write_provenance(stage, source, profile, row["commit"])
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


def last_took(reports: Path, notebook: str, profile: str, params: dict) -> str:
    """' (its last successful <profile> run took 12 min on <device>)', or '' if there was none. `params`: the
    notebook's overrides (resolve_params), as runs.csv names them."""
    mine = _ok_runs(reports, notebook, profile, params)
    if mine is None or mine.empty:
        return ""
    last = mine.iloc[-1]
    return f" (its last successful {profile} run took {terminal.duration(float(last.seconds))} on {last.device})"


# ---------------------------------------------------------------- time limits

LIMIT_FACTOR = 4  # a notebook's default time limit: this many times its estimate ...
MIN_LIMIT = 3600.0  # ... and never under an hour; a notebook without an estimate gets an hour
PLAN_JSON = ROOT / "reports" / "plan" / "paper_h100.json"  # the committed plan (`make plan`)
LIMIT_HINT = "TIMEOUT=<seconds> or --timeout to change, 0 for none"


def limit_text(seconds: float) -> str:
    """A time limit as the terminal says it: '1 h 00 min', '12 min 05 s', '3 s'."""
    whole = int(round(seconds))
    if whole >= 3600:
        return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
    if whole >= 60:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{seconds:g} s"


def stopped_text(seconds: float) -> str:
    """The error of a notebook its time limit stopped (runs.csv, the terminal)."""
    return f"stopped after {limit_text(seconds)} (the time limit; {LIMIT_HINT})"


def _ok_runs(reports: Path, notebook: str, profile: str, params: dict):
    """The successful runs of `notebook` in `profile` with these parameter overrides that <reports>/runs.csv logs
    (a DataFrame, possibly empty), or None when there is no readable log."""
    try:
        runs = all_runs(reports)
    except Exception:  # an unreadable log: no estimate, not a failure
        return None
    if runs.empty:
        return None
    return runs[(runs.notebook == notebook) & (runs.profile == profile) & (runs.status == "ok")
                & (runs.params == "; ".join(show_params(params)))]


def longest_run(reports: Path, notebook: str, profile: str, params: dict) -> float | None:
    """Seconds of the longest successful run of `notebook` in `profile` with these parameter overrides in
    <reports>/runs.csv, or None. The longest, not the last: a run whose trainings were all cached or committed
    takes seconds, the one that trained them hours."""
    mine = _ok_runs(reports, notebook, profile, params)
    if mine is None or mine.empty:
        return None
    longest = float(pd.to_numeric(mine.seconds, errors="coerce").max())
    return longest if longest > 0 else None


def planned_seconds(notebook: str, rt: runtime.Runtime, plan_json: Path | None = None) -> tuple[float, str] | None:
    """(seconds, on what) the plan gives notebook `notebook` (its number, "12") in the paper profile, or None (a
    notebook that trains nothing, a training that fits nowhere, no plan). On an accelerator: the committed plan for
    one H100 (`make plan`, reports/plan/paper_h100.json) at the run's precision, the longer of its CUDA-graphed and
    eager-step hours (a training whose capture fails runs eager steps); on the CPU (--device cpu):
    `romae.compendium.plan`'s hours for the reference CPU in FP32, worked out now (seconds)."""
    if rt.device == "cpu":
        try:
            from ..compendium import plan
            from . import experiments

            experiments.load()
            hours = plan.plan("cpu", 1, None, only=[notebook], checked=False,
                              precisions=("fp32",))["totals"].get(notebook, {}).get("fp32")
        except Exception:  # the plan is a courtesy here: no estimate, not a failure
            return None
        return None if not hours else (hours * 3600, "the plan's for the reference CPU")
    import json

    precision = rt.precision or "fp32"
    try:
        rows = [r for r in json.loads(Path(plan_json or PLAN_JSON).read_text())["rows"] if r["notebook"] == notebook]
        hours = []
        for key in ("hours", "eager_hours"):
            each = [r["precision"][precision].get(key) for r in rows]
            if each and all(h is not None for h in each):
                hours.append(sum(each))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not hours or not max(hours):
        return None
    return max(hours) * 3600, f"the plan's for one H100 in {precision.upper()}"


def time_limit(notebook: Path, profile: str, reports: Path, params: dict, rt: runtime.Runtime,
               given: float | None = None, plan_json: Path | None = None) -> tuple[float | None, str]:
    """(the notebook's time limit in seconds, None for none; how it was set, for the terminal). `given`: --timeout
    (TIMEOUT=), 0 for none. Without it, LIMIT_FACTOR times the notebook's estimate and at least MIN_LIMIT; its estimate
    is the longer of its longest successful run of this profile with these parameter overrides (`params`) in
    <reports>/runs.csv and, in the paper profile unless a dry run, the plan's (`planned_seconds`); MIN_LIMIT when it
    has neither (a smoke run, a variant never run, a notebook without a plan)."""
    if given is not None:
        return (None, "no time limit (--timeout 0)") if given == 0 or given == float("inf") else \
            (float(given), f"time limit {limit_text(given)} (--timeout {given:g})")
    estimates = []
    measured = longest_run(reports, notebook.stem, profile, params)
    if measured:
        estimates.append((measured, f"its longest successful {profile} run"))
    if profile == "paper" and not rt.dry_run:
        planned = planned_seconds(notebook.name[:2], rt, plan_json)
        if planned:
            estimates.append(planned)
    if not estimates:
        return MIN_LIMIT, f"time limit {limit_text(MIN_LIMIT)} (no estimate for it: the minimum)"
    seconds, what = max(estimates)
    limit = max(LIMIT_FACTOR * seconds, MIN_LIMIT)
    return limit, (f"time limit {limit_text(limit)} ({LIMIT_FACTOR} x {what}, {terminal.duration(seconds)}"
                   + (f"; at least {limit_text(MIN_LIMIT)}" if limit == MIN_LIMIT else "") + ")")


# ---------------------------------------------------------------- command line

_INTERRUPTED: list[int] = []  # signals received: a run is stopping


def _interrupt(signum, frame):
    """SIGINT: stop the notebook's kernel, then raise KeyboardInterrupt. nbclient may swallow the exception between
    its polls; with the kernel gone it stops within about a second anyway, and run_notebook reports the interrupt."""
    _INTERRUPTED.append(signum)
    pausing.stop_children()
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
    with _restored_env(*runtime.ENV, trainings.ENV, "ROMAE_CUDA_GRAPHS"):
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m romae.runner.reproduce", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="quick", help=f"one of {', '.join(PROFILES)} (default quick)")
    parser.add_argument("--only", default="all", help="comma-separated notebook numbers, e.g. 00,03, or all (the "
                        "default); an empty value is refused")
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
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help=f"time limit per notebook: one still running after it has its kernel stopped and fails "
                             f"(its published artefacts stay; the others still run); 0: no limit. Default: "
                             f"{LIMIT_FACTOR} x its estimate (its longest successful run of the profile in runs.csv; "
                             f"in the paper profile also the plan's hours), at least {limit_text(MIN_LIMIT)}; "
                             f"{limit_text(MIN_LIMIT)} without an estimate")
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
    parser.add_argument("--time-budget", type=float, default=None, metavar="SECONDS", help="stop cleanly before "
                        "this many seconds (romae.runner.pausing; SIGTERM and SIGUSR1 do the same): exit 75")
    parser.add_argument("--cuda-graphs", choices=("0", "1"), default=None,
                        help="0: every training steps eagerly on a GPU (no CUDA graphs: to continue after a failed "
                             "capture, or to rule graphs out), recorded in each training's facts; 1: graphs where "
                             "they apply (the default)")
    parser.add_argument("--allow-skips", action="store_true",
                        help="the paper profile exits 0 even when a notebook was skipped for missing data (by "
                             "default such a run is incomplete and exits 3)")
    args = parser.parse_args(argv)
    _INTERRUPTED.clear()
    pausing.PAUSING.clear()
    pausing.STOPPED.clear()
    if args.time_budget is not None and not args.time_budget > 0:
        parser.error(f"--time-budget {args.time_budget:g}: give the seconds the run may take (> 0)")
    if args.timeout is not None and not args.timeout >= 0:
        parser.error(f"--timeout {args.timeout:g}: give the seconds a notebook may run (> 0), or 0 for no limit")
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
        began = time.time()
        # the kernels' trainings stop by the deadline, leaving time to keep their checkpoints and end the run
        stop_file = Path(tempfile.gettempdir()) / f"romae-stop-{os.getpid()}"
        stop_file.unlink(missing_ok=True)
        rt = dataclasses.replace(rt, stop_file=str(stop_file), deadline=None if args.time_budget is None else
                                 began + args.time_budget - pausing.reserve(args.time_budget))
    except ValueError as e:
        parser.error(str(e))
    try:  # before anything runs: the paper profile on a machine without an accelerator is a mistake, unless asked
        os.environ.update(rt.env())  # the kernels inherit it: every fit in them honours device, precision, dry run
        if args.cuda_graphs is not None:  # ... and CUDA graphs on or off (romae.compendium.settings)
            os.environ["ROMAE_CUDA_GRAPHS"] = args.cuda_graphs
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
    # piece of the run, on a fresh clone, trains only what is missing; a quick run keeps its own in
    # <reports>/trainings/quick/ (results; weights only when small), so a fresh clone re-publishes it without
    # retraining; smoke and dry runs keep nothing
    if profile in ("paper", "quick") and not rt.dry_run:
        os.environ[trainings.ENV] = str(reports / "trainings" / ("quick" if profile == "quick" else ""))
    else:
        os.environ.pop(trainings.ENV, None)
    device = report.device_label(rt.device)
    print(f"== reproduce: {len(notebooks)} notebook(s), profile {profile}"
          + (f", DRY RUN ({rt.max_steps} optimiser steps per training)" if rt.dry_run else "")
          + f", {device}, {runtime.stack_label()}"
          + (", CUDA graphs off (CUDA_GRAPHS=0)" if os.environ.get("ROMAE_CUDA_GRAPHS", "").strip() == "0" else "")
          + f" -> {reports}; data root {files.describe_root()}", flush=True)
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
    # Ctrl-C: stop the kernel, log, rebuild the pages, stop; SIGTERM / SIGUSR1 (a cluster's warning before its
    # limit, a CI time-out): stop cleanly, as a time budget does (`pausing`)
    previous = {sig: signal.signal(sig, handler) for sig, handler in ((signal.SIGINT, _interrupt),
                (signal.SIGTERM, pausing.on_signal), (signal.SIGUSR1, pausing.on_signal))}
    paused: list[str] = []  # why the run stopped cleanly, what is in progress
    try:
        for i, nb in enumerate(notebooks, 1):
            home = reports / "variants" / variants[nb.name] if variants[nb.name] else reports
            overrides = resolve_params(nb, profile, params)[1]
            if pausing.PAUSING or (rt.deadline is not None and time.time() >= rt.deadline):
                why = pausing.PAUSING[-1] if pausing.PAUSING else "time budget"
                paused.append(f"{nb.name} and those after it not started ({why})")
                break
            limit, why = time_limit(nb, profile, home, overrides, rt, args.timeout)
            if rt.deadline is not None:  # past the budget and its grace, whatever still runs is stopped
                left = rt.deadline + pausing.reserve(args.time_budget) + pausing.GRACE - time.time()
                limit, why = (left, f"the time budget stops it within {limit_text(left)}") \
                    if limit is None or left < limit else (limit, why)
            took = last_took(home, nb.stem, profile, overrides)
            print(f"[{i}/{len(notebooks)}] {nb.name} ..." + (f"{took}; {why}" if took else f" {why}"), flush=True)
            start = time.perf_counter()
            try:
                row = run_notebook(nb, profile, reports, limit, device, params)
            except KeyboardInterrupt:
                row = dict(notebook=nb.stem, profile=profile, device=device, commit=git_commit(), **runtime.stack(),
                           seconds=round(time.perf_counter() - start, 1), status="interrupted",
                           error="interrupted (SIGINT); the previous artefacts are unchanged")
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
            elif row["status"] == "paused":
                paused.append(f"{nb.name}: {row['error']}")
            if interrupted or row["status"] == "paused":
                break
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stop_file.unlink(missing_ok=True)
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
    if paused:
        record = trainings.open_folder()
        kept = (f"the trainings in progress are kept in {record / travel.FOLDER} (`python -m romae.trainings` lists "
                "them): commit that folder where the next piece runs on another clone" if record is not None else
                f"a {profile} run keeps no record: the checkpoints stay in this machine's runs/")
        print(f"== PAUSED: {'; '.join(paused)}. Nothing of it was published; {kept}; then continue with: "
              f"{pausing.continue_command(args)}", flush=True)
        return pausing.PAUSED
    if failed:
        print(f"== FAILED: {', '.join(failed)} (executed copies with the error are in {reports / 'failed' / profile};"
              " the last good artefacts are unchanged)", flush=True)
        return 1
    if incomplete and not (rt.dry_run or args.allow_skips):
        return INCOMPLETE
    return 0


INCOMPLETE = 3  # the exit code of a paper run that skipped a notebook for missing data


if __name__ == "__main__":
    sys.exit(main())
