"""Issue 44 on the CPU: no host-device sync inside a training step, the accelerator's exact changes (fused RMSNorm,
head padding) equal to the CPU's path, the capturable optimiser, and CUDA graphs' bookkeeping with stand-in graphs.
What graphs and kernels gain on a GPU is measured by `make gpu-check`, never asserted here."""

from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn.functional as F
from torch.optim.lr_scheduler import LambdaLR
from torch.utils._python_dispatch import TorchDispatchMode

import romae.masking
from romae import engine, feeding, graphs
from romae.config import RoMAEConfig, TrainConfig, size
from romae.masking import trim_padding
from romae.kernels import RMSNorm, _RMSNorm, attend, fused_rms_norm
from romae.model import RoMAEForPrediction, RoMAEForPreTraining
from romae.train import ArrayDataset, fit


class _Syncs(TorchDispatchMode):
    """Ops that read a device value back to the host, or turn host data into a tensor (on a GPU: a copy from
    pageable memory, which waits for the device)."""

    OPS = {"_local_scalar_dense", "item", "nonzero", "is_nonzero", "equal", "lift_fresh"}

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func._overloadpacket.__name__ in self.OPS:
            self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def _no_device_asserts(*args, **kwargs):
    raise AssertionError("a device-side assert: on CUDA it leaves the context unusable")


@contextlib.contextmanager
def _accelerator_path(monkeypatch):
    """The CPU takes an accelerator's path: checks deferred, losses read at history rows only."""
    monkeypatch.setattr(romae.masking, "_async_checks", lambda device: True)
    monkeypatch.setattr(torch, "_assert_async", _no_device_asserts)
    yield


def _pretraining_data(n=24, N=12, given_masks=True):
    g = torch.Generator().manual_seed(0)
    values, positions = torch.randn(n, N, 3, generator=g), torch.rand(n, 2, N, generator=g) * 10
    pad = torch.zeros(n, N, dtype=torch.bool)
    pad[::3, 9:] = True  # some samples shorter: trim_padding has work on some batches
    pad[:, 11:] = True  # the last column padding everywhere
    tensors = dict(values=values, positions=positions, pad_mask=pad)
    if given_masks:  # 4 of each sample's real tokens hidden, topped up to 5 hidden with a padded slot
        mask = torch.zeros(n, N, dtype=torch.bool)
        mask[:, 1:5] = True
        mask[:, 11] = True
        tensors["mask"] = mask
    return ArrayDataset(**tensors)


def _fit(data, model_fn, transform=None, steps=6, log_every=100):
    cfg = TrainConfig(epochs=2, batch_size=8, lr=1e-3, warmup_steps=2, log_every=log_every, progress=False, seed=0)
    return fit(model_fn(), data, cfg, device="cpu", transform=transform, max_steps=steps)


def _steps_reads(monkeypatch, data, model_fn, transform=None, steps=6):
    """Host reads inside each training step's device work (`engine._train_step`: forward, backward, update). What
    runs before it, the transform and the mask's count, runs on the host batch (on a GPU: never resident with a
    transform, `feeding.feed_mode`), where reading costs no sync."""
    reads, per_step = _Syncs(), []
    original = engine._train_step

    def train_step(*args, **kwargs):
        before = len(reads.seen)
        with reads:
            out = original(*args, **kwargs)
        per_step.append(len(reads.seen) - before)
        return out

    monkeypatch.setattr(engine, "_train_step", train_step)
    result = _fit(data, model_fn, transform, steps)
    return per_step, result, reads.seen


def _pretrainer():
    cfg = RoMAEConfig(token_dim=3, n_axes=2, encoder=size("tiny", depth=1), decoder=size("tiny-shallow"),
                      use_cls=True, mask_ratio=0.5)
    return RoMAEForPreTraining(cfg, seed=0)


def _classifier():
    cfg = RoMAEConfig(token_dim=3, n_axes=2, encoder=size("tiny", depth=1), n_outputs=3, head="cls")
    return RoMAEForPrediction(cfg, seed=0)


@pytest.mark.parametrize("case", ["given masks, trimmed", "drawn masks", "classifier"])
def test_a_training_step_reads_nothing_back_and_trains_bitwise_as_the_cpu_path(monkeypatch, case):
    data = _pretraining_data(given_masks=case == "given masks, trimmed")
    if case == "classifier":
        data = ArrayDataset(**{k: v for k, v in data.tensors.items() if k != "mask"},
                            labels=torch.arange(len(data)) % 3)
    model_fn = _classifier if case == "classifier" else _pretrainer
    transform = trim_padding if case == "given masks, trimmed" else None
    plain = _fit(data, model_fn, transform)
    with _accelerator_path(monkeypatch):
        per_step, deferred, seen = _steps_reads(monkeypatch, data, model_fn, transform)
    assert per_step == [0] * len(per_step), seen
    # the row's mean loss: summed in float32 on the device, in float64 on the host
    assert [r["loss"] for r in deferred.history if "loss" in r] == pytest.approx(
        [r["loss"] for r in plain.history if "loss" in r], rel=1e-6)
    a, b = plain.model.state_dict(), deferred.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_history_row_reads_its_checks_losses_and_sums_in_one_sync(monkeypatch):
    calls = []
    real = romae.masking._read_together
    monkeypatch.setattr(romae.masking, "_read_together", lambda parts: calls.append(len(parts)) or real(parts))
    with _accelerator_path(monkeypatch):
        result = _fit(_pretraining_data(), _pretrainer, trim_padding, steps=6, log_every=3)
    # one read per history row (steps 3 and 6), holding its steps' checks and losses and the window's two sums
    assert len(calls) == 2 and all(n > 3 + 2 for n in calls)
    assert [r["step"] for r in result.history if "loss" in r] == [3, 6]


def test_a_bad_given_mask_is_refused_on_the_host_naming_the_sample(monkeypatch):
    data = _pretraining_data()
    data.tensors["mask"][13, 6] = True  # sample 13 hides one more token than the others
    with _accelerator_path(monkeypatch), pytest.raises(ValueError, match="every sample must hide the same number"):
        _fit(data, _pretrainer, trim_padding)
    data = _pretraining_data()
    data.tensors["pad_mask"][12, 4:] = True  # sample 12: 4 real tokens, all hidden (5 hidden, as the others)
    data.tensors["mask"][12] = False
    data.tensors["mask"][12, [0, 1, 2, 3, 11]] = True
    with _accelerator_path(monkeypatch), pytest.raises(ValueError, match="every real .* of sample 12 of the training"):
        _fit(data, _pretrainer, trim_padding)


def test_a_resident_dataset_counts_its_masks_once_on_the_host():
    data = _pretraining_data()
    feeder = feeding.Feeder(data, torch.device("cpu"), "resident")
    idx = torch.tensor([0, 4, 7])
    assert feeder.hidden_count(feeder.get(idx), idx) == 5
    data.tensors["mask"][4, 7] = True
    feeder = feeding.Feeder(data, torch.device("cpu"), "resident")
    with pytest.raises(ValueError, match="every sample must hide the same number of tokens"):
        feeder.hidden_count(feeder.get(idx), idx)
    assert feeding.feed_mode(data, torch.device("cpu"), transform=True) == "host"


# ----------------------------------------------------------------------------- the accelerator's exact kernels


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
def test_fused_rms_norm_equals_the_cpu_paths_forward_and_backward():
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(4, 7, 60, generator=g), 1 + 0.1 * torch.randn(60, generator=g)
    for dtype, tol in ((torch.float32, 1e-6), (torch.bfloat16, 1e-2)):
        xa, wa = x.to(dtype).clone().requires_grad_(), w.clone().requires_grad_()
        xb, wb = x.to(dtype).clone().requires_grad_(), w.clone().requires_grad_()
        ref = _RMSNorm.apply(xa, wa, 1e-12) if dtype == torch.float32 else F.rms_norm(xa, (60,), wa, 1e-12)
        out = fused_rms_norm(xb, wb, 1e-12)
        assert out.dtype == ref.dtype == dtype  # what the path it replaces returns: x's dtype
        torch.testing.assert_close(out, ref, rtol=tol, atol=tol)
        dy = torch.randn(ref.shape, generator=g)
        ref.backward(dy)
        out.backward(dy)
        torch.testing.assert_close(xb.grad.float(), xa.grad.float(), rtol=tol, atol=tol)
        torch.testing.assert_close(wb.grad, wa.grad, rtol=tol * 10, atol=tol * 10)
    assert RMSNorm(60)(x).dtype == torch.float32  # the CPU keeps its own path


@pytest.mark.parametrize("masked", [False, True])
def test_padding_heads_to_a_multiple_of_8_is_exact(masked):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, 9, 60, generator=g, requires_grad=True) for _ in range(3))
    mask = None
    if masked:
        mask = torch.ones(2, 1, 1, 9, dtype=torch.bool)
        mask[0, ..., 6:] = False
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        plain = attend(q, k, v, mask)
        grads = torch.autograd.grad(plain.sum(), (q, k, v))
        padded = attend(q, k, v, mask, pad_heads=True)
        pgrads = torch.autograd.grad(padded.sum(), (q, k, v))
    assert padded.shape == plain.shape
    # the zeros add exact zeros; the products may sum in another order (a wider matrix): float rounding only
    torch.testing.assert_close(padded, plain, rtol=1e-6, atol=1e-6)
    for a, b in zip(grads, pgrads):
        torch.testing.assert_close(b, a, rtol=1e-6, atol=1e-6)
    # the scale is the true head size's: without it the padded call would differ
    wrong = F.scaled_dot_product_attention(*(F.pad(t, (0, 4)) for t in (q, k, v)), attn_mask=mask)[..., :60]
    assert not torch.allclose(wrong, plain)


# ----------------------------------------------------------------------------- capturable steps


def _adamw_run(capture: bool, steps=6):
    torch.manual_seed(0)
    m = torch.nn.Linear(8, 4)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.05, fused=True)
    sched = LambdaLR(opt, lambda s: (s + 1) / 7)
    if capture:
        graphs.capturable(opt, torch.device("cpu"))
    lrs = []
    for _ in range(steps):
        lrs.append(engine.host_lr(opt, sched))
        opt.zero_grad()
        m(torch.randn(3, 8)).pow(2).sum().backward()
        opt.step()
        sched.step()
    return [p.detach().clone() for p in m.parameters()], lrs, opt, sched


def test_a_tensor_learning_rate_updates_bitwise_as_the_number_and_checkpoints_as_numbers():
    ref, ref_lrs, _, _ = _adamw_run(False)
    got, lrs, opt, sched = _adamw_run(True)
    assert torch.is_tensor(opt.param_groups[0]["lr"]) and opt.param_groups[0]["capturable"]
    assert lrs == ref_lrs  # the history's lr: the scheduler's own float, never read from the device
    assert all(torch.equal(a, b) for a, b in zip(ref, got))
    state = graphs.portable(opt.state_dict())
    assert isinstance(state["param_groups"][0]["lr"], float) and not state["param_groups"][0]["capturable"]
    assert all(isinstance(v, float) for v in graphs.portable(sched.state_dict())["_last_lr"])
    fresh = torch.optim.AdamW(torch.nn.Linear(8, 4).parameters(), lr=1.0, fused=True)
    fresh.load_state_dict(state)
    assert fresh.param_groups[0]["lr"] == pytest.approx(ref_lrs[-1] * 7 / 6 * 7 / 7)  # resumes at the next step's


def test_graphs_are_wanted_only_where_they_apply():
    cfg, cpu, cuda = TrainConfig(), torch.device("cpu"), torch.device("cuda")
    assert not graphs.wanted(cfg, cpu, 1, None)  # default: off on the CPU
    assert graphs.wanted(cfg, cuda, 1, None)  # ...on for one CUDA process
    assert not graphs.wanted(TrainConfig(micro_batch=8), cuda, 1, None)
    assert not graphs.wanted(TrainConfig(cuda_graphs=False), cuda, 1, None)
    with pytest.raises(ValueError, match=r"cuda_graphs=True\) needs a CUDA device, no micro-batches"):
        graphs.wanted(TrainConfig(cuda_graphs=True, micro_batch=8), cpu, 1, None)
    with pytest.raises(ValueError, match="TrainConfig.cuda_graphs must be True or False, got 'yes'"):
        TrainConfig(cuda_graphs="yes")


class _FakeGraph:
    """A stand-in for a captured CUDA graph on the CPU: replay re-runs the step on the static inputs and writes its
    outputs and its checks' results into the captured tensors, as a real replay rewrites its buffers (and, like
    one, leaves nothing in the Python-side collection of checks)."""

    def __init__(self, step, static_in):
        self.step, self.static_in = step, static_in
        self.outs, self.checks = self._run(collect=False)

    def _run(self, collect=True):
        state = romae.masking._STATE
        kept, state.pending = state.pending, []
        try:
            outs = self.step(self.static_in)
            checks = [e[0] for e in state.pending]
        finally:
            state.pending = kept
        if not collect:  # the capture: its checks stay collected, for GraphedSteps to take
            kept.extend((c,) + e[1:] for c, e in zip(checks, _last_entries(self.step, self.static_in)))
        return outs, checks

    def replay(self):
        outs, checks = self._run()
        for static, new in zip(self.outs + tuple(self.checks), tuple(outs) + tuple(checks)):
            static.copy_(new)


def _last_entries(step, static_in):
    state = romae.masking._STATE
    kept, state.pending = state.pending, []
    try:
        step(static_in)
        return list(state.pending)
    finally:
        state.pending = kept


def test_graphed_steps_warm_up_capture_per_signature_and_replay(monkeypatch):
    monkeypatch.setattr(torch.cuda, "Stream", lambda dev: None)
    monkeypatch.setattr(graphs.GraphedSteps, "_side", lambda self, batch: self.step(batch))
    monkeypatch.setattr(graphs.GraphedSteps, "_record",
                        lambda self, static_in: (lambda g: (g, g.outs))(_FakeGraph(self.step, static_in)))
    monkeypatch.setattr(romae.masking, "_async_checks", lambda device: True)

    def step(batch):
        romae.masking._require((batch["x"] < 100).all(), "x must stay below 100")
        return batch["x"].sum() * 2, batch["x"].abs().max()

    steps = graphs.GraphedSteps(step, torch.device("cpu"))
    with romae.masking.deferred_checks():
        outs = [steps({"x": torch.full((4,), float(i))}) for i in range(6)]
        assert [float(o[0]) for o in outs] == [8.0 * i for i in range(6)]  # each step its own batch's result
        assert outs[4][0] is not outs[5][0]  # cloned out of the graph's buffers, which the next replay rewrites
        assert steps.eager == graphs.WARMUP and steps.replays == 6 - graphs.WARMUP and len(steps.graphs) == 1
        romae.masking.flush_checks()  # the warm-up steps' checks, read: all passed
        steps({"x": torch.ones(2)})  # a short last batch: a signature of its own, eager until warmed up
        assert steps.eager == graphs.WARMUP + 1 and len(steps.graphs) == 1
        steps({"x": torch.full((4,), 500.0)})  # a replayed step whose input fails the captured check
        steps({"x": torch.full((4,), 1.0)})  # ...and a later one that passes: the failure is kept
        with pytest.raises(ValueError, match=r"x must stay below 100 \(in a training step replayed from a CUDA"):
            romae.masking.flush_checks()
        assert romae.masking.flush_checks([torch.tensor(2.5)]) == [2.5]  # reported once
    steps.close()
    assert not romae.masking._STATE.graphs


def test_the_launch_benchmark_runs_its_eager_variants_on_the_cpu(monkeypatch, tmp_path):
    # the GPU measurement of `make gpu-check`, smoke-run on the CPU with a tiny stand-in workload: every eager
    # variant measured (graphs and kernel counts need CUDA), the switches left as they were
    from romae.compendium import plan
    from romae.runner import launch

    tiny = plan.Training("tiny", "finetune", _classifier().cfg, TrainConfig(batch_size=4), n_tokens=6, samples=8)
    monkeypatch.setattr(launch, "workloads", lambda: {"tiny": tiny})
    out = tmp_path / "launch.json"
    assert launch.main(["--device", "cpu", "--steps", "1", "--out", str(out)]) == 0
    import json

    rows = json.loads(out.read_text())["rows"]
    assert [r["variant"] for r in rows] == [v[0] for v in launch.VARIANTS if not v[2]]
    assert all(r["ms_per_step"] > 0 and r["speedup"] > 0 for r in rows)
    import romae.kernels

    assert romae.kernels.ACCELERATOR == {"fused_norm": True, "pad_heads": True}


def test_under_graphs_trim_padding_cuts_to_a_few_lengths():
    from romae.masking import bucket_lengths, trimmed_to

    assert bucket_lengths(300) == (64, 128, 256, 300) and bucket_lengths(64) == (64,) and bucket_lengths(10) == (10,)
    with pytest.raises(ValueError, match="N >= 1 and first >= 1, got N=0"):
        bucket_lengths(0)
    pad = torch.ones(2, 300, dtype=torch.bool)
    pad[0, :70] = False  # the longest sample: 70 real tokens
    batch = dict(values=torch.randn(2, 300, 1), positions=torch.rand(2, 1, 300), pad_mask=pad)
    assert trim_padding(batch)["values"].shape[1] == 70  # exact, as on the CPU
    lengths = graphs.trim_lengths(ArrayDataset(**batch))
    with trimmed_to(lengths):
        cut = trim_padding(batch)
    assert lengths == (64, 128, 256, 300) and cut["values"].shape[1] == cut["pad_mask"].shape[1] == 128
    assert cut["positions"].shape[-1] == 128 and cut["pad_mask"][:, 70:].all()  # the extra columns are padding
    assert trim_padding(batch)["values"].shape[1] == 70  # the context is left as it was
    assert graphs.trim_lengths(ArrayDataset(values=torch.randn(2, 5, 1))) is None  # nothing to trim


def test_a_failed_capture_stops_with_what_to_do(monkeypatch):
    """Issue 55: no silent fallback to eager steps in the same process (after an invalidated capture the allocator
    may keep it registered); the run stops, naming the error and how to continue (tests/test_graph_safety.py: the
    run inside fit, and its resume)."""
    monkeypatch.setattr(torch.cuda, "Stream", lambda dev: None)
    monkeypatch.setattr(graphs.GraphedSteps, "_side", lambda self, batch: self.step(batch))

    def broken(self, static_in):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(graphs.GraphedSteps, "_record", broken)
    steps = graphs.GraphedSteps(lambda b: (b["x"].sum(), b["x"].max()), torch.device("cpu"))
    with romae.masking.deferred_checks():
        outs = [steps({"x": torch.full((3,), float(i))}) for i in range(graphs.WARMUP)]
        with pytest.raises(graphs.CaptureFailed, match=r"capture failed \(RuntimeError: operation not permitted.*"
                                                        r"fresh process"):
            steps({"x": torch.full((3,), 3.0)})
    assert [float(o[0]) for o in outs] == [3.0 * i for i in range(graphs.WARMUP)]
    assert steps.failed.startswith("RuntimeError") and steps.eager == graphs.WARMUP and steps.replays == 0
    assert not steps.graphs and not romae.masking._STATE.pending
