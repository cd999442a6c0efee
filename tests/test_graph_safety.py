"""Issue 55 on the CPU: CUDA graphs loud on failure and reversible, inside the real `fit`, with stand-in graphs.

A stand-in capture runs nothing (as a real one: it records), and its replay runs the step on the static inputs and
writes the outputs and the deferred checks' results into the captured tensors, as a real replay rewrites its buffers.
The CPU takes an accelerator's path (checks deferred, read with the losses). What graphs gain on a GPU, and that a
graphed run equals an eager one there, `make gpu-check` measures.

* a bad input is refused as itself wherever it falls: a warm-up (eager) step, the step captured, a replayed step;
* a failed capture stops the run with a message saying how to continue, its checkpoint intact, and a resume in a
  fresh call continues it (eagerly, with graphs off);
* a graph is used only after its first replay succeeded; the capture is ended when its body raises;
* `CUDA_GRAPHS=0` (`runtime.cuda_graphs_off`, from ROMAE_CUDA_GRAPHS) turns graphs off; batches that change length
  (a TokenStore, length buckets) are refused, as the plan refuses them.
"""

from __future__ import annotations

import pytest
import torch

import romae.masking
import standin_graphs
from romae import graphs, runtime
from romae.config import RoMAEConfig, TrainConfig, size
from romae.model import RoMAEForPrediction
from romae.train import ArrayDataset, fit

CPU = torch.device("cpu")


@pytest.fixture
def stand_in_graphs(monkeypatch):
    """`fit` on the CPU takes the CUDA-graph path with stand-ins; yields the GraphedSteps it builds."""
    yield standin_graphs.install(monkeypatch)


def _classifier_data(bad_at: int | None = None, n: int = 32):
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 3, (n,), generator=g)
    if bad_at is not None:
        labels[bad_at] = 9
    return ArrayDataset(values=torch.randn(n, 6, 3, generator=g), positions=torch.rand(n, 2, 6, generator=g) * 5,
                        labels=labels)


def _classifier():
    cfg = RoMAEConfig(token_dim=3, n_axes=2, encoder=size("tiny", depth=1), n_outputs=3, head="cls")
    return RoMAEForPrediction(cfg, seed=0)


def _cfg(**kw):
    return TrainConfig(**{**dict(epochs=1, batch_size=4, lr=1e-3, warmup_steps=1, log_every=100, progress=False,
                                 seed=0), **kw})


def test_stand_in_graphs_train_as_eager_steps(stand_in_graphs):
    data = _classifier_data()
    graphed = fit(_classifier(), data, _cfg(), device="cpu")
    steps = stand_in_graphs[0]
    assert steps.replays == 8 - graphs.WARMUP and steps.eager == graphs.WARMUP  # one signature: one graph
    eager = fit(_classifier(), data, _cfg(cuda_graphs=False), device="cpu")
    assert len(stand_in_graphs) == 1  # graphs off: none built
    for k, v in eager.model.state_dict().items():
        assert torch.allclose(graphed.model.state_dict()[k], v, atol=1e-6), k


@pytest.mark.parametrize("batch", [1, graphs.WARMUP, graphs.WARMUP + 2], ids=["warm-up", "capture", "replay"])
def test_a_bad_label_is_refused_wherever_it_falls(stand_in_graphs, monkeypatch, batch):
    from romae import train

    monkeypatch.setattr(train.precheck, "before_fit", lambda *a, **k: None)  # the model's own check, in the step
    perm = torch.randperm(32, generator=torch.Generator().manual_seed(0))  # epoch 0's order (engine.train_one_epoch)
    data = _classifier_data(bad_at=int(perm[4 * batch + 1]))  # in the batch-th batch
    with pytest.raises(ValueError, match=r"class labels must lie in \[0, n_outputs=3\)") as e:
        fit(_classifier(), data, _cfg(), device="cpu")
    assert "in the training data" not in str(e.value)  # not the up-front check: the step's
    assert not any(s.failed for s in stand_in_graphs)  # a data error, never taken for a failed capture
    if batch < graphs.WARMUP:  # read before the capture, from an eager step: the sample named
        assert "found 9" in str(e.value) or "sample" in str(e.value)


def test_a_failed_capture_stops_the_run_and_a_resume_continues_it(stand_in_graphs, monkeypatch, tmp_path):
    def broken(self, static_in):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(graphs.GraphedSteps, "_record", broken)
    data, cfg = _classifier_data(), _cfg(epochs=2, checkpoint_every=2)
    with pytest.raises(graphs.CaptureFailed, match=r"capture failed \(RuntimeError: operation not permitted.*"
                                                    r"fresh process.*CUDA_GRAPHS=0"):
        fit(_classifier(), data, cfg, device="cpu", out_dir=tmp_path)
    assert stand_in_graphs[0].failed.startswith("RuntimeError")
    from romae import checkpoint

    at = int(checkpoint.read_config(tmp_path / "checkpoint")["step"])
    assert at == 2  # the checkpoint before the capture step (3), intact
    runtime.cuda_graphs_off("CUDA_GRAPHS=0")
    try:
        resumed = fit(_classifier(), data, cfg, device="cpu", out_dir=tmp_path)
    finally:
        runtime.cuda_graphs_off(None)
    assert resumed.steps == 16 and len(stand_in_graphs) == 1  # continued eagerly: no graphs built
    straight = fit(_classifier(), data, _cfg(epochs=2, cuda_graphs=False), device="cpu")
    for k, v in straight.model.state_dict().items():
        assert torch.allclose(resumed.model.state_dict()[k], v, atol=1e-6), k


def test_a_graph_is_kept_only_after_its_first_replay_succeeded(monkeypatch):
    monkeypatch.setattr(torch.cuda, "Stream", lambda dev: None)
    monkeypatch.setattr(graphs.GraphedSteps, "_side", lambda self, batch: self.step(batch))

    class Failing:
        def replay(self):
            raise RuntimeError("an illegal memory access was encountered")

    monkeypatch.setattr(graphs.GraphedSteps, "_record", lambda self, static_in: (Failing(), (torch.zeros(()),)))
    steps = graphs.GraphedSteps(lambda b: (b["x"].sum(),), CPU)
    with romae.masking.deferred_checks():
        for i in range(graphs.WARMUP):
            steps({"x": torch.full((3,), float(i))})
        with pytest.raises(RuntimeError, match="illegal memory access"):
            steps({"x": torch.ones(3)})
    assert steps.graphs == {}  # never replayed for a later batch of that shape


def test_the_capture_is_ended_when_its_body_raises(monkeypatch):
    calls = []

    class Graph:
        def capture_begin(self, **kw):
            calls.append(("begin", kw.get("capture_error_mode")))

        def capture_end(self):
            calls.append("end")
            raise RuntimeError("operation failed due to a previous error during capture")

    monkeypatch.setattr(torch.cuda, "Stream", lambda dev: None)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", Graph)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda dev=None: type("S", (), {"synchronize": lambda s: None})())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: __import__("contextlib").nullcontext())

    def step(batch):
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    steps = graphs.GraphedSteps(step, CPU)
    with pytest.raises(RuntimeError, match="not permitted when stream is capturing"):
        steps._record({"x": torch.ones(1)})
    assert calls == [("begin", "thread_local"), "end"]


def test_cuda_graphs_0_turns_graphs_off_everywhere(monkeypatch):
    cuda = torch.device("cuda")
    assert graphs.wanted(TrainConfig(), cuda, 1, None)
    runtime.cuda_graphs_off("CUDA_GRAPHS=0")
    try:
        assert not graphs.wanted(TrainConfig(), cuda, 1, None)
        assert not graphs.wanted(TrainConfig(cuda_graphs=True), cuda, 1, None)  # the switch wins
        assert runtime.cuda_graphs_barred() == "CUDA_GRAPHS=0"
    finally:
        runtime.cuda_graphs_off(None)
    with pytest.raises(ValueError, match="a reason .a non-empty string. or None, got ''"):
        runtime.cuda_graphs_off("")
    from romae.compendium import settings

    for text, on in (("0", False), ("1", True), ("", True)):
        monkeypatch.setenv("ROMAE_CUDA_GRAPHS", text)
        settings.cuda_graphs_from_env()
        assert graphs.allowed() is on
    monkeypatch.setenv("ROMAE_CUDA_GRAPHS", "off")
    with pytest.raises(ValueError, match="ROMAE_CUDA_GRAPHS must be 0 or 1, got 'off'"):
        settings.cuda_graphs_from_env()
    monkeypatch.delenv("ROMAE_CUDA_GRAPHS")
    settings.cuda_graphs_from_env()
    assert graphs.allowed()


def test_batches_that_change_length_are_refused_as_the_plan_refuses_them():
    from romae.store import TokenStore

    store = TokenStore.__new__(TokenStore)  # its type is what decides
    assert graphs.fits(_classifier_data(), TrainConfig())
    assert not graphs.fits(store, TrainConfig())
    assert not graphs.fits(_classifier_data(), TrainConfig(length_buckets=4))
    with pytest.raises(ValueError, match=r"cuda_graphs=True\) needs batches of one length \(a TokenStore"):
        graphs.fits(store, TrainConfig(cuda_graphs=True))


def test_cuda_graphs_0_reaches_every_notebook_kernel_through_the_runner(tmp_path):
    """`make reproduce CUDA_GRAPHS=0` -> `--cuda-graphs 0` (tests/test_run_limits.py: through make) -> the kernels'
    environment -> `romae.compendium.settings` -> `runtime.cuda_graphs_barred()` in the notebook, and the run's first
    line says so."""
    import subprocess
    import sys

    import nbformat
    import pandas as pd
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[
        new_code_cell('profile: str = "smoke"  # smoke | quick | paper\nreports_dir: str = ""',
                      metadata={"tags": ["parameters"]}),
        new_code_cell("import romae.compendium\nfrom romae import graphs, runtime\nimport torch\n"
                      "from romae.config import TrainConfig\n"
                      "assert runtime.cuda_graphs_barred() == 'CUDA_GRAPHS=0', runtime.cuda_graphs_barred()\n"
                      "assert not graphs.wanted(TrainConfig(), torch.device('cuda'), 1, None)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "nb").mkdir()
    nbformat.write(nb, tmp_path / "nb" / "01_graphs_off.ipynb")
    proc = subprocess.run([sys.executable, "-m", "romae.runner.reproduce", "--profile", "smoke", "--only", "01",
                           "--notebooks", str(tmp_path / "nb"), "--reports", str(tmp_path / "r"), "--timeout", "120",
                           "--cuda-graphs", "0"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    runs = pd.read_csv(tmp_path / "r" / "runs.csv", keep_default_na=False)
    assert runs.status.tolist() == ["ok"], out
    assert "CUDA graphs off (CUDA_GRAPHS=0)" in out.splitlines()[0] or "CUDA graphs off (CUDA_GRAPHS=0)" in out
    bad = subprocess.run([sys.executable, "-m", "romae.runner.reproduce", "--cuda-graphs", "2"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--cuda-graphs" in bad.stderr


def test_the_probe_passes_stand_in_graphs_and_catches_a_replay_that_repeats_its_draws(monkeypatch):
    """gpu-check's graphed-against-eager probe (`romae.runner.launch.graphed_against_eager`), on the CPU: a faithful
    stand-in is equal, one whose replays repeat their capture's random draws DIFFERS (a classifier without random
    draws could not tell), and a run that fell back to eager steps is NOT GRAPHED, not 'equal'."""
    from romae.runner import launch

    made = standin_graphs.install(monkeypatch)
    good = launch.graphed_against_eager(CPU)
    assert good["status"] == "equal within tolerance", good["status"]
    assert good["cuda_graphs"]["graphs"] == 2 and good["cuda_graphs"]["replayed_steps"] > 0 and len(made) == 1
    assert good["steps"] >= 20
    standin_graphs.install(monkeypatch, repeat_draws=True)
    bad = launch.graphed_against_eager(CPU)
    assert bad["status"].startswith("DIFFERS") and bad["max_weight_rel_diff"] > 10 * bad["tolerance"], bad["status"]
    monkeypatch.setattr(graphs, "MAX_GRAPHS", 0)  # every step eager: a graphed run that graphed nothing
    none = launch.graphed_against_eager(CPU)
    assert none["status"] == "NOT GRAPHED: 0 graph(s) for 2 batch shapes", none["status"]


@pytest.mark.parametrize("step", [1, graphs.WARMUP, graphs.WARMUP + 2], ids=["warm-up", "capture", "replay"])
def test_a_nan_value_is_refused_as_a_value_error_wherever_it_falls(stand_in_graphs, step):
    """What tests/test_cuda_fit.py asks of a GPU, on the CPU's stand-ins: a ValueError (never a RuntimeError of the
    non-finite loss), naming the sample in an eager step and saying how to have it named in a graphed one."""
    perm = torch.randperm(32, generator=torch.Generator().manual_seed(0))
    data = _classifier_data()
    data.tensors["values"][int(perm[4 * step + 1]), 2, 0] = float("nan")
    with pytest.raises(ValueError, match="values must be finite") as e:
        fit(_classifier(), data, _cfg(), device="cpu")
    assert ("in sample" in str(e.value)) if step < graphs.WARMUP else "cuda_graphs=False) names the sample" in str(
        e.value)
