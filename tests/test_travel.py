"""A training that outlives its machine (issue 52): a time budget, a stop request and SIGTERM stop a training cleanly
at a step boundary, its checkpoint written and verified; the same call continues it; a training cut into three pieces
on three fresh clones (each its own runs/ and results cache, only the committed record carried from one to the next)
is the uninterrupted training bit for bit; `make reproduce` pauses with its own exit status and continues."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import nbformat
import pytest
import torch
from nbformat.v4 import new_code_cell, new_markdown_cell

from romae import RoMAEConfig, RoMAEForPreTraining, TrainConfig, fit, runtime, size
from romae.checkpoint import read
from romae.compendium import terminal, trainings, travel
from romae.feeding import ArrayDataset

ROOT = Path(__file__).resolve().parents[1]


def _data(n=48, T=8):
    g = torch.Generator().manual_seed(0)
    return ArrayDataset(values=torch.randn(n, T, 1, generator=g), positions=torch.rand(n, 1, T, generator=g))


def _model():
    torch.manual_seed(1)
    return RoMAEForPreTraining(RoMAEConfig(token_dim=1, n_axes=1, encoder=size("tiny-shallow")))


def _equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# ----------------------------------------------------------------------------- fit

def test_a_time_budget_stops_fit_cleanly_and_the_same_call_continues(tmp_path):
    cfg = TrainConfig(epochs=2000, batch_size=8, lr=1e-3, seed=3, progress=False, log_every=10)  # 12,000 steps
    data = _data()
    t = time.time()
    first = fit(_model(), data, cfg, out_dir=tmp_path / "run", time_budget=4.0)
    took = time.time() - t
    assert first.paused == "time budget" and not first.complete and 0 < first.steps < 12_000
    assert took < 4.0 + 0.5, took  # stopped before its budget ran out (counted from the call)
    weights, state, config = read(tmp_path / "run" / "checkpoint")  # written, and its checksums verify
    assert state["step"] == config["step"] == first.steps and _equal(weights, first.model.state_dict())
    second = fit(_model(), data, cfg, out_dir=tmp_path / "run", time_budget=4.0)
    assert second.paused == "time budget" and second.steps > first.steps
    whole = fit(_model(), data, cfg, max_steps=second.steps)  # one uninterrupted run to the same step
    assert _equal(second.model.state_dict(), whole.model.state_dict())
    with pytest.raises(ValueError, match="time_budget=1 needs an out_dir"):
        fit(_model(), data, cfg, time_budget=1)
    with pytest.raises(ValueError, match="time_budget must be a number of seconds > 0, got -1"):
        fit(_model(), data, cfg, out_dir=tmp_path / "other", time_budget=-1)


def test_a_stop_request_before_the_first_step_trains_nothing(tmp_path):
    runtime.request_stop("asked by the test")
    try:
        res = fit(_model(), _data(), TrainConfig(epochs=1, batch_size=8, progress=False), out_dir=tmp_path / "r")
    finally:
        runtime.clear_stop()
    assert res.paused == "asked by the test" and res.steps == 0 and not (tmp_path / "r" / "checkpoint").exists()


SIGTERMED = r"""
import sys, torch
from pathlib import Path
torch.set_num_threads(1)
sys.path.insert(0, sys.argv[2])
from test_travel import _data, _model
from romae import TrainConfig, fit
res = fit(_model(), _data(), TrainConfig(epochs=3000, batch_size=8, lr=1e-3, seed=3, progress=False, log_every=1),
          out_dir=Path(sys.argv[1]))
print("PAUSED", res.paused, res.steps, flush=True)
"""


def test_sigterm_stops_a_training_cleanly(tmp_path):
    """SIGTERM (what a cluster sends before a job's limit) to a process in `fit`: it stops at the next step, its
    checkpoint written, and exits normally; the checkpoint continues the training to what an uninterrupted one gives."""
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", SIGTERMED, str(out), str(Path(__file__).parent)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    history = out / "history.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not history.exists() or len(history.read_text().splitlines()) < 5):
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    _, why, steps = stdout.split()[-3:]
    steps = int(steps)
    assert why == "SIGTERM" and 5 <= steps < 18_000, stdout
    _, state, _ = read(out / "checkpoint")
    assert state["step"] == steps


# ----------------------------------------------------------------------------- three pieces, three clones

PIECE = r"""
import os, sys, torch
from pathlib import Path
torch.set_num_threads(1)
clone, stop_after = Path(sys.argv[1]), int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
import romae.runtime as runtime
from romae.compendium import kept, travel
from romae.config import RoMAEConfig, TrainConfig, size
from romae.model import RoMAEForPreTraining
from test_travel import _data
kept.RUNS = clone / "runs"  # this clone's own, empty at first
os.environ["ROMAE_TRAININGS"] = str(clone / "record")  # the committed record, as this clone has it
calls = []
def cut(batch):
    calls.append(1)
    if len(calls) == stop_after:
        runtime.request_stop("cut by the test")
    return batch
cfg = TrainConfig(epochs=4, batch_size=8, lr=1e-3, seed=3, progress=False, log_every=1, checkpoint_every=5)
model = RoMAEConfig(token_dim=1, n_axes=1, encoder=size("tiny-shallow"))
try:
    got = kept.fit_cached("t_travel", RoMAEForPreTraining, model, dict(_data().tensors), cfg, {"data": "test"},
                          seed=5, cache_dir=clone / "cache", transform=cut)
    torch.save(got, clone / "result.pt")
    print("DONE", got["steps"], got["run_id"])
except travel.TrainingPaused as e:
    print("PAUSED", e.steps, e.run_id)
"""


def _piece(clone: Path, stop_after: int, record_from: Path | None = None) -> list[str]:
    if record_from is not None:  # a fresh clone of what was committed: the record alone
        shutil.copytree(record_from / "record", clone / "record")
    proc = subprocess.run([sys.executable, "-c", PIECE, str(clone), str(stop_after), str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.split()


def _shows_in_progress(record: Path, capsys) -> None:
    """`python -m romae.trainings` and the front page's headline name the training in progress."""
    import pandas as pd

    from romae.runner import claims

    capsys.readouterr()
    trainings.main(["--reports", str(record.parent)]) if record.name == "trainings" else travel.show(record)
    shown = capsys.readouterr().out
    assert "1 training(s) in progress" in shown and "step 16 of 24 (66.7 %), 2 piece(s)" in shown, shown
    rows = travel.listing(record)
    line = claims.headline(pd.DataFrame({"verdict": ["confirmed (1 for)"], "code": [""]}),
                           dict(cells=25, paper_scale=10, judged=5, in_progress=rows))
    assert "**In progress.**" in line and "`t_travel` at step 16 of 24 (67 %) after 2 piece(s)" in line, line


def test_three_pieces_on_three_fresh_clones_give_the_uninterrupted_training(tmp_path, capsys):
    """24 steps cut after 7 and 16, each piece in a fresh process on a "clone" of its own (its runs/ and cache empty),
    the record of trainings carried from one to the next as a commit would: the same weights and losses, bit for bit,
    as one uninterrupted run; the pieces are recorded; the travelling checkpoint leaves the record at the end."""
    assert _piece(tmp_path / "whole", 0)[0] == "DONE"
    one = _piece(tmp_path / "c1", 7)
    assert one[:2] == ["PAUSED", "7"]
    run_id = one[2]
    progress = travel.read(tmp_path / "c1" / "record" / travel.FOLDER / run_id)
    assert progress["steps"] == 7 and progress["total_steps"] == 24 and len(progress["pieces"]) == 1
    assert progress["pieces"][0]["why"] == "cut by the test" and progress["bytes"] > 0
    assert _piece(tmp_path / "c2", 9, tmp_path / "c1")[:2] == ["PAUSED", "16"]
    _shows_in_progress(tmp_path / "c2" / "record", capsys)
    assert _piece(tmp_path / "c3", 0, tmp_path / "c2")[:2] == ["DONE", "24"]
    whole = torch.load(tmp_path / "whole" / "result.pt", weights_only=False)
    pieces = torch.load(tmp_path / "c3" / "result.pt", weights_only=False)
    assert _equal(whole["state_dict"], pieces["state_dict"])
    losses = [[r["loss"] for r in x["history"] if "loss" in r] for x in (whole, pieces)]
    assert losses[0] == losses[1] and len(losses[0]) == 24
    record = tmp_path / "c3" / "record"
    assert not (record / travel.FOLDER / run_id).exists() and travel.listing(record) == []
    (twin,) = [p for p in record.glob("t_travel-*.json")]
    kept_pieces = json.loads(twin.read_text())["pieces"]
    assert [(p["from_step"], p["to_step"]) for p in kept_pieces] == [(0, 7), (7, 16), (16, 24)]


def test_a_damaged_travelling_checkpoint_is_not_used(tmp_path, monkeypatch):
    one = _piece(tmp_path / "c1", 7)
    folder = tmp_path / "c1" / "record" / travel.FOLDER / one[2]
    monkeypatch.setenv("ROMAE_TRAININGS", str(tmp_path / "c1" / "record"))
    with pytest.warns(UserWarning, match=r"t_travel: the training in progress in .* at step 7 of 24 was started under "
                                         r"another config, data or code than this run \(t_travel-0000\)"):
        assert travel.arrive("t_travel-0000", tmp_path / "other") is None  # another run of the same name
    # the same training in progress seen from another record (a quick run beside the paper record's training, whose
    # record is the repository's own): a terminal line, no warning in the notebook's output, nothing moved
    echo = tmp_path / "echo.txt"
    monkeypatch.setenv(terminal.ECHO, str(echo))
    monkeypatch.setattr(trainings, "DEFAULT", tmp_path / "c1" / "record")
    monkeypatch.setenv("ROMAE_TRAININGS", str(tmp_path / "quick-record"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert travel.arrive("t_travel-0000", tmp_path / "other") is None
    said = echo.read_text()
    assert "another record's training of this name is in progress" in said and "at step 7 of 24" in said
    assert "left as it is" in said and (folder / travel.PROGRESS).is_file()
    monkeypatch.delenv("ROMAE_TRAININGS")  # no record open (a notebook run by hand): the same
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert travel.arrive("t_travel-0000", tmp_path / "other") is None
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(ValueError, match="model.safetensors is altered"):
        travel.read(folder)
    rows = travel.listing(tmp_path / "c1" / "record")
    assert rows[0]["run_id"] == one[2] and "altered" in rows[0]["problem"]


# ----------------------------------------------------------------------------- make reproduce

TRAINING_CELL = """import os
from pathlib import Path
import torch
from romae import RoMAEConfig, RoMAEForPreTraining, TrainConfig, size
from romae.compendium import kept, report
kept.RUNS = Path(reports_dir).parents[{up}] / "runs"
g = torch.Generator().manual_seed(0)
data = dict(values=torch.randn(48, 8, 1, generator=g), positions=torch.rand(48, 1, 8, generator=g))
got = kept.fit_cached("t_notebook", RoMAEForPreTraining, RoMAEConfig(token_dim=1, n_axes=1, encoder=size("tiny-shallow")),
                      data, TrainConfig(epochs=3000, batch_size=8, lr=1e-3, seed=3, progress=False, log_every=50,
                                        checkpoint_every=500), {{"data": "test"}}, seed=5)
print("trained", got["steps"])"""


def _notebook(folder: Path) -> None:
    from test_reproduce import PARAMETERS, _notebook as make

    folder.mkdir(parents=True, exist_ok=True)
    nb = make([new_markdown_cell("# A long training"), new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]}),
               new_code_cell(TRAINING_CELL.format(up=1))])
    nbformat.write(nb, folder / "01_train.ipynb")


def test_make_reproduce_pauses_on_its_budget_and_on_sigterm_and_continues(tmp_path):
    """TIME_BUDGET: the training stops cleanly, nothing of the notebook is published, the run exits 75 with the
    command that continues it, the checkpoint waits in the record; SIGTERM to the runner does the same one piece on."""
    sys.path.insert(0, str(Path(__file__).parent))
    _notebook(tmp_path / "notebooks")
    reports = tmp_path / "reports"
    cmd = [sys.executable, "-m", "romae.runner.reproduce", "--profile", "quick", "--only", "01",
           "--notebooks", str(tmp_path / "notebooks"), "--reports", str(reports), "--timeout", "600"]
    first = subprocess.run([*cmd, "--time-budget", "40"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    out = first.stdout + first.stderr
    assert first.returncode == reproduce_paused(), out
    assert "== PAUSED: 01_train.ipynb: t_notebook paused at step" in out and "(time budget)" in out, out
    assert "make reproduce PROFILE=quick ONLY=01 TIMEOUT=600 TIME_BUDGET=40" in out, out
    record = reports / "trainings" / "quick"
    rows = travel.listing(record)
    assert len(rows) == 1, out
    row = rows[0]
    assert 0 < row["steps"] < 18_000 and row["notebook"] == "01_train" and len(row["pieces"]) == 1
    assert not (reports / "executed" / "01_train.ipynb").exists() and not (reports / "results.csv").exists()
    runs = (reports / "runs.csv").read_text()
    assert ",paused," in runs

    second = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    seen, lines = time.time(), []
    for line in second.stdout:  # the kernel says that it resumes; a few seconds on, SIGTERM
        lines.append(line)
        if "resumed at step" in line:
            time.sleep(3)
            second.send_signal(signal.SIGTERM)
            break
        assert time.time() - seen < 240, "".join(lines)
    rest = second.communicate(timeout=300)[0]
    out = "".join(lines) + rest
    assert second.returncode == reproduce_paused(), out
    assert "(SIGTERM)" in out, out
    (again,) = travel.listing(record)
    assert again["steps"] > row["steps"] and len(again["pieces"]) == 2, (row, again)


def reproduce_paused() -> int:
    from romae.runner import pausing

    return pausing.PAUSED
