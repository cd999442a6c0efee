"""The notebook runner (`python -m romae.runner.reproduce`) on two throwaway notebooks in a temporary folder:
01_fail raises, 02_ok records a paper row, draws a figure and has an equation in its first cell.

One real run (two kernels, about 15-25 s on 2 cores) is shared by this file and test_index_html.py.
"""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from romae.runner import reproduce
from romae.compendium.reference import paper_values

ROOT = Path(__file__).resolve().parents[1]
PARAMETERS = 'profile: str = "smoke"  # smoke | quick | paper\nreports_dir: str = ""  # empty: <repo>/reports'


def _notebook(cells) -> nbformat.NotebookNode:
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


# what a notebook tells the terminal (romae.compendium.terminal): its plan line, then one tiny training that says its start and end
TERMINAL_CELL = """import torch
from romae import RoMAEConfig, RoMAEForPreTraining, TrainConfig, fit, size
from romae.compendium import terminal
from romae.train import ArrayDataset
terminal.expect(2)
terminal.say("plan: a line for the terminal")
x = torch.randn(8, 6, 1)
t = torch.arange(6.0).expand(8, 1, 6)
with terminal.named("tiny_pretrain"):
    fit(RoMAEForPreTraining(RoMAEConfig(token_dim=1, n_axes=1, encoder=size("tiny-shallow")), seed=0),
        ArrayDataset(values=x, positions=t), TrainConfig(epochs=1, batch_size=4, progress=False),
        on_progress=terminal.Progress())"""


def write_notebooks(folder: Path) -> dict:
    """01_fail.ipynb and 02_ok.ipynb in `folder`; returns the paper row that 02_ok records."""
    folder.mkdir(parents=True, exist_ok=True)
    row = paper_values()[0]  # a real (experiment, setting, metric), so the summary joins it
    params = new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]})
    ok = _notebook([
        new_markdown_cell("# Runner test\n\nRegenerates: `test_artefact`\n\nAn equation: $x^2 + \\theta_k$."),
        params,
        new_code_cell("from romae.compendium import report\n"
                      f"report.record({row['experiment']!r}, {row['setting']!r}, {row['metric']!r}, "
                      f"{row['paper']!r}, profile=profile, scale={{}}, reports_dir=reports_dir, note='runner test');"),
        new_code_cell("import sys\nfrom tqdm import tqdm\n"  # a bar forced on, as fit's is
                      "for _ in tqdm(range(3), desc='a progress bar', disable=False):\n    pass\n"
                      "print('a warning that stays', file=sys.stderr)"),
        new_code_cell("import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 2))\n"
                      "ax.plot([0, 1], [0, 1])\nplt.show()"),
        new_code_cell(TERMINAL_CELL),
    ])
    fail = _notebook([new_markdown_cell("# Fails on purpose"), params,
                      new_code_cell('raise RuntimeError("deliberate failure for the runner test")')])
    nbformat.write(fail, folder / "01_fail.ipynb")
    nbformat.write(ok, folder / "02_ok.ipynb")
    return row


@lru_cache(maxsize=None)
def reproduced_run() -> SimpleNamespace:
    """Run `python -m romae.runner.reproduce --profile smoke` once over both notebooks (session-wide)."""
    tmp = Path(tempfile.mkdtemp(prefix="romae-reproduce-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    row = write_notebooks(tmp / "notebooks")
    reports = tmp / "reports"
    proc = subprocess.run([sys.executable, "-m", "romae.runner.reproduce", "--profile", "smoke", "--only", "01,02",
                           "--notebooks", str(tmp / "notebooks"), "--reports", str(reports), "--timeout", "120"],
                          cwd=tmp, capture_output=True, text=True, timeout=300)
    return SimpleNamespace(tmp=tmp, notebooks=tmp / "notebooks", reports=reports, proc=proc, row=row)


@pytest.fixture(scope="module")
def run():
    return reproduced_run()


def test_failing_notebook_fails_the_run_but_not_the_others(run):
    out = run.proc.stdout + run.proc.stderr
    assert run.proc.returncode != 0, out
    assert "[1/2] 01_fail.ipynb" in out and "[2/2] 02_ok.ipynb" in out  # a progress line per notebook
    runs = pd.read_csv(run.reports / "runs.csv", keep_default_na=False)
    assert list(runs.columns) == reproduce.RUN_COLUMNS
    assert runs.notebook.tolist() == ["01_fail", "02_ok"], out
    fail, ok = runs.iloc[0], runs.iloc[1]
    assert fail.status == "failed" and "deliberate failure for the runner test" in fail.error
    assert ok.status == "ok" and ok.error == "", out
    assert (runs.profile == "smoke").all() and (runs.seconds > 0).all()
    assert runs.commit.iloc[0] and runs.device.iloc[0].startswith(("cpu", "NVIDIA", "cuda"))
    assert "**FAILED**" in (run.reports / "SUMMARY.md").read_text().split("## Runs", 1)[1]


def test_terminal_tells_the_story(run):
    """The terminal shows the notebook's own lines as they come (plan, each training's start and end with
    trainings done / expected), its result rows at the end, and no kernel transport warning."""
    out = run.proc.stdout
    lines = out.splitlines()
    assert "    plan: a line for the terminal" in lines, out
    start = next(i for i, l in enumerate(lines) if "training 1/2 tiny_pretrain: 2 optimiser steps" in l)
    end = next(i for i, l in enumerate(lines) if "training 1/2 tiny_pretrain: done in" in l)
    result = next(i for i, l in enumerate(lines) if l.startswith(f"    result: {run.row['experiment']} | "))
    finished = next(i for i, l in enumerate(lines) if l.startswith("[2/2] 02_ok: ok in"))
    assert start < end < result < finished, out
    assert "without encryption" not in run.proc.stdout + run.proc.stderr
    assert not list(run.reports.rglob("*terminal*.log"))  # the kernel's lines for the terminal are not published


def test_executed_copy_keeps_outputs_without_timestamps(run):
    executed = run.reports / "executed" / "02_ok.ipynb"
    # a failed run never lands beside the good copies: its executed copy (with the error) is kept apart
    assert executed.exists() and not (run.reports / "executed" / "01_fail.ipynb").exists()
    assert "deliberate failure" in (run.reports / "failed" / "smoke" / "01_fail.ipynb").read_text()
    assert not list(run.reports.glob(".staging-*"))  # staging folders are removed
    nb = json.loads(executed.read_text())
    assert not {"start_time", "end_time", "duration"} & set(nb["metadata"]["papermill"])
    for cell in nb["cells"]:
        assert "papermill" not in cell["metadata"] and "execution" not in cell["metadata"]
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the figure
    tags = [c["metadata"].get("tags", []) for c in nb["cells"]]
    assert ["injected-parameters"] in tags
    injected = "".join(nb["cells"][tags.index(["injected-parameters"])]["source"])
    # it ran in a staging folder, published as the folder it went to (a reports folder outside the clone is
    # written "[reports]": no path of this machine is published)
    assert 'reports_dir = "[reports]"' in injected and '"smoke"' in injected
    assert nb["metadata"]["papermill"]["output_path"] == "[reports]/executed/02_ok.ipynb"
    assert str(run.tmp) not in executed.read_text() and ".staging-" not in executed.read_text()
    # the source notebook is untouched (never executed in place)
    src = json.loads((run.notebooks / "02_ok.ipynb").read_text())
    assert all(c.get("outputs", []) == [] for c in src["cells"]) and "papermill" not in src["metadata"]


def test_run_records_its_code_and_hides_progress_bars(run):
    """Each published run names the code its kernel can run (the sound rule's record of what its cells name) and its
    notebook's code; freshness is 'current' until one of them changes. No progress bar lands in the copy."""
    from romae.compendium import report
    from romae.runner.provenance import freshness

    prov = json.loads((run.reports / "provenance" / "02_ok.json").read_text())
    assert prov["profile"] == "smoke" and prov["format"] == 3 and prov["code"]["units"]
    assert not [u for u in prov["code"]["units"] if u.startswith("runner/")]  # the runner is never in a record
    assert freshness(prov) == ("current", [])
    assert report.provenance_of("02_ok", "smoke", run.reports) == prov
    assert report.provenance_of("02_ok", "quick", run.reports) == {}
    place = next(iter(prov["code"]["units"]))
    edited = json.loads(json.dumps(prov))
    edited["code"]["units"][place] = "0" * 16
    assert freshness(edited) == ("stale", [f"{place}: changed"])
    edited = json.loads(json.dumps(prov))
    edited["code"]["numbers"] = {w: "not-these-numbers" for w in edited["code"]["numbers"]}
    assert freshness(edited)[0] == "stale"
    assert freshness({})[0] == "stale"
    assert not (run.reports / "provenance" / "01_fail.json").exists()  # failed runs publish nothing
    nb = json.loads((run.reports / "executed" / "02_ok.ipynb").read_text())
    outputs = json.dumps([c.get("outputs", []) for c in nb["cells"]])
    assert "progress bar" not in outputs and "3/3" not in outputs
    assert "a warning that stays" in outputs  # other stderr text is kept


def test_drop_progress_bars_keeps_everything_else():
    bars = "train:   0%|          | 0/632 [00:00<?, ?it/s]\rtrain:  45%|####5     | 283/632 [00:10<00:12, 28.1it/s]\r"
    outs = [dict(output_type="stream", name="stderr", text=bars),
            dict(output_type="stream", name="stdout", text="epoch 1 done\n"),
            dict(output_type="stream", name="stderr", text=bars + "UserWarning: careful\n" + bars),
            dict(output_type="stream", name="stderr", text="x.zip:  35%|###5      | 1.20M/3.40M [00:01<00:02, 1.1MB/s]\n"),
            dict(output_type="display_data", data={"text/plain": "<Figure>"}, metadata={})]
    kept = reproduce.drop_progress_bars(outs)
    assert [o.get("text", "") for o in kept] == ["epoch 1 done\n", "UserWarning: careful\n", ""]
    assert kept[-1]["output_type"] == "display_data"


def test_summary_contains_the_recorded_row(run):
    summary = pd.read_csv(run.reports / "summary.csv")
    r = run.row
    mine = summary[(summary.experiment == r["experiment"]) & (summary.setting == r["setting"])
                   & (summary.metric == r["metric"]) & (summary.profile == "smoke")]
    assert len(mine) == 1 and mine.ours.iloc[0] == pytest.approx(r["paper"])
    assert mine.status.iloc[0] == "matches" and mine.note.iloc[0] == "runner test"
    text = (run.reports / "SUMMARY.md").read_text()
    assert "runner test" in text and "## Runs" in text


def test_select_notebooks_and_bad_arguments(tmp_path, capsys):
    write_notebooks(tmp_path)
    assert [p.name for p in reproduce.select_notebooks(tmp_path)] == ["01_fail.ipynb", "02_ok.ipynb"]
    assert [p.name for p in reproduce.select_notebooks(tmp_path, "all")] == ["01_fail.ipynb", "02_ok.ipynb"]
    assert [p.name for p in reproduce.select_notebooks(tmp_path, "02")] == ["02_ok.ipynb"]
    with pytest.raises(ValueError, match="no notebook numbered 07"):
        reproduce.select_notebooks(tmp_path, "02,07")
    for argv in (["--profile", "fast"], ["--profile", "smoke", "--only", "07"]):
        with pytest.raises(SystemExit) as e:
            reproduce.main([*argv, "--notebooks", str(tmp_path), "--reports", str(tmp_path / "r")])
        assert e.value.code == 2
    assert "unknown profile 'fast'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # nothing ran


def test_latest_runs_keeps_the_last_row_per_notebook_and_profile(tmp_path):
    for nb, profile, status in [("00_a", "smoke", "failed"), ("00_a", "smoke", "ok"), ("00_a", "quick", "ok")]:
        reproduce.append_run(dict(notebook=nb, profile=profile, device="cpu", seconds=1.0, commit="abc",
                                  status=status, error=""), tmp_path)
    latest = reproduce.latest_runs(tmp_path)
    assert latest[["profile", "status"]].values.tolist() == [["quick", "ok"], ["smoke", "ok"]]


def test_latest_runs_takes_a_variants_latest_run_from_its_own_folder(tmp_path):
    """A variant logs into variants/<v>/runs.csv; an older row of it left in the main runs.csv (written before
    variants had folders) must not stand as its latest run on the front page."""
    row = dict(notebook="12_uea", profile="quick", device="cpu", status="ok", error="", params="datasets=X")
    reproduce.append_run(dict(row, seconds=741.1, commit="old0000"), tmp_path)
    reproduce.append_run(dict(row, params="", seconds=15.0, commit="main000"), tmp_path)
    folder = tmp_path / "variants" / "12_uea--quick--datasets=X"
    reproduce.append_run(dict(row, seconds=20.0, commit="first00"), folder)
    reproduce.append_run(dict(row, seconds=18.1, commit="new0000"), folder)
    latest = reproduce.latest_runs(tmp_path)
    assert latest[["params", "commit", "seconds"]].values.tolist() == [["", "main000", "15.0"],
                                                                       ["datasets=X", "new0000", "18.1"]]
    assert reproduce.latest_runs(folder).commit.tolist() == ["new0000"]  # a variant's own summary: its own rows
