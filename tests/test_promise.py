"""`python -m romae.runner.promise`: what the plan promised, measured (issue 31, item 3). The CPU twin runs here; on a
GPU `make gpu-check` runs the same harness with memory statistics."""

from __future__ import annotations

import pytest

from romae.compendium import plan
from romae.runner import experiments

experiments.load()  # every experiment registers its paper trainings with the plan
from romae.runner import promise


@pytest.fixture(scope="module")
def pendulum():
    return plan.paper_trainings("14")[0]


def test_a_training_is_measured_beside_its_plan(pendulum):
    row = promise.measure_one(pendulum, "fp32", "this", None, steps=1)
    assert row["kernel"] == "cpu" and row["micro"] == pendulum.train.batch_size and row["k"] == 1
    assert row["measured_micro"] == row["micro"]  # a short planned step runs whole
    assert row["planned_seconds"] == pytest.approx(plan.step_seconds(pendulum, "cpu", "fp32", 1))
    assert row["measured_seconds"] > 0 and row["time_ratio"] == pytest.approx(row["measured_seconds"]
                                                                             / row["planned_seconds"])
    assert row["measured_peak_gib"] is None  # no allocator statistics on the CPU


def test_a_time_far_from_the_plan_fails_the_row(pendulum, monkeypatch):
    monkeypatch.setattr(plan, "step_seconds", lambda *a, **k: 1e-9)
    row = promise.measure_one(pendulum, "fp32", "this", None, steps=1)
    assert row["status"].startswith("time ") and "the plan's" in row["status"]


def test_the_table_says_what_was_sampled_and_goes_into_the_readme(pendulum, tmp_path):
    result = dict(settings=dict(device="cpu", planned="cpu", steps=1, budget_minutes=0.5, cpu_micro=4),
                  rows=[dict(notebook="14", **promise.measure_one(pendulum, "fp32", "this", None, steps=1))],
                  sampled=["14 pendulum, authors' configuration (fp32)"])
    text = promise.table(result)
    assert "| 14 | pendulum, ours | fp32 | cpu |" in text and "Not measured within the 0.5-minute budget" in text
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{promise.README_BEGIN}\nold\n{promise.README_END}\nafter\n")
    promise.write_readme(readme, result, "python -m romae.runner.promise --device this")
    out = readme.read_text()
    assert out.startswith("before\n") and out.endswith("after\n") and "old" not in out and text in out


def test_the_round_robin_samples_every_notebook_first():
    order = promise._order(["12", "14"])
    assert [nb for nb, _ in order[:2]] == ["12", "14"]
    assert len(order) == len(plan.paper_trainings("12")) + len(plan.paper_trainings("14"))


def test_a_run_stopped_from_outside_keeps_every_row_it_measured(tmp_path, monkeypatch):
    import json

    calls = []

    def one(t, p, device, memory, steps):
        if calls:
            raise KeyboardInterrupt  # gpu-check's deadline, a timeout: the process ends mid-way
        calls.append(t.name)
        return dict(training=t.name, stage=t.stage, precision=p, status="ok")

    monkeypatch.setattr(promise, "measure_one", one)
    with pytest.raises(KeyboardInterrupt):
        promise.main(["--only", "14", "--out", str(tmp_path)])
    kept = json.loads((tmp_path / "promise.json").read_text())
    assert [r["training"] for r in kept["rows"]] == calls == ["pendulum, ours"]
    assert kept["sampled"] == ["14 pendulum, authors' configuration (fp32)"]
    assert "pendulum, ours" in (tmp_path / "promise.md").read_text()
