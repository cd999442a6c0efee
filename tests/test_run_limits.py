"""`make reproduce` runs end: every notebook has a time limit (`--timeout`, TIMEOUT=; by default LIMIT_FACTOR x its
estimate, at least an hour), and `--only` must name notebooks (an empty ONLY= is refused, never "every notebook").

The one real run here (a notebook that publishes, then hangs and is stopped after a few seconds) takes about
15-25 s on 2 cores; the rest is arithmetic on written runs.csv files and plans.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import nbformat
import pandas as pd
import psutil
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from romae import runtime
from romae.compendium.reference import paper_values
from romae.runner import reproduce

ROOT = Path(__file__).resolve().parents[1]
PARAMETERS = 'profile: str = "smoke"  # smoke | quick | paper\nreports_dir: str = ""  # empty: <repo>/reports'


def _write(folder: Path, name: str, code: str) -> Path:
    nb = new_notebook(cells=[new_markdown_cell("# t\n\nRegenerates: `x`"),
                             new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]}), new_code_cell(code)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)
    return folder / name


# ------------------------------------------------------------------ a hanging notebook is stopped

def test_hanging_notebook_is_stopped_at_its_limit_and_published_reports_stay(tmp_path, capsys):
    """A notebook that publishes once, then hangs (a flag file makes it sleep 10 min): with --timeout 4 its kernel
    is stopped, the terminal and runs.csv say why, the run exits 1, and what it published before is unchanged."""
    row = paper_values()[0]
    flag = tmp_path / "hang"
    notebooks, reports = tmp_path / "notebooks", tmp_path / "reports"
    _write(notebooks, "05_hang.ipynb",
           "import os, time\nfrom romae.compendium import report\n"
           f"report.record({row['experiment']!r}, {row['setting']!r}, {row['metric']!r}, {row['paper']!r}, "
           "profile=profile, scale={}, reports_dir=reports_dir, note='limit test')\n"
           f"if os.path.exists({str(flag)!r}):\n    time.sleep(600)")
    argv = ["--profile", "smoke", "--only", "05", "--notebooks", str(notebooks), "--reports", str(reports)]
    assert reproduce.main([*argv, "--timeout", "120"]) == 0, capsys.readouterr().out
    published = [reports / "executed" / "05_hang.ipynb", reports / "results.csv", reports / "html" / "05_hang.html"]
    good = {p: p.read_bytes() for p in published}
    capsys.readouterr()

    flag.touch()
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    start = time.perf_counter()
    code = reproduce.main([*argv, "--timeout", "4"])
    took = time.perf_counter() - start
    out = capsys.readouterr().out
    assert code == 1, out
    assert took < 60, out  # the 10-minute sleep did not run out
    message = ("notebook 05_hang: stopped after 4 s (the time limit; TIMEOUT=<seconds> or --timeout to change, "
               "0 for none)")
    assert message in out.splitlines(), out
    assert "time limit 4 s (--timeout 4)" in out  # the start line says the limit
    runs = pd.read_csv(reports / "runs.csv", keep_default_na=False)
    assert runs.status.tolist() == ["ok", "failed"]
    assert runs.error.iloc[-1] == message.split(": ", 1)[1]
    assert all(p.read_bytes() == b for p, b in good.items())  # the last good artefacts are untouched
    assert (reports / "failed" / "smoke" / "05_hang.ipynb").exists()  # the stopped run's executed copy, apart
    assert not list(reports.glob(".staging-*"))
    time.sleep(0.5)
    left = [p for p in me.children(recursive=True) if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, [p.cmdline() for p in left]  # its kernel is gone


def test_a_notebook_that_ends_in_time_is_not_stopped(tmp_path):
    with reproduce._time_limit(30.0, "07_x") as hit:
        pass
    assert hit == []
    with reproduce._time_limit(None, "07_x") as hit:
        pass
    assert hit == []


# ------------------------------------------------------------------ the default limit

def _log(reports: Path, notebook: str, profile: str, seconds: list[float], status: str = "ok", params: str = ""):
    for s in seconds:
        reproduce.append_run(dict(notebook=notebook, profile=profile, device="cpu", seconds=s, commit="abc",
                                  status=status, error="", params=params), reports)


def _plan(path: Path, notebook: str, hours: list[float], eager: list[float], precision: str = "fp32") -> Path:
    rows = [dict(notebook=notebook, precision={precision: dict(hours=h, eager_hours=e)}) for h, e in zip(hours, eager)]
    path.write_text(json.dumps(dict(rows=rows)))
    return path


NB = Path("12_uea_classification.ipynb")


def test_no_estimate_gives_an_hour(tmp_path):
    limit, why = reproduce.time_limit(NB, "smoke", tmp_path, {}, runtime.Runtime())
    assert limit == reproduce.MIN_LIMIT == 3600 and "1 h 00 min" in why and "no estimate" in why
    # no plan for the paper profile either (a notebook that trains nothing)
    limit, _ = reproduce.time_limit(Path("03_compute_cost.ipynb"), "paper", tmp_path, {}, runtime.Runtime(),
                                    plan_json=_plan(tmp_path / "plan.json", "12", [1.0], [1.0]))
    assert limit == reproduce.MIN_LIMIT


def test_default_is_four_times_the_longest_successful_run_of_the_same_profile_and_parameters(tmp_path):
    _log(tmp_path, NB.stem, "quick", [1800.0, 46.0])  # the last run took 46 s: its trainings were cached
    _log(tmp_path, NB.stem, "quick", [99999.0], status="failed")
    _log(tmp_path, NB.stem, "paper", [88888.0])
    _log(tmp_path, NB.stem, "quick", [77777.0], params="datasets=JapaneseVowels")
    limit, why = reproduce.time_limit(NB, "quick", tmp_path, {}, runtime.Runtime())
    assert limit == reproduce.LIMIT_FACTOR * 1800.0 == 7200.0
    assert "4 x its longest successful quick run" in why and "2 h 00 min" in why
    limit, _ = reproduce.time_limit(NB, "quick", tmp_path, {"datasets": ["JapaneseVowels"]}, runtime.Runtime())
    assert limit == 4 * 77777.0
    _log(tmp_path, "00_rope_theory", "quick", [12.0])  # a short notebook still gets an hour
    limit, why = reproduce.time_limit(Path("00_rope_theory.ipynb"), "quick", tmp_path, {}, runtime.Runtime())
    assert limit == 3600 and "at least 1 h 00 min" in why


def test_paper_default_comes_from_the_plan_at_the_run_precision(tmp_path):
    plan = _plan(tmp_path / "plan.json", "12", [0.5, 0.25], [0.5, 0.5], precision="bf16")
    limit, why = reproduce.time_limit(NB, "paper", tmp_path, {}, runtime.Runtime(precision="bf16"), plan_json=plan)
    assert limit == pytest.approx(4 * 1.0 * 3600)  # the eager steps' hours, the longer
    assert "the plan's for one H100 in BF16" in why
    # a measured run longer than the plan wins
    _log(tmp_path, NB.stem, "paper", [5 * 3600.0])
    limit, why = reproduce.time_limit(NB, "paper", tmp_path, {}, runtime.Runtime(precision="bf16"), plan_json=plan)
    assert limit == pytest.approx(4 * 5 * 3600) and "longest successful paper run" in why
    # a precision the plan lacks, or a dry run: no plan estimate
    assert reproduce.planned_seconds("12", runtime.Runtime(precision="tf32"), plan) is None
    shutil.rmtree(tmp_path / "dry", ignore_errors=True)
    limit, _ = reproduce.time_limit(NB, "paper", tmp_path / "dry", {}, runtime.Runtime(max_steps=2), plan_json=plan)
    assert limit == reproduce.MIN_LIMIT


def test_paper_default_from_the_committed_plan():
    """Notebook 13 in the committed plan (reports/plan/paper_h100.json): 4 x the longer of its graphed and eager
    FP32 hours, from the file, not typed in."""
    path = ROOT / "reports" / "plan" / "paper_h100.json"
    if not path.exists():
        pytest.skip("no committed plan (make plan writes reports/plan/paper_h100.json)")
    rows = [r["precision"]["fp32"] for r in json.loads(path.read_text())["rows"] if r["notebook"] == "13"]
    hours = max(sum(r["hours"] for r in rows), sum(r["eager_hours"] for r in rows))
    limit, _ = reproduce.time_limit(Path("13_elasticc.ipynb"), "paper", Path("/nonexistent"), {},
                                    runtime.Runtime(device="cuda"))
    assert limit == pytest.approx(max(4 * hours * 3600, 3600))


def test_paper_on_the_cpu_takes_the_reference_cpus_plan(tmp_path, monkeypatch):
    from romae.compendium import plan

    asked = []

    def fake_plan(device, gpus, memory, only, checked, precisions):
        asked.append((device, only, precisions))
        return dict(totals={"12": {"fp32": 40.0}})

    monkeypatch.setattr(plan, "plan", fake_plan)
    limit, why = reproduce.time_limit(NB, "paper", tmp_path, {}, runtime.Runtime(device="cpu"))
    assert asked == [("cpu", ["12"], ("fp32",))] and limit == 4 * 40 * 3600 and "reference CPU" in why


def test_given_timeout_wins_and_zero_means_none(tmp_path):
    _log(tmp_path, NB.stem, "quick", [1800.0])
    assert reproduce.time_limit(NB, "quick", tmp_path, {}, runtime.Runtime(), given=120)[0] == 120
    assert reproduce.time_limit(NB, "quick", tmp_path, {}, runtime.Runtime(), given=0) == \
        (None, "no time limit (--timeout 0)")


def test_limit_text():
    assert [reproduce.limit_text(s) for s in (3600, 3599.6, 4 * 3600 + 5 * 60, 125, 4, 2.5)] == \
        ["1 h 00 min", "1 h 00 min", "4 h 05 min", "2 min 05 s", "4 s", "2.5 s"]


def test_negative_timeout_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        reproduce.main(["--timeout", "-5", "--notebooks", str(tmp_path), "--reports", str(tmp_path / "r")])
    assert e.value.code == 2 and "--timeout -5" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------ --only must name notebooks

@pytest.mark.parametrize("only", ["", "   ", ",", " , "])
def test_empty_only_is_refused_with_the_notebook_numbers(tmp_path, capsys, only):
    for name in ("01_a.ipynb", "02_b.ipynb"):
        _write(tmp_path, name, "pass")
    with pytest.raises(ValueError, match="names no notebook.*have: 01, 02"):
        reproduce.select_notebooks(tmp_path, only)
    with pytest.raises(SystemExit) as e:
        reproduce.main(["--profile", "smoke", "--only", only, "--notebooks", str(tmp_path),
                        "--reports", str(tmp_path / "r")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"--only {only!r}: names no notebook" in err and "have: 01, 02" in err
    assert not (tmp_path / "r").exists()  # nothing ran
    # what stays: every notebook when --only is not given or is all; an unknown number is refused
    assert len(reproduce.select_notebooks(tmp_path)) == len(reproduce.select_notebooks(tmp_path, " all ")) == 2
    with pytest.raises(ValueError, match="no notebook numbered 07 .*have: 01, 02"):
        reproduce.select_notebooks(tmp_path, "01,07")


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
@pytest.mark.parametrize("target", ["reproduce", "dry-run"])
def test_make_passes_only_and_timeout(target):
    """`make -n`: ONLY always reaches the runner (an empty ONLY= as --only "", refused there), TIMEOUT when given."""

    def command(*assignments):
        out = subprocess.run(["make", "-n", "-o", ".venv/.installed", target, *assignments], cwd=ROOT,
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        return " ".join(out.stdout.replace("\\\n", " ").split())

    assert '--only "all"' in command() and "--timeout" not in command()
    assert '--only ""' in command("ONLY=")
    assert '--only "00,03" --timeout 7200' in command("ONLY=00,03", "TIMEOUT=7200")
    assert "--timeout 0" in command("TIMEOUT=0")
    if target == "reproduce":  # CUDA_GRAPHS=0 (issue 55): every training eager, through the runner's kernels' env
        assert "--cuda-graphs 0" in command("CUDA_GRAPHS=0") and "--cuda-graphs" not in command()
