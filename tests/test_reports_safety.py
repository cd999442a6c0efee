"""Reports a reader can trust: no lesser profile overwrites a better one, a failed or interrupted run
leaves the last good artefacts and consistent pages, every paper artefact has a row, statuses say the
direction."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from romae.compendium import report
from romae.runner import reproduce
from romae.runner.summary import artefact_view, build_summary
from romae.compendium.reference import artefacts, paper_values

PARAMETERS = 'profile: str = "smoke"\nreports_dir: str = ""'
ROW = paper_values()[0]


def _stage(folder: Path, profile: str, value: float, figure: bytes) -> Path:
    """A finished run's staging folder: a result row, a figure, a table and an executed copy."""
    (folder / "figures").mkdir(parents=True)
    (folder / "figures" / "fig_x.png").write_bytes(figure)
    report.save_table(pd.DataFrame({"a": [value]}), "table_x", folder)
    (folder / "executed").mkdir()
    (folder / "executed" / "07_x.ipynb").write_text(f"executed {profile}")
    report.record(ROW["experiment"], ROW["setting"], ROW["metric"], value, profile=profile, scale={}, reports_dir=folder)
    return folder


def test_a_lesser_profile_never_replaces_a_better_artefact(tmp_path):
    reports = tmp_path / "reports"
    dest = reproduce.publish(_stage(tmp_path / "s1", "quick", 1.0, b"quick"), reports, "07_x", "quick")
    reproduce.append_run(dict(notebook="07_x", profile="quick", status="ok"), reports)
    assert dest == reports and (reports / "figures" / "fig_x.png").read_bytes() == b"quick"
    # a smoke run afterwards is kept apart; the quick figure, table and executed copy stay
    dest = reproduce.publish(_stage(tmp_path / "s2", "smoke", 2.0, b"smoke"), reports, "07_x", "smoke")
    assert dest == reports / "smoke"
    assert (reports / "figures" / "fig_x.png").read_bytes() == b"quick"
    assert (reports / "smoke" / "figures" / "fig_x.png").read_bytes() == b"smoke"
    assert pd.read_csv(reports / "tables" / "table_x.csv").a.tolist() == [1.0]
    assert (reports / "executed" / "07_x.ipynb").read_text() == "executed quick"
    rows = pd.read_csv(reports / "results.csv")  # both rows kept, each labelled with its profile
    assert sorted(zip(rows.profile, rows.ours)) == [("quick", 1.0), ("smoke", 2.0)]
    # a paper run replaces the quick artefacts
    dest = reproduce.publish(_stage(tmp_path / "s3", "paper", 3.0, b"paper"), reports, "07_x", "paper")
    assert dest == reports and (reports / "figures" / "fig_x.png").read_bytes() == b"paper"


def test_a_failed_run_after_a_good_one_keeps_the_failed_runs_profile_rule(tmp_path):
    """best_profile counts any successful run, not the latest: a later failed paper run still protects
    the paper artefacts from a quick run."""
    reports = tmp_path
    for status in ("ok", "failed"):
        reproduce.append_run(dict(notebook="07_x", profile="paper", status=status), reports)
    assert reproduce.best_profile(reports, "07_x") == "paper"
    assert reproduce.best_profile(reports, "08_y") is None


def test_stale_staging_of_a_killed_run_is_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".staging-07_x-{dead.pid}-abc"
    live = tmp_path / f".staging-07_x-{os.getpid()}-abc"
    stale.mkdir()
    live.mkdir()
    reproduce.clean_stale_staging(tmp_path)
    assert not stale.exists() and live.exists()


def _write(folder: Path, name: str, cells: list[str]) -> None:
    nb = new_notebook(cells=[new_markdown_cell("# t\n\nRegenerates: `x`"),
                             new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]}),
                             *[new_code_cell(c) for c in cells]])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / name)


FIGURE = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nfrom romae.compendium import report\n"
          "fig, ax = plt.subplots()\nreport.save_figure(fig, 'fig_x', reports_dir or None)\n"
          f"report.record({ROW['experiment']!r}, {ROW['setting']!r}, {ROW['metric']!r}, VALUE, profile=profile, "
          "scale={}, reports_dir=reports_dir or None)")


def _runner(notebooks: Path, reports: Path, profile: str = "quick", **kw):
    return subprocess.Popen([sys.executable, "-m", "romae.runner.reproduce", "--profile", profile, "--notebooks",
                             str(notebooks), "--reports", str(reports), "--timeout", "120"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def test_failed_and_interrupted_runs_leave_the_last_good_artefacts(tmp_path):
    notebooks, reports = tmp_path / "notebooks", tmp_path / "reports"
    notebooks.mkdir()
    _write(notebooks, "07_x.ipynb", [FIGURE.replace("VALUE", "1.0")])
    assert _runner(notebooks, reports).wait(timeout=240) == 0
    good = {p: p.read_bytes() for p in [reports / "figures" / "fig_x.png", reports / "executed" / "07_x.ipynb",
                                        reports / "results.csv"]}
    # the notebook now writes a figure and a row, then fails: nothing of it may land
    _write(notebooks, "07_x.ipynb", [FIGURE.replace("VALUE", "5.0"), "raise RuntimeError('boom')"])
    proc = _runner(notebooks, reports)
    assert proc.wait(timeout=240) == 1, proc.stdout.read()
    assert all(p.read_bytes() == b for p, b in good.items())
    runs = pd.read_csv(reports / "runs.csv")
    assert runs.status.tolist() == ["ok", "failed"]
    assert "boom" in (reports / "failed" / "quick" / "07_x.ipynb").read_text()
    # an interrupted run (SIGINT while its kernel works): logged, pages rebuilt, artefacts unchanged
    _write(notebooks, "07_x.ipynb", [FIGURE.replace("VALUE", "9.0"), "import time\ntime.sleep(120)"])
    # started as a background shell starts it, with SIGINT ignored (inherited by Python, which then installs no
    # KeyboardInterrupt handler): the runner must still stop on it
    proc = _runner(notebooks, reports, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    deadline = time.time() + 120
    while not list(reports.glob(".staging-*/figures/fig_x.png")) and time.time() < deadline:
        time.sleep(0.5)  # the kernel has written its figure into the staging folder
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, out
    assert all(p.read_bytes() == b for p, b in good.items())
    runs = pd.read_csv(reports / "runs.csv")
    assert runs.status.tolist() == ["ok", "failed", "interrupted"]
    assert not list(reports.glob(".staging-*"))
    index = (reports / "index.html").read_text()
    assert "(last run interrupted; this page is the last complete run)" in index
    summary = pd.read_csv(reports / "summary.csv")
    mine = summary[(summary.experiment == ROW["experiment"]) & (summary.setting == ROW["setting"])
                   & (summary.metric == ROW["metric"])]
    assert mine.ours.tolist() == [1.0]  # the failed (5.0) and interrupted (9.0) rows never landed


def test_smoke_runs_go_to_their_own_tree(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    _write(notebooks, "07_x.ipynb", [FIGURE.replace("VALUE", "1.0")])
    monkeypatch.setenv("ROMAE_REPORTS", str(tmp_path / "reports"))
    proc = subprocess.run([sys.executable, "-m", "romae.runner.reproduce", "--profile", "smoke", "--notebooks",
                           str(notebooks)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "reports" / "smoke" / "figures" / "fig_x.png").exists()
    assert not (tmp_path / "reports" / "figures").exists() and not (tmp_path / "reports" / "runs.csv").exists()


def test_status_says_the_direction_and_keeps_scope_visible():
    assert report.status(0.233, 0.202, "abs", 0.014, "lower") == "better than the paper"
    assert report.status(0.233, 0.30, "abs", 0.014, "lower") == "worse than the paper"
    assert report.status(0.87, 0.99, "abs", 0.02, "higher") == "better than the paper"
    assert report.status(0.87, 0.70, "abs", 0.02, "higher") == "worse than the paper"
    assert report.status(200.33, 150.0, "rel", 0.05) == "differs"  # no better direction
    assert report.status(0.0, 1e-5, "gt", 0.0) == "claim holds"
    assert report.status(0.0, -1e-5, "gt", 0.0) == "claim does not hold"
    paper = dict(paper=0.233, rule="abs", tolerance=0.014, better="lower", reference="paper")
    reduced = dict(ours=0.30, profile="quick", scale='{"epochs": [2, 200]}')
    # the direction stays visible in the bare comparison; the verdict is gated on the scale
    assert report.row_status(paper, reduced) == "not comparable (reduced)"
    assert report.comparison(paper, reduced) == "worse than the paper"
    stand_in = dict(ours=0.233, profile="paper", scale='{"dataset": ["stand-in light curves", "ELAsTiCC"]}')
    assert report.row_status(paper, stand_in) == "not comparable (stand-in)"
    assert report.comparison(paper, stand_in) == "matches"
    fewer = dict(ours=0.30, profile="quick", scale='{"epochs": [200, 200], "seeds": [2, 5]}')
    assert report.row_status(paper, fewer) == "worse than the paper (fewer seeds)"
    with pytest.raises(ValueError, match="better must be"):
        report.status(1, 2, "abs", 0.1, "up")


def test_every_paper_artefact_has_a_row(tmp_path):
    ids = {a["artefact"] for a in artefacts()}
    tables = {f"table{i}" for i in range(1, 10)}
    assert {i.split("_")[0] for i in ids if i.startswith("table")} == tables
    assert {i.split("_")[0] for i in ids if i.startswith("fig")} == {"fig2", "fig3", "fig4", "fig5", "fig7", "fig8"}
    covered = {e for a in artefacts() for e in a["experiments"]}
    assert {r["experiment"] for r in paper_values()} <= covered  # every paper row belongs to an artefact
    view = artefact_view(build_summary(tmp_path), tmp_path)
    assert set(view.artefact) == ids and (view.status.str.len() > 0).all()
    assert view.set_index("artefact").status["table2_tiny_imagenet"] == "3 not run"
    assert "figure not made" in view.set_index("artefact").status["fig5_frequency_example"]
    assert view.set_index("artefact").status["fig4_frequency_retention_two_modes"] == "figure not made; 1 not run"
    text = (tmp_path / "SUMMARY.md").read_text()
    assert text.index("## The paper's claims") < text.index("## Paper artefacts") < text.index("Every row, quick runs")
    assert "## Every row" in (tmp_path / "ROWS.md").read_text()


def test_derived_check_of_figure_2(tmp_path):
    for metric, v in (("abs_error_interior_median", 0.5), ("abs_error_lower_edge", 2.0), ("abs_error_upper_edge", 4.0)):
        report.record("fig2_position_range", "(0, 100)", metric, v, profile="quick", scale={}, reports_dir=tmp_path,
                      learned=report.learned(0.6, 25.0, "the constant mean position"))
    summary = build_summary(tmp_path)
    row = summary[(summary.setting == "(0, 100)") & (summary.metric == "edge_over_interior")]
    assert row.ours.tolist() == [8.0] and row.status.tolist() == ["claim holds"]


# ----------------------------------------------------------------------------- runs that make reproduce did not start

def test_a_run_by_hand_writes_to_runs_interactive_and_says_so(monkeypatch, capsys, tmp_path):
    """Without a reports folder named (make reproduce names its staging folder, the tests ROMAE_REPORTS), a kernel's
    tables, figures and rows go to the git-ignored runs/interactive/, said once; never into reports/ (issue 53)."""
    from romae.compendium import settings

    scratch = tmp_path / "interactive"
    monkeypatch.setattr(settings, "SCRATCH", scratch)
    monkeypatch.setattr(settings, "_TOLD", [])
    monkeypatch.delenv("ROMAE_REPORTS", raising=False)
    before = {p: p.stat().st_mtime_ns for p in report.REPORTS.rglob("*") if p.is_file()}
    report.save_table(pd.DataFrame({"a": [1.0]}), "table_by_hand")
    report.record(ROW["experiment"], ROW["setting"], ROW["metric"], 1.0, profile="smoke", scale={})
    assert (scratch / "tables" / "table_by_hand.csv").exists() and (scratch / "results.csv").exists()
    said = capsys.readouterr().out
    assert said.count("runs/interactive/") == 1 and "reports/ stays as committed" in said
    assert {p: p.stat().st_mtime_ns for p in report.REPORTS.rglob("*") if p.is_file()} == before
    assert settings.reports_folder(tmp_path / "named") == tmp_path / "named"  # make reproduce's staging folder
    monkeypatch.setenv("ROMAE_REPORTS", str(tmp_path / "tests"))
    assert settings.reports_folder() == tmp_path / "tests"
    ignored = subprocess.run(["git", "check-ignore", "-q", "runs/interactive/tables/x.csv"], cwd=report.ROOT)
    assert ignored.returncode == 0


@pytest.mark.parametrize("env, said", [({}, True), ({"ROMAE_REPORTS": "/tmp/x"}, False),
                                       ({"ROMAE_STOP_FILE": "/tmp/stop"}, False)])
def test_a_kernel_says_where_its_artefacts_go_first(env, said):
    """In a kernel started by hand the compendium's import says it (the run's first output); in make reproduce's
    kernels (ROMAE_STOP_FILE) and the tests' (ROMAE_REPORTS) it does not."""
    code = "import sys; sys.modules.setdefault('ipykernel', sys); import romae.compendium"
    clean = {k: v for k, v in os.environ.items() if k not in ("ROMAE_REPORTS", "ROMAE_STOP_FILE")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**clean, **env},
                         timeout=120).stdout
    assert ("runs/interactive/" in out) == said, out
