"""romae.runtime: device honesty, dry runs, precision as a named deviation, what rows record."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
import torch

from romae.compendium import report
from romae.runner import reproduce
from romae import runtime
from romae.config import TrainConfig
from romae.compendium.kept import fit_cached
from romae.train import ArrayDataset, fit

needs_no_gpu = pytest.mark.skipif(runtime.accelerator_name() is not None, reason="an accelerator is present")


@pytest.fixture
def env(monkeypatch):
    for k in runtime.ENV:
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


class Toy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(3, 1)

    def forward(self, x, y):
        pred = self.lin(x).squeeze(-1)
        return pred, ((pred - y) ** 2).mean()


@dataclasses.dataclass
class ToyConfig:
    def to_dict(self):
        return {}


def data(n=40):
    g = torch.Generator().manual_seed(0)
    return ArrayDataset(x=torch.randn(n, 3, generator=g), y=torch.randn(n, generator=g))


def test_runtime_reads_and_refuses_bad_values(env):
    assert runtime.current() == runtime.Runtime()
    env.setenv("ROMAE_MAX_STEPS", "two")
    with pytest.raises(ValueError, match="ROMAE_MAX_STEPS='two'"):
        runtime.current()
    env.setenv("ROMAE_MAX_STEPS", "2")
    env.setenv("ROMAE_PRECISION", "fp8")
    with pytest.raises(ValueError, match="'fp8'"):
        runtime.current()
    env.setenv("ROMAE_PRECISION", "bf16")
    rt = runtime.current()
    assert rt.dry_run and rt.precision == "bf16" and rt.env() == {"ROMAE_MAX_STEPS": "2", "ROMAE_PRECISION": "bf16"}


@needs_no_gpu
def test_paper_profile_stops_before_training_without_accelerator(env, tmp_path, capsys):
    rc = reproduce.main(["--profile", "paper", "--only", "14", "--reports", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "STOPPED before any training" in err and "DEVICE=cpu" in err and "CUDA build" in err
    assert not (tmp_path / "runs.csv").exists()  # nothing ran
    runtime.require_accelerator("quick")  # other profiles never need one
    env.setenv("ROMAE_DEVICE", "cpu")
    runtime.require_accelerator("paper")  # asked for explicitly


def test_dry_run_caps_steps_and_batches_and_skips_the_cache(env, tmp_path):
    cfg = TrainConfig(epochs=5, batch_size=16, lr=1e-2, progress=False, log_every=1)
    env.setenv("ROMAE_MAX_STEPS", "2")
    res = fit_cached("toy", lambda _: Toy(), ToyConfig(), data(), cfg, {"d": 1}, seed=0, cache_dir=tmp_path)
    assert res["steps"] == 2 and not list(tmp_path.iterdir())  # two steps, nothing cached
    assert runtime.dry_batch(16, None, "cpu") == (2 * runtime.DRY_MICRO_CPU, runtime.DRY_MICRO_CPU)
    assert runtime.dry_batch(4096, 512, "cuda") == (1024, 512)
    row = report.record("x", "s", "m", 1.0, profile="paper", scale={}, reports_dir=tmp_path, note="mine")
    assert row["note"].startswith("DRY RUN: 2 optimiser steps") and row["note"].endswith("; mine")
    assert "torch " + torch.__version__ in row["device"] and "1 process" in row["device"]


def test_precision_is_a_named_deviation_with_its_own_cache_key(env, tmp_path):
    cfg = TrainConfig(epochs=1, batch_size=8, lr=1e-2, progress=False)
    cfg_obj = ToyConfig()
    fit_cached("toy", lambda _: Toy(), cfg_obj, data(), cfg, {"d": 1}, seed=0, cache_dir=tmp_path)
    env.setenv("ROMAE_PRECISION", "tf32")
    res = fit_cached("toy", lambda _: Toy(), cfg_obj, data(), cfg, {"d": 1}, seed=0, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.pt"))) == 2 and res["steps"] == 5  # not the fp32 result
    assert "precision tf32: a deviation" in report.record("x", "s", "m", 1.0, profile="quick",
                                                           scale={}, reports_dir=tmp_path)["note"]
    assert not torch.backends.cuda.matmul.allow_tf32  # restored after the fit
    env.setenv("ROMAE_PRECISION", "bf16")
    assert fit(Toy(), data(), cfg, device="cpu").steps == 5  # bf16 autocast from the runtime


def test_reproduce_restores_the_environment_and_records_the_stack(env, tmp_path):
    rc = reproduce.main(["--profile", "smoke", "--only", "00", "--reports", str(tmp_path), "--max-steps", "2",
                         "--device", "cpu", "--precision", "bf16"])
    assert rc == 0 and not any(k in os.environ for k in runtime.ENV)
    runs = reproduce.all_runs(tmp_path)
    assert runs.iloc[-1][["torch", "cuda", "precision", "processes"]].tolist() == [
        torch.__version__, torch.version.cuda or "none", "bf16", "1"]


@needs_no_gpu
def test_gpu_check_without_a_gpu_says_so_and_exits_0(tmp_path, capsys):
    from romae.runner import gpucheck

    assert gpucheck.main(["--out", str(tmp_path / "gpu")]) == 0
    assert "no CUDA GPU here" in capsys.readouterr().out and not (tmp_path / "gpu").exists()
    titles = [t for t, _ in gpucheck.steps(tmp_path)]
    assert titles[0] == "CUDA tests" and "paper dry run on CUDA" in titles


def test_gpu_check_refuses_a_skip_that_names_no_step_and_caps_the_plan_check(tmp_path, capsys):
    from romae.runner import gpucheck

    with pytest.raises(SystemExit):
        gpucheck.main(["--out", str(tmp_path / "gpu"), "--skip", "dry rn"])
    assert "'dry rn' names no step" in capsys.readouterr().err
    promise = dict(gpucheck.steps(tmp_path, 1.5))["plan against measurement"]
    assert promise[promise.index("--budget-minutes") + 1] == "1.50"


def test_gpu_check_stops_at_the_first_failed_step_with_what_to_do_next(tmp_path, monkeypatch, capsys):
    """Issue 55: the steps run in order (CUDA tests, the CUDA-graph probe, the launch-bound steps, the memory at
    risk, ...) and the first that fails stops the script, its NEXT line said and written; the rest read 'not run'."""
    import sys
    import types

    from romae.runner import gpucheck

    titles = [t for t, _ in gpucheck.steps(tmp_path)]
    assert titles[:4] == ["CUDA tests", "CUDA-graph probe", "launch-bound steps", "memory at risk"]
    ok, bad = [sys.executable, "-c", "print('fine')"], [sys.executable, "-c", "raise SystemExit(3)"]
    monkeypatch.setattr(gpucheck, "steps", lambda out, minutes=8.0: [("CUDA tests", ok), ("CUDA-graph probe", bad),
                                                                     ("launch-bound steps", ok)])
    monkeypatch.setattr(gpucheck.runtime, "accelerator_name", lambda: "NVIDIA Stand-in")
    monkeypatch.setattr(gpucheck.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(gpucheck.torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(gpucheck.torch.cuda, "get_device_properties", lambda i: types.SimpleNamespace(
        total_memory=80 * 2 ** 30))
    assert gpucheck.main(["--out", str(tmp_path / "gpu")]) == 1
    out = capsys.readouterr().out
    assert "STOPPED at CUDA-graph probe. NEXT: graphed steps differ from eager" in out and "CUDA_GRAPHS=0" in out
    done = json.loads((tmp_path / "gpu" / "gpu-check.json").read_text())["steps"]
    assert [r["status"] for r in done] == ["ok", "failed (exit 3)",
                                           "not run: an earlier step failed (CUDA-graph probe)"]
    assert "NEXT (CUDA-graph probe)" in (tmp_path / "gpu" / "README.md").read_text()
