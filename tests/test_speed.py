"""Tests of the speed work: the roofline benchmark, the hand-derived RMSNorm backward, the sync-free
(accelerator) path exercised on the CPU, and fit's torch.compile option. Speeds themselves are
measured by `python -m romae.runner.bench`, never asserted here."""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import romae.masking
from romae.runner.bench import _ProductLog, main, roofline
from romae.config import RoMAEConfig, TrainConfig, size
from romae.model import RMSNorm, RoMAEForPrediction, RoMAEForPreTraining, _RMSNorm
from romae.train import ArrayDataset, fit

# ----------------------------------------------------------------------------- roofline


def test_roofline_products_account_for_every_counted_flop():
    r = roofline("pendulum", batch=2, steps=1, warmup=0, min_seconds=0)
    # every FLOP the flop counter sees is in a recorded product (mm, addmm, bmm, attention's bmm's)
    assert r["matmul_gflop"] == pytest.approx(r["step_gflop"], rel=1e-9)
    assert r["step_gflop"] > 0 and r["step_seconds"] > 0 and r["matmul_limit_gflops"] > 0
    assert r["ideal_step_seconds"] == pytest.approx(r["step_gflop"] * 1e9 / (r["matmul_limit_gflops"] * 1e9))
    assert r["fraction"] == pytest.approx(r["ideal_step_seconds"] / r["step_seconds"])
    assert all(p["seconds"] > 0 and p["calls"] >= 1 for p in r["products"])
    assert r["compiled"] is False and r["compile_seconds"] is None
    # no padding here: attention ran through the fused CPU kernel, forward and backward once per block
    assert r["attention_kernels"] == {"_scaled_dot_product_flash_attention_for_cpu": 2,
                                      "_scaled_dot_product_flash_attention_for_cpu_backward": 2}


def test_product_log_sees_attention_as_bmms():
    cfg = RoMAEConfig(token_dim=4, n_axes=1, encoder=size("tiny", depth=2), decoder=size("tiny-shallow"),
                      use_cls=False, mask_ratio=0.5)
    model = RoMAEForPreTraining(cfg)
    log = _ProductLog()
    with log:
        _, loss = model(torch.randn(3, 8, 4), torch.arange(8.0).expand(3, 1, 8))
        loss.backward()
    bmm = sum(n for (op, _), n in log.calls.items() if op is torch.ops.aten.bmm.default)
    # 2 encoder + 2 decoder blocks (tiny-shallow), each attention: 2 bmm forward, 5 backward
    assert bmm == (2 + size("tiny-shallow").depth) * 7


def test_roofline_cli_json(capsys, tmp_path):
    out = tmp_path / "r.json"
    assert main(["roofline", "--workload", "physionet", "--batch", "2", "--steps", "1", "--warmup", "0",
                 "--min-seconds", "0", "--json", "--out", str(out)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["workload"] == "physionet" and json.loads(out.read_text())["fraction"] == res["fraction"]


def test_roofline_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown workload 'imagenet'"):
        roofline("imagenet")
    with pytest.raises(ValueError, match="dtype must be"):
        roofline("pendulum", dtype="float16")
    with pytest.raises(SystemExit):
        main(["roofline", "--steps", "0"])


# ----------------------------------------------------------------------------- RMSNorm


def test_rmsnorm_backward_matches_autograd_of_the_formula():
    x = torch.randn(3, 5, 8, dtype=torch.float64, requires_grad=True)
    w = torch.randn(8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w: _RMSNorm.apply(x, w, 1e-6), (x, w))
    norm = RMSNorm(8, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(w.float())
    xf = x.detach().float().requires_grad_()
    xr = x.detach().float().requires_grad_()
    wr = w.detach().float().requires_grad_()
    g = torch.randn(3, 5, 8)
    (norm(xf) * g).sum().backward()
    (F.rms_norm(xr, (8,), wr, 1e-6) * g).sum().backward()
    torch.testing.assert_close(xf.grad, xr.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(norm.weight.grad, wr.grad, atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------- no host syncs


class _HostReads(TorchDispatchMode):
    """Counts the ops that read a device value back to the host (a sync on GPUs)."""

    READS = {"_local_scalar_dense", "item", "nonzero", "is_nonzero", "equal"}

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func._overloadpacket.__name__ in self.READS:
            self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.fixture
def accelerator_checks(monkeypatch):
    """The CPU takes the path of an accelerator: checks deferred (as within fit), the loss not read every step,
    and never a device-side assert."""
    monkeypatch.setattr(romae.masking, "_async_checks", lambda device: True)
    monkeypatch.setattr(torch, "_assert_async", _no_device_asserts)
    with romae.masking.deferred_checks():
        yield


def _no_device_asserts(*args, **kwargs):
    raise AssertionError("a device-side assert: on CUDA it leaves the context unusable")


@pytest.mark.parametrize("padded", [False, True])
def test_pretraining_step_reads_nothing_back(accelerator_checks, padded):
    cfg = RoMAEConfig(token_dim=4, n_axes=2, encoder=size("tiny", depth=1), decoder=size("tiny-shallow"),
                      use_cls=True, mask_ratio=0.5)
    model = RoMAEForPreTraining(cfg)
    opt = torch.optim.AdamW(model.parameters(), fused=True)
    values, positions = torch.randn(3, 10, 4), torch.rand(3, 2, 10) * 5
    pad = torch.zeros(3, 10, dtype=torch.bool)
    pad[0, 7:] = True
    reads = _HostReads()
    with reads:
        _, loss = model(values, positions, pad_mask=pad if padded else None)
        loss.backward()
        opt.step()
    assert reads.seen == []


@pytest.mark.parametrize("head", ["cls", "mean", "tokens"])
def test_prediction_step_reads_nothing_back(accelerator_checks, head):
    cfg = RoMAEConfig(token_dim=4, n_axes=1, encoder=size("tiny", depth=1), use_cls=head == "cls", head=head,
                      n_outputs=3)
    model = RoMAEForPrediction(cfg)
    values, positions = torch.randn(3, 10, 4), torch.rand(3, 1, 10) * 5
    pad = torch.zeros(3, 10, dtype=torch.bool)
    pad[1, 6:] = True
    labels = torch.randint(0, 3, (3, 10) if head == "tokens" else (3,))
    reads = _HostReads()
    with reads:
        _, loss = model(values, positions, labels=labels, pad_mask=pad)
        loss.backward()
    assert reads.seen == []


def test_deferred_check_fails_at_the_flush_with_the_full_message(accelerator_checks):
    cfg = RoMAEConfig(token_dim=4, n_axes=1, encoder=size("tiny", depth=1), decoder=size("tiny-shallow"))
    values = torch.randn(2, 6, 4)
    values[1, 2, 0] = float("nan")
    RoMAEForPreTraining(cfg)(values, torch.arange(6.0).expand(2, 1, 6))  # launched, not read back
    with pytest.raises(ValueError, match=r"values must be finite, found nan in sample 1 of the batch, token 2"):
        romae.masking.flush_checks()
    romae.masking.flush_checks()  # read once: nothing left


def test_checks_outside_a_deferred_collection_are_read_at_once_on_an_accelerator(monkeypatch):
    monkeypatch.setattr(romae.masking, "_async_checks", lambda device: True)
    monkeypatch.setattr(torch, "_assert_async", _no_device_asserts)
    cfg = RoMAEConfig(token_dim=4, n_axes=1, encoder=size("tiny", depth=1), n_outputs=3)
    model = RoMAEForPrediction(cfg)
    with pytest.raises(ValueError, match=r"class labels must lie in \[0, n_outputs=3\), found 7"):
        model(torch.randn(2, 6, 4), torch.arange(6.0).expand(2, 1, 6), labels=torch.tensor([1, 7]))


@pytest.mark.parametrize("bad", ["values", "positions", "labels", "float_labels", "max_len"])
def test_fit_on_the_accelerator_path_refuses_bad_inputs_naming_the_dataset_sample(monkeypatch, bad):
    # what a CUDA run meets, on the CPU: every check deferred to the next logged step, the error naming the
    # sample by its index in the dataset, and the forward never handed an out-of-range index (no kernel assert)
    monkeypatch.setattr(romae.masking, "_async_checks", lambda device: True)
    monkeypatch.setattr(torch, "_assert_async", _no_device_asserts)
    g = torch.Generator().manual_seed(0)
    n, N = 32, 8
    values, positions = torch.randn(n, N, 4, generator=g), torch.arange(float(N)).expand(n, 1, N).clone()
    regression = bad == "float_labels"
    labels = torch.randn(n, generator=g) if regression else torch.randint(0, 3, (n,), generator=g)
    cfg = RoMAEConfig(token_dim=4, n_axes=1, encoder=size("tiny", depth=1), n_outputs=1 if regression else 3,
                      task="regression" if regression else "classification",
                      pos_encoding="absolute" if bad == "max_len" else "rope", max_len=N if bad == "max_len" else 4096)
    expected = {"values": "values must be finite, found inf in sample 21 of the training data, token 4",
                "positions": "positions must be finite, found nan in sample 21 of the training data, token 4",
                "labels": "class labels must lie in [0, n_outputs=3), found -2",
                "float_labels": "labels must be finite, found nan for sample 21 of the training data",
                "max_len": "more tokens than max_len=8 rows of the absolute sin/cos table"}[bad]
    if bad == "values":
        values[21, 4, 1] = float("inf")
    elif bad == "positions":
        positions[21, 0, 4] = float("nan")
    elif bad == "labels":
        labels[21] = -2
    elif bad == "float_labels":
        labels[21] = float("nan")
    data = ArrayDataset(values=values, positions=positions, labels=labels)
    train_cfg = TrainConfig(epochs=2, batch_size=8, lr=1e-3, warmup_steps=0, log_every=3, progress=False, seed=0)
    with pytest.raises(ValueError) as info:
        fit(RoMAEForPrediction(cfg), data, train_cfg, device="cpu")
    assert expected in str(info.value)


class _Lin(torch.nn.Module):
    def __init__(self, nan_after: int | None = None):
        super().__init__()
        torch.manual_seed(0)
        self.net, self.calls, self.nan_after = torch.nn.Linear(3, 1), 0, nan_after

    def forward(self, x, y):
        self.calls += 1
        loss = ((self.net(x).squeeze(-1) - y) ** 2).mean()
        return None, loss * float("nan") if self.nan_after and self.calls > self.nan_after else loss


def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 3, generator=g)
    return ArrayDataset(x=x, y=x.sum(1))


def test_deferred_loss_check_matches_and_catches_nan(monkeypatch, tmp_path):
    cfg = TrainConfig(epochs=2, batch_size=16, lr=1e-2, warmup_steps=0, log_every=4, progress=False)
    ref = fit(_Lin(), _data(), cfg, device="cpu")
    monkeypatch.setattr(romae.masking, "_async_checks", lambda device: True)
    res = fit(_Lin(), _data(), cfg, device="cpu")
    assert [r["loss"] for r in res.history] == pytest.approx([r["loss"] for r in ref.history], rel=1e-6)
    with pytest.raises(RuntimeError, match=r"non-finite training loss nan at step 3\b"):
        fit(_Lin(nan_after=2), _data(), cfg, out_dir=tmp_path, device="cpu")
    assert not (tmp_path / "checkpoint").exists()  # found at the first row, before anything was saved


# ----------------------------------------------------------------------------- torch.compile


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="torch.compile on the CPU needs a C++ compiler")
def test_fit_compile_option_trains_alike_and_reports_compile_time():
    cfg = TrainConfig(epochs=1, batch_size=16, lr=1e-2, warmup_steps=0, log_every=1, progress=False)
    eager = fit(_Lin(), _data(), cfg, device="cpu")
    comp = fit(_Lin(), _data(), TrainConfig(**{**cfg.to_dict(), "compile": True}), device="cpu")
    event = [r for r in comp.history if r.get("event") == "compiled"]
    assert len(event) == 1 and event[0]["step"] == 1 and event[0]["first_step_seconds"] > 0
    losses = [r["loss"] for r in comp.history if "loss" in r]
    assert losses == pytest.approx([r["loss"] for r in eager.history], rel=1e-4)
    assert math.isfinite(losses[-1])


def test_finite_check_fast_path_falls_back_when_the_sum_overflows():
    cfg = RoMAEConfig(token_dim=4, n_axes=1, encoder=size("tiny", depth=1), n_outputs=2)
    model = RoMAEForPrediction(cfg)
    values = torch.full((2, 5, 4), 3e38)  # finite, but their float32 sum is inf
    out, _ = model.prepare_inputs(values, torch.arange(5.0).expand(2, 1, 5), None)
    assert torch.equal(out, values)
    values[1, 3, 2] = float("inf")
    with pytest.raises(ValueError, match="values must be finite, found inf in sample 1 of the batch, token 3"):
        model.prepare_inputs(values, torch.arange(5.0).expand(2, 1, 5), None)


def test_authors_bench_names_what_is_missing(tmp_path):
    from romae.runner.bench import _load_authors

    with pytest.raises(FileNotFoundError, match="checkout of https://github.com/Chromeilion/RoMAE"):
        _load_authors(tmp_path)


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="torch.compile on the CPU needs a C++ compiler")
def test_compiled_romae_pretraining_draws_the_eager_masks():
    """Through RoMAE (RoPE's autograd.Function, complex phasors, the random mask drawn in the forward):
    compiled training gives eager's losses, because random draws keep eager's generator."""
    g = torch.Generator().manual_seed(0)
    data = ArrayDataset(values=torch.randn(32, 12, 3, generator=g), positions=torch.rand(32, 2, 12, generator=g) * 9)
    cfg = RoMAEConfig(token_dim=3, n_axes=2, encoder=size("tiny", depth=1), decoder=size("tiny-shallow", depth=1),
                      use_cls=True, mask_ratio=0.5)
    losses = []
    for compile in (False, True):
        torch.manual_seed(0)
        tc = TrainConfig(epochs=2, batch_size=16, lr=1e-3, warmup_steps=0, log_every=1, progress=False,
                         compile=compile)
        res = fit(RoMAEForPreTraining(cfg), data, tc, device="cpu")
        losses.append([r["loss"] for r in res.history if "loss" in r])
    assert len(losses[1]) == 4 and losses[1] == pytest.approx(losses[0], rel=1e-4)
