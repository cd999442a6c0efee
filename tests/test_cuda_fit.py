"""`fit` on a CUDA GPU (skipped without one; `make gpu-check` runs them): FP32 and BF16, with and without
padding, micro-batches, the deferred non-finite checks, the fused attention with padding, and the ways
batches reach the GPU. Numbers are compared with the CPU path at loose tolerances (other kernels)."""

from __future__ import annotations

import pytest
import torch

from romae import feeding
from romae.config import RoMAEConfig, TrainConfig, size
from romae.model import RoMAEForPrediction, RoMAEForPreTraining
from romae.train import ArrayDataset, fit

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

N = 24


def tokens(n=64, padded=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = dict(values=torch.randn(n, N, 4, generator=g), positions=torch.cumsum(torch.rand(n, 1, N, generator=g), -1),
               labels=torch.randint(0, 3, (n,), generator=g))
    if padded:
        out["pad_mask"] = torch.arange(N) >= torch.randint(6, N + 1, (n,), generator=g)[:, None]
    return ArrayDataset(**out)


def model(kind="pretrain"):
    torch.manual_seed(0)
    enc = size("tiny-shallow", d_model=48, n_heads=3, d_ff=96)
    cfg = RoMAEConfig(token_dim=4, encoder=enc, decoder=enc)
    return RoMAEForPreTraining(cfg) if kind == "pretrain" else RoMAEForPrediction(
        RoMAEConfig(token_dim=4, encoder=enc, n_outputs=3))


def cfg(**kw):
    return TrainConfig(**{**dict(epochs=2, batch_size=16, lr=1e-3, progress=False, log_every=1, seed=0), **kw})


@pytest.mark.parametrize("kind", ["pretrain", "finetune"])
@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("bf16", [False, True])
def test_fit_on_cuda_matches_the_cpu(kind, padded, bf16):
    gpu = fit(model(kind), tokens(padded=padded), cfg(bf16=bf16), device="cuda")
    assert next(gpu.model.parameters()).is_cuda
    losses = [r["loss"] for r in gpu.history if "loss" in r]
    assert all(torch.isfinite(torch.tensor(losses)))
    if kind == "finetune":  # no random masks: the CPU run sees the same batches (masks are drawn per device)
        cpu = [r["loss"] for r in fit(model(kind), tokens(padded=padded), cfg(bf16=bf16), device="cpu").history
               if "loss" in r]
        assert losses == pytest.approx(cpu, rel=5e-2 if bf16 else 1e-3)


def test_micro_batches_on_cuda_give_the_whole_batch_update():
    data = tokens(padded=True)
    whole = fit(model("finetune"), data, cfg(), device="cuda").model.state_dict()
    micro = fit(model("finetune"), data, cfg(micro_batch=5), device="cuda").model.state_dict()
    for k in whole:
        torch.testing.assert_close(whole[k], micro[k], rtol=1e-4, atol=1e-5, msg=k)


_BAD_INPUTS = """
import sys, torch
sys.path.insert(0, "tests")
from test_cuda_fit import tokens, model, cfg
from romae.train import fit
data = tokens(padded=False)
step = {step}  # the optimiser step whose batch holds the bad sample (4 a epoch; CUDA graphs: 0-2 eager, 3 captured)
perm = torch.randperm(64, generator=torch.Generator().manual_seed(step // 4))  # that epoch's order (seed 0 + epoch)
sample = int(perm[16 * (step % 4) + 2])
data.tensors[{key!r}][sample{where}] = {value}
try:
    fit(model("finetune"), data, cfg(log_every=2), device="cuda")  # CUDA graphs on: the default
    print("NOT REFUSED")
except Exception as e:  # a ValueError naming the check; anything else (a RuntimeError) fails the test
    print("REFUSED", type(e).__name__ if not isinstance(e, ValueError) else "ValueError", e, "| SAMPLE", sample)
# the CUDA context is still usable: no device-side assert was raised
print("AFTER", float(torch.ones(3, device="cuda").sum()))
"""


@pytest.mark.parametrize("step", [1, 3, 6], ids=["eager warm-up step", "captured step", "replayed step"])
@pytest.mark.parametrize("key, where, value, message", [
    ("values", ", 3, 0", 'float("nan")', "values must be finite"),
    ("labels", "", "9", "class labels must lie in [0, n_outputs=3), found 9"),  # refused before training
])
def test_bad_inputs_on_cuda_are_refused_clearly_and_leave_the_device_usable(key, where, value, message, step):
    """Issue 55: with CUDA graphs on (the default) a bad input is refused as a ValueError wherever its batch falls;
    an eager step's refusal names the sample, a graphed one's says how to have it named (cuda_graphs=False)."""
    # in a subprocess: were it a device-side assert, it would poison the CUDA context of every later test
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", _BAD_INPUTS.format(key=key, where=where, value=value, step=step)],
                         cwd=root, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0 and f"REFUSED ValueError {message}" in out.stdout and "AFTER 3.0" in out.stdout, text
    if key == "values":
        sample = out.stdout.split("| SAMPLE ")[1].split()[0]
        assert (f"in sample {sample} of the training data, token 3" in out.stdout if step < 3
                else "TrainConfig(cuda_graphs=False) names the sample" in out.stdout), text


def test_fused_attention_with_padding_ignores_padded_tokens():
    m = model("finetune").cuda().eval()
    d = tokens(n=8)
    b = {k: v.cuda() for k, v in d.tensors.items()}
    out, _ = m(**b)
    b["values"] = b["values"].masked_fill(b["pad_mask"].unsqueeze(-1), 1e3)  # garbage where padded
    torch.testing.assert_close(m(**b)[0], out, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["resident", "prefetch"])
def test_feeding_modes_on_cuda(mode, monkeypatch):
    ref = fit(model("finetune"), tokens(), cfg(), device="cuda").model.state_dict()
    monkeypatch.setattr(feeding, "feed_mode", lambda data, dev, **kw: mode)
    got = fit(model("finetune"), tokens(), cfg(), device="cuda").model.state_dict()
    for k in ref:
        torch.testing.assert_close(ref[k], got[k], rtol=1e-5, atol=1e-6, msg=k)


def test_small_dataset_is_resident_on_the_gpu():
    assert feeding.feed_mode(tokens(), torch.device("cuda")) == "resident"


@pytest.mark.parametrize("bf16", [False, True])
def test_cuda_graphs_train_as_eager_steps(bf16):
    # issue 44: the steps replayed from CUDA graphs (the default on CUDA) against eager ones from the same seed, on
    # a classifier (no random draws: a pre-training's masks would compare the generator's offsets, not the steps);
    # 66 samples in batches of 16: a short last batch of 2, a second signature that runs eagerly
    data = tokens(n=66)
    runs = {}
    for on in (False, True):
        res = fit(model("finetune"), data, cfg(epochs=3, bf16=bf16, cuda_graphs=on), device="cuda")
        runs[on] = res
    losses = {on: [r["loss"] for r in res.history if "loss" in r] for on, res in runs.items()}
    tol = 1e-2 if bf16 else 1e-4
    assert losses[True] == pytest.approx(losses[False], rel=tol)
    eager, graphed = runs[False].model.state_dict(), runs[True].model.state_dict()
    for k in eager:
        torch.testing.assert_close(graphed[k], eager[k], rtol=tol, atol=tol)
    event = [r for r in runs[True].history if r.get("event") == "cuda_graphs"]
    assert event and event[0]["graphs"] == 1 and event[0]["replayed_steps"] > 0
    assert not [r for r in runs[False].history if r.get("event") == "cuda_graphs"]


def test_cuda_training_steps_do_not_synchronise():
    # between history rows nothing is read back: the sync debug mode raises on any synchronising call
    data = tokens(n=64)
    torch.cuda.set_sync_debug_mode("error")
    try:
        with pytest.raises(RuntimeError):  # the mode is live: a read-back raises
            torch.ones(1, device="cuda").item()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    import romae.engine as engine
    from romae import graphs

    original, calls = engine._train_step, []

    def strict(*args, **kwargs):  # every step but a graph's capture (once per batch shape: it waits for the device)
        calls.append(1)
        capture = kwargs.get("graphs") is not None and len(calls) == graphs.WARMUP + 1
        torch.cuda.set_sync_debug_mode("default" if capture else "error")
        try:
            return original(*args, **kwargs)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    mp = pytest.MonkeyPatch()
    mp.setattr(engine, "_train_step", strict)
    try:
        fit(model(), data, cfg(epochs=2, log_every=100, cuda_graphs=False), device="cuda")
        calls.clear()
        fit(model(), data, cfg(epochs=2, log_every=100), device="cuda")
    finally:
        mp.undo()
