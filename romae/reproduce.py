"""The papermill runner behind `make reproduce`: run the notebooks, log the runs, build the reports.

    python -m romae.reproduce --profile quick                 # every notebooks/NN_*.ipynb, in order
    python -m romae.reproduce --profile smoke --only 00,03    # only the notebooks numbered 00 and 03

For each notebook: papermill runs it (kernel `python3`, cwd = the repository root) with the parameters
`profile` and `reports_dir` (the absolute reports folder) and writes the executed copy to
<reports>/executed/<name>.ipynb; the source notebook is never executed in place. Each run appends a
row to <reports>/runs.csv (notebook, profile, device, seconds, commit, status, error). A failing
notebook does not stop the others; the exit code is non-zero if any failed. Then:

    <reports>/summary.csv, SUMMARY.md   romae.report.build_summary + a "Runs" section (latest per
                                        notebook and profile)
    <reports>/html/<name>.html          each executed notebook as HTML (figures embedded)
    <reports>/html/mathjax/             a minimal MathJax 2.7 copied from the `jupyter-server-mathjax`
                                        package, so equations render offline
    <reports>/index.html                the front page: summary table, runs, links to every notebook
"""

from __future__ import annotations

import argparse
import csv
import html
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pandas as pd

from . import report
from .config import PROFILES, check_profile

ROOT = report.ROOT
NOTEBOOKS = ROOT / "notebooks"
RUN_COLUMNS = ["notebook", "profile", "device", "seconds", "commit", "status", "error"]
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


def git_commit() -> str:
    """Short hash of the checked-out commit, or 'unknown' outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def strip_timestamps(path: Path) -> None:
    """Drop papermill's and nbclient's timings from an executed notebook (outputs stay), so a re-run
    gives a small diff. The run's duration is kept in runs.csv instead."""
    nb = nbformat.read(path, as_version=4)
    meta = nb.metadata.get("papermill", {})
    for key in ("start_time", "end_time", "duration"):
        meta.pop(key, None)
    for key in ("input_path", "output_path"):  # repository-relative where possible
        if meta.get(key) and Path(meta[key]).is_relative_to(ROOT):
            meta[key] = str(Path(meta[key]).relative_to(ROOT))
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)


def _first_line(error: BaseException) -> str:
    ename, evalue = getattr(error, "ename", None), getattr(error, "evalue", None)
    text = f"{ename}: {evalue}" if ename else f"{type(error).__name__}: {error}"
    return (text.strip().splitlines() or [type(error).__name__])[0][:300]


def run_notebook(source: Path, profile: str, reports: Path, timeout: float | None = None,
                 device: str = "") -> dict:
    """Execute one notebook with papermill into <reports>/executed/; return its runs.csv row."""
    import papermill  # slow import: only when running

    out = reports / "executed" / source.name
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    status, error = "ok", ""
    try:
        papermill.execute_notebook(str(source), str(out), parameters=dict(profile=profile,
                                   reports_dir=str(reports)), kernel_name="python3", cwd=str(ROOT),
                                   execution_timeout=timeout, progress_bar=False)
    except Exception as e:  # a failing notebook is logged; the others still run
        status, error = "failed", _first_line(e)
    seconds = time.perf_counter() - start
    if out.exists():
        strip_timestamps(out)
    return dict(notebook=source.stem, profile=profile, device=device, seconds=round(seconds, 1),
                commit=git_commit(), status=status, error=error)


def append_run(row: dict, reports: Path) -> None:
    path = reports / "runs.csv"
    new = not path.exists()
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=RUN_COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow({k: row.get(k, "") for k in RUN_COLUMNS})


def latest_runs(reports: Path) -> pd.DataFrame:
    """The last row of runs.csv for every (notebook, profile), sorted by notebook then profile."""
    path = reports / "runs.csv"
    if not path.exists():
        return pd.DataFrame(columns=RUN_COLUMNS)
    runs = pd.read_csv(path, dtype=str, keep_default_na=False)
    runs = runs.drop_duplicates(["notebook", "profile"], keep="last")
    return runs.sort_values(["notebook", "profile"], kind="stable").reset_index(drop=True)


def add_runs_section(reports: Path) -> None:
    """Append the latest run of every notebook and profile to SUMMARY.md; failures in bold."""
    runs = latest_runs(reports)
    if runs.empty:
        return
    runs["status"] = runs.status.map(lambda s: "**FAILED**" if s != "ok" else s)
    text = ("\n## Runs\n\nLatest run of each notebook per profile (`python -m romae.reproduce`; full log in "
            "`runs.csv`; executed notebooks in `executed/`, as HTML in `index.html`).\n\n")
    path = reports / "SUMMARY.md"
    path.write_text(path.read_text() + text + report._markdown(runs))


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
    from nbconvert import HTMLExporter

    html_dir = reports / "html"
    html_dir.mkdir(parents=True, exist_ok=True)
    vendor_mathjax(html_dir)
    exporter = HTMLExporter(template_name="lab", mathjax_url=MATHJAX_URL, embed_images=True)
    pages = []
    for nb in sorted((reports / "executed").glob("*.ipynb")):
        page = html_dir / f"{nb.stem}.html"
        if force or not page.exists() or page.stat().st_mtime < nb.stat().st_mtime:
            body, _ = exporter.from_filename(str(nb))
            page.write_text(body, encoding="utf-8")
        pages.append(page)
    return pages


def _html_table(df: pd.DataFrame, css: str) -> str:
    """A plain HTML table; floats to 4 significant digits, a row class per `status`."""
    def cell(v):
        return "" if v is None or (isinstance(v, float) and v != v) else (
            f"{v:.4g}" if isinstance(v, float) else str(v))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    rows = []
    for r in df.itertuples(index=False):
        cls = str(getattr(r, "status", "")).replace(" ", "-")
        rows.append(f'<tr class="{html.escape(cls)}">' +
                    "".join(f"<td>{html.escape(cell(v))}</td>" for v in r) + "</tr>")
    return f'<table class="{css}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n' + "\n".join(rows) + \
        "\n</tbody>\n</table>"


STYLE = """body{font-family:system-ui,sans-serif;max-width:80em;margin:2em auto;padding:0 1em}
table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:.2em .5em}
th{background:#eee}tr.matches td{background:#e6f4e6}tr.within-tolerance td{background:#f4f4dc}
tr.differs td,tr.failed td{background:#f8e0e0}tr.not-run td{color:#888}"""


def build_index(reports: Path) -> Path:
    """<reports>/index.html: the summary table, the latest runs and a link to every notebook page."""
    reports = Path(reports)
    pages = render_notebooks(reports)
    summary = pd.read_csv(reports / "summary.csv") if (reports / "summary.csv").exists() else \
        report.build_summary(reports)
    runs = latest_runs(reports)
    failed = set(runs.notebook[runs.status != "ok"])
    items = []
    for page in pages:
        mark = " <strong>(last run failed)</strong>" if page.stem in failed else ""
        items.append(f'<li><a href="html/{html.escape(page.name)}">{html.escape(page.stem)}</a> '
                     f'(<a href="executed/{html.escape(page.stem)}.ipynb">ipynb</a>){mark}</li>')
    body = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>RoMAE compendium: reports</title>
<style>{STYLE}</style></head><body>
<h1>RoMAE compendium: the paper's numbers and ours</h1>
<p>Generated by <code>python -m romae.reproduce</code>; the same table as
<a href="SUMMARY.md">SUMMARY.md</a> (<a href="summary.csv">summary.csv</a>).
<em>smoke</em> rows are seconds-long CI runs, not reproductions.</p>
<h2>Summary</h2>
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
    path = reports / "index.html"
    path.write_text(body, encoding="utf-8")
    return path


# ---------------------------------------------------------------- command line

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m romae.reproduce", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="quick", help=f"one of {', '.join(PROFILES)} (default quick)")
    parser.add_argument("--only", default="all", help="comma-separated notebook numbers, e.g. 00,03")
    parser.add_argument("--reports", default=None,
                        help="reports folder (default: the ROMAE_REPORTS setting if set, else <repo>/reports)")
    parser.add_argument("--notebooks", default=str(NOTEBOOKS), help="notebooks folder (default <repo>/notebooks)")
    parser.add_argument("--timeout", type=float, default=None, help="per-cell time limit in seconds")
    args = parser.parse_args(argv)
    try:
        profile = check_profile(args.profile)
        notebooks = select_notebooks(Path(args.notebooks), args.only)
    except ValueError as e:
        parser.error(str(e))
    reports = report.reports_path(args.reports).resolve()
    reports.mkdir(parents=True, exist_ok=True)
    device = report.device_label()
    print(f"== reproduce: {len(notebooks)} notebook(s), profile {profile}, {device} -> {reports}", flush=True)
    failed = []
    for i, nb in enumerate(notebooks, 1):
        print(f"[{i}/{len(notebooks)}] {nb.name} ...", end=" ", flush=True)
        row = run_notebook(nb, profile, reports, args.timeout, device)
        append_run(row, reports)
        print(f"{row['status']} in {row['seconds']:.1f} s" + (f": {row['error']}" if row["error"] else ""),
              flush=True)
        if row["status"] != "ok":
            failed.append(nb.name)
    report.build_summary(reports)
    add_runs_section(reports)
    index = build_index(reports)
    print(f"== summary: {reports / 'SUMMARY.md'}; pages: {index}", flush=True)
    if failed:
        print(f"== FAILED: {', '.join(failed)} (executed copies with the error are in {reports / 'executed'})",
              flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
