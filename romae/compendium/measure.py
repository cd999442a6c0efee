"""Measurements: model sizes (Table 8), the relative speed of positional encodings (Table 9), the roofline of
a training step, and light curves of ELAsTiCC's shape for measuring the host's batches. Called by notebook 03
(`romae.experiments.compute`), by the plan (`romae.compendium.plan`, `--device this`) and by the command line
`python -m romae.runner.bench`.

Speed is measured here, never asserted in tests. Table 9 reproduces the workload of App. B.2:
RoMAE-small encoder, tiny-shallow decoder, 224x224 RGB images cut into 16x16 patches (196 tokens of
768 values), 75 % of tokens hidden, 2-D positions, no [CLS], one AdamW step at a time, for

* absolute:   the authors' 1-D sin/cos table over the token index, added at the input;
* quantized:  RoPE at the integer grid positions;
* continuous: RoPE at fresh random real-valued positions every step (grid + uniform jitter).

Variants alternate step by step (the order rotates each round) and every step is timed on its own.
Relative speed (as the paper's table: absolute = 1, higher = faster) is the median, over all cycles,
of t_absolute / t_variant for the steps taken side by side, so slow drifts of the machine cancel and
stray hiccups do not count; steps/s is 1 / median step time. The ratio of the medians is reported
too (`relative_speed_of_medians`).

Roofline: how close one training step (forward, backward, AdamW) comes to the speed of the device's
plain matrix products *of that step's own shapes*. The step's FLOPs are counted by
`torch.utils.flop_counter` (taught the CPU's attention kernels, which it does not count); every
matrix product the step runs (mm, addmm, bmm, and attention as the bmm's of its scores and weighted
sum, 2 forward and 5 backward, the flop counter's convention) is recorded with its shapes, strides
and dtype and re-run alone, in the same process, on the same device (the fastest of 7 timings); the
sum of those times is the time a step would take if all its work ran at the speed of plain matmuls.
`fraction` = that ideal time / the measured step time (1 = nothing but matmul work at full speed;
element-wise work, copies, the optimiser and slow kernels pull it down). The limit is optimistic on
purpose: a product re-run alone finds its operands in cache.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

from ..config import SIZES, RoMAEConfig, size
from ..model import Encoder, RoMAEForPrediction, RoMAEForPreTraining
from ..patching import grid_positions
from .reference import paper_value
from .report import device_label

TABLE9_VARIANTS = {"absolute": "absolute", "quantized": "rope_quantized", "continuous": "rope"}


def table9_config(pos_encoding: str = "rope") -> RoMAEConfig:
    """App. B.2's model: RoMAE-small encoder, tiny-shallow decoder, 196 tokens of 16x16x3, 75 % hidden,
    2-D positions, no [CLS], norm-pix targets."""
    return RoMAEConfig(token_dim=768, n_axes=2, encoder=size("small"), decoder=size("tiny-shallow"),
                       pos_encoding=pos_encoding, use_cls=False, mask_ratio=0.75, normalize_targets=True)


def size_rows() -> list[dict]:
    """Table 8: each size's shape and its block parameter count, counted on an instantiated stack."""
    rows = []
    for name, shape in SIZES.items():
        cfg = size(name)
        n_params = sum(p.numel() for p in Encoder(cfg, n_axes=1).blocks.parameters())
        assert n_params == cfg.block_params()  # the closed form in config.py agrees with the module
        try:
            paper = paper_value("table8_model_sizes", name, "block_params_M")
        except KeyError:
            paper = None  # custom sizes (pendulum) are not in Table 8
        rows.append(dict(size=name, **shape, block_params=n_params, block_params_M=n_params / 1e6,
                         paper_M=paper,
                         rel_diff=None if paper is None else n_params / 1e6 / paper - 1.0))
    return rows


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_steps(step, device: torch.device, n: int) -> list[float]:
    """Seconds of each of `n` calls of step(), each timed alone (the device synchronised around it)."""
    times = []
    for _ in range(n):
        _sync(device)
        t0 = time.perf_counter()
        step()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return times


def _interleaved(step, names: list[str], rounds: int, steps: int, device: torch.device, progress: bool,
                 describe) -> dict[str, list[float]]:
    """Each name's step times: the names alternate step by step (their order rotating each round), each
    step timed alone; `describe(median seconds)` labels a name in the per-round progress line."""
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        k = r % len(names)
        for _ in range(steps):
            for name in names[k:] + names[:k]:
                times[name] += timed_steps(lambda: step(name), device, 1)
        if progress:
            print(f"round {r + 1}/{rounds}: " + ", ".join(
                f"{n} {describe(statistics.median(times[n][-steps:]))}" for n in names), file=sys.stderr)
    return times


def _paired(a: list[float], b: list[float]) -> float:
    """Median of t_a / t_b over steps taken side by side (slow drifts of the machine cancel)."""
    return statistics.median([x / y for x, y in zip(a, b)])


def table9(batch: int = 8, rounds: int = 3, steps: int = 20, warmup: int = 3, device: str = "cpu",
           seed: int = 0, progress: bool = True) -> dict:
    """Median training steps per second of the three positional encodings, and speeds relative to absolute."""
    dev = torch.device(device)
    torch.manual_seed(seed)
    grid = (14, 14)  # 224 / 16
    n_tokens, token_dim = grid[0] * grid[1], 16 * 16 * 3
    values = torch.randn(batch, n_tokens, token_dim, device=dev)
    grid_pos = grid_positions(grid, device=dev).expand(batch, -1, -1).contiguous()  # [B, 2, 196]

    models, opts = {}, {}
    for name, pe in TABLE9_VARIANTS.items():
        torch.manual_seed(seed)  # same weights for every variant
        models[name] = RoMAEForPreTraining(table9_config(pe)).to(dev).train()
        opts[name] = torch.optim.AdamW(models[name].parameters(), lr=1e-4, fused=True)

    def step(name: str) -> None:
        pos = grid_pos
        if name == "continuous":  # fresh real-valued positions: nothing can be cached between steps
            pos = grid_pos + torch.rand_like(grid_pos) - 0.5
        opts[name].zero_grad(set_to_none=True)
        _, loss = models[name](values, pos)  # a fresh random 75 % mask inside, as in training
        loss.backward()
        opts[name].step()

    for name in models:  # warm-up: allocator, kernels, autograd graphs
        for _ in range(warmup):
            step(name)
    step_times = _interleaved(step, list(models), rounds, steps, dev, progress, lambda t: f"{1 / t:.2f} steps/s")
    out = {}
    for name, t in step_times.items():
        # paired: each absolute step against the same variant's step next to it in time
        out[name] = {"steps_per_s": 1.0 / statistics.median(t),
                     "relative_speed": _paired(step_times["absolute"], t),
                     "relative_speed_of_medians": statistics.median(step_times["absolute"]) / statistics.median(t),
                     "paper_relative_speed": paper_value("table9_compute", name, "relative_speed"),
                     "step_seconds": t}
    out["settings"] = dict(batch=batch, rounds=rounds, steps_per_round=steps, warmup=warmup,
                           device=device_label(dev), torch=torch.__version__,
                           threads=torch.get_num_threads(), tokens=n_tokens, mask_ratio=0.75)
    return out


# ----------------------------------------------------------------------------- roofline

def _table9_workload(batch: int, dev: torch.device, gen: torch.Generator):
    """App. B.2's step (Table 9): RoMAE-small + tiny-shallow decoder, 196 tokens of 16x16x3, 75 % hidden,
    no [CLS], 2-D RoPE at fresh real-valued positions every step."""
    values = torch.randn(batch, 196, 768, generator=gen).to(dev)
    grid = grid_positions((14, 14), device=dev).expand(batch, -1, -1)
    return RoMAEForPreTraining(table9_config()), lambda: dict(values=values, positions=grid + torch.rand_like(grid) - 0.5)


def _pendulum_workload(batch: int, dev: torch.device, gen: torch.Generator):
    """Notebook 14's step: Table 14's size (d 60, 2 heads, 2 blocks, FFN 30), 50 kept 24x24 frames as
    tokens at their frame numbers, [CLS], one (sin, cos) regression per frame."""
    cfg = RoMAEConfig(token_dim=576, n_axes=1, encoder=size("pendulum"), use_cls=True, head="tokens",
                      n_outputs=2, task="regression")
    values = torch.rand(batch, 50, 576, generator=gen).to(dev)
    frames = torch.rand(batch, 100, generator=gen).argsort(1)[:, :50].sort(1).values  # 50 of 100 frames
    positions = frames[:, None].double().to(dev)
    labels = torch.randn(batch, 50, 2, generator=gen).to(dev)
    return RoMAEForPrediction(cfg), lambda: dict(values=values, positions=positions, labels=labels)


def _physionet_workload(batch: int, dev: torch.device, gen: torch.Generator):
    """Notebook 16's step: RoMAE-tiny + [CLS] + tiny-shallow decoder, one token per observation (a
    scalar at (hour, variable)), records of 300-600 observations padded to the longest (PhysioNet 2012
    has 438 on average), 50 % of the real tokens hidden."""
    cfg = RoMAEConfig(token_dim=1, n_axes=2, encoder=size("tiny"), decoder=size("tiny-shallow"),
                      use_cls=True, mask_ratio=0.5)
    n = torch.randint(300, 601, (batch,), generator=gen)
    N = int(n.max())
    pad_mask = torch.arange(N)[None] >= n[:, None]
    values = torch.randn(batch, N, 1, generator=gen)
    positions = torch.stack((torch.rand(batch, N, generator=gen) * 48,
                             torch.randint(0, 37, (batch, N), generator=gen).double()), 1).double()
    batch_ = dict(values=values, positions=positions, pad_mask=pad_mask)
    batch_ = {k: v.to(dev) for k, v in batch_.items()}
    return RoMAEForPreTraining(cfg), lambda: batch_


WORKLOADS = {"table9": (_table9_workload, 16), "pendulum": (_pendulum_workload, 16),
             "physionet": (_physionet_workload, 16)}

_aten = torch.ops.aten
_PRODUCTS = {_aten.mm.default, _aten.addmm.default, _aten.bmm.default, _aten.baddbmm.default}
_ATTENTION = {  # fused attention kernels: (forward?, index of q in the arguments)
    **{getattr(_aten, n).default: (True, 0) for n in (
        "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention")
       if hasattr(_aten, n)},
    **{getattr(_aten, n).default: (False, 1) for n in (
        "_scaled_dot_product_flash_attention_for_cpu_backward", "_scaled_dot_product_flash_attention_backward",
        "_scaled_dot_product_efficient_attention_backward", "_scaled_dot_product_cudnn_attention_backward")
       if hasattr(_aten, n)},
}


def _cpu_attention_flops(q, k, v, *args, out_val=None, **kwargs) -> int:
    return flop_counter.sdpa_flop_count(q.shape, k.shape, v.shape)


def _cpu_attention_backward_flops(grad, q, k, v, *args, out_val=None, **kwargs) -> int:
    return flop_counter.sdpa_backward_flop_count(grad.shape, q.shape, k.shape, v.shape)


_cpu_attention_flops._get_raw = _cpu_attention_backward_flops._get_raw = True  # they take the tensors
# torch.utils.flop_counter counts the CUDA attention kernels but not the CPU's: the same formulas
_CPU_ATTENTION_FLOPS = {_aten._scaled_dot_product_flash_attention_for_cpu: _cpu_attention_flops,
                        _aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_attention_backward_flops}


def _layout(t: torch.Tensor) -> tuple:
    return tuple(t.shape), tuple(t.stride()), t.dtype


def _bmm(b: int, m: int, k: int, n: int, dtype, a_t: bool = False, b_t: bool = False) -> tuple:
    """A bmm [b, m, k] @ [b, k, n] as recorded; a_t / b_t: that operand is the transposed view of a
    contiguous tensor (as k^T in q @ k^T)."""
    a = ((b, m, k), (m * k, 1, m) if a_t else (m * k, k, 1), dtype)
    bb = ((b, k, n), (k * n, 1, k) if b_t else (k * n, n, 1), dtype)
    return (_aten.bmm.default, (a, bb))


def _attention_products(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, forward: bool) -> list[tuple]:
    """The bmm's attention does: q @ k^T and p @ v forward; backward recomputes q @ k^T and does
    dO @ v^T, p^T @ dO, dS @ k, dS^T @ q (torch.utils.flop_counter's count)."""
    *bh, L, E = q.shape
    S, Ev = k.shape[-2], v.shape[-1]
    b = 1
    for d in bh:
        b *= d
    dt = q.dtype
    fwd = [_bmm(b, L, E, S, dt, b_t=True), _bmm(b, L, S, Ev, dt)]
    if forward:
        return fwd
    return fwd[:1] + [_bmm(b, L, Ev, S, dt, b_t=True), _bmm(b, S, L, Ev, dt, a_t=True),
                      _bmm(b, L, S, E, dt), _bmm(b, S, L, E, dt, a_t=True)]


class _ProductLog(TorchDispatchMode):
    """Records every matrix product a step runs: Counter {(op, operand layouts): calls}, and which
    fused attention kernels ran (none: attention fell back to explicit bmm + softmax, O(N^2) memory)."""

    def __init__(self):
        super().__init__()
        self.calls: Counter = Counter()
        self.attention: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in _PRODUCTS:
            first = 1 if func in (_aten.addmm.default, _aten.baddbmm.default) else 0  # skip the added term
            self.calls[(func, tuple(_layout(t) for t in args[first:first + 2]))] += 1
        elif func in _ATTENTION:
            forward, i = _ATTENTION[func]
            self.attention[func._overloadpacket.__name__] += 1
            for sig in _attention_products(*args[i:i + 3], forward):
                self.calls[sig] += 1
        return func(*args, **(kwargs or {}))


def _product_flops(sig: tuple) -> int:
    (shape_a, _, _), (shape_b, _, _) = sig[1]
    batch = shape_a[0] if len(shape_a) == 3 else 1
    return 2 * batch * shape_a[-2] * shape_a[-1] * shape_b[-1]


def _strided(shape, stride, dtype, dev) -> torch.Tensor:
    n = 1 + sum((s - 1) * st for s, st in zip(shape, stride))
    return torch.randn(n, device=dev).to(dtype).as_strided(shape, stride)


def _time_product(sig: tuple, dev: torch.device, min_seconds: float = 0.03, repeats: int = 7) -> float:
    """Seconds of one call of the recorded product, run alone on fresh operands of its layout: the
    fastest of `repeats` timed batches of calls (noise only adds time; this is a limit)."""
    a, b = (_strided(*lay, dev) for lay in sig[1])
    product = _aten.mm.default if a.dim() == 2 else _aten.bmm.default  # addmm, baddbmm: their product

    def run():
        product(a, b)

    for _ in range(2):
        run()
    _sync(dev)
    t0 = time.perf_counter()
    run()
    _sync(dev)
    n = max(1, int(min_seconds / max(time.perf_counter() - t0, 1e-7)))
    times = []
    for _ in range(repeats):
        _sync(dev)
        t0 = time.perf_counter()
        for _ in range(n):
            run()
        _sync(dev)
        times.append((time.perf_counter() - t0) / n)
    return min(times)


def _breakdown(step, dev: torch.device, steps: int = 3) -> dict:
    """Where a step's time goes (torch.profiler, self time per event; device time on CUDA): matrix
    products, attention kernels, the optimiser, and the rest (element-wise work, copies, compiled
    kernels, Python and dispatch overhead)."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    with profile(activities=acts) as prof:
        for _ in range(steps):
            step()
        _sync(dev)
    attr = "self_device_time_total" if dev.type == "cuda" else "self_cpu_time_total"
    events = {e.key: getattr(e, attr) / 1e6 / steps for e in prof.key_averages()}
    groups = {"matmul": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"),
              "attention": ("aten::_scaled_dot_product",), "optimizer": ("aten::_fused_adam",)}
    out = {g: sum(sec for name, sec in events.items() if name.startswith(pre)) for g, pre in groups.items()}
    out["other"] = sum(events.values()) - sum(out.values())
    rest = sorted(((n, sec) for n, sec in events.items() if sec > 0
                   and not any(n.startswith(p) for pre in groups.values() for p in pre)), key=lambda x: -x[1])
    return {"seconds_per_step": out, "top_other": dict(rest[:10])}


def roofline(workload: str = "table9", batch: int | None = None, steps: int = 10, warmup: int = 3,
             device: str = "cpu", dtype: str = "float32", compile: bool = False, breakdown: bool = False,
             seed: int = 0, min_seconds: float = 2.0, product_repeats: int = 7) -> dict:
    """One workload's training step against the plain-matmul limit of its own shapes (module docstring).

    The step is timed `steps` times, repeated until the timed steps add up to `min_seconds`; each of its
    products alone the fastest of `product_repeats` batches of calls."""
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; choose one of {', '.join(WORKLOADS)}")
    if dtype not in ("float32", "bfloat16"):
        raise ValueError(f"dtype must be 'float32' or 'bfloat16' (autocast), got {dtype!r}")
    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be >= 1 and warmup >= 0, got {steps}, {warmup}")
    dev = torch.device(device)
    build, default_batch = WORKLOADS[workload]
    batch = default_batch if batch is None else batch
    torch.manual_seed(seed)
    model, make_batch = build(batch, dev, torch.Generator().manual_seed(seed))
    model = model.to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    run_model = model
    compile_seconds = None
    if compile:
        from ..train import compile_model

        run_model = compile_model(model)
    autocast = (lambda: torch.autocast(dev.type, dtype=torch.bfloat16)) if dtype == "bfloat16" \
        else contextlib.nullcontext

    def step(net=run_model) -> None:
        opt.zero_grad(set_to_none=True)
        with autocast():
            _, loss = net(**make_batch())
        loss.backward()
        opt.step()

    if compile:  # the first step compiles: timed alone, then the usual warm-up
        compile_seconds = timed_steps(step, dev, 1)[0]
    for _ in range(warmup):
        step()
    times = timed_steps(step, dev, steps)
    while sum(times) < min_seconds:  # tiny steps: enough of them for a stable median
        times += timed_steps(step, dev, steps)
    # FLOPs and products are those of the eager model (compiling does the same matrix work)
    counter, log = FlopCounterMode(display=False, custom_mapping=_CPU_ATTENTION_FLOPS), _ProductLog()
    with counter:
        step(model)
    with log:
        step(model)
    products = [dict(op=str(sig[0]).split(".")[-2], a=list(sig[1][0][0]), b=list(sig[1][1][0]),
                     a_stride=list(sig[1][0][1]), b_stride=list(sig[1][1][1]), dtype=str(sig[1][0][2]),
                     calls=n, flops=_product_flops(sig), seconds=_time_product(sig, dev, repeats=product_repeats))
                for sig, n in log.calls.items()]
    flops = counter.get_total_flops()
    mm_flops = sum(p["calls"] * p["flops"] for p in products)
    mm_seconds = sum(p["calls"] * p["seconds"] for p in products)
    limit = mm_flops / mm_seconds  # FLOP/s of the step's own products run alone
    t = statistics.median(times)
    out = dict(workload=workload, device=device_label(dev), dtype=dtype, compiled=compile,
               compile_seconds=compile_seconds, batch=batch, torch=torch.__version__,
               threads=torch.get_num_threads(), step_seconds=t, step_seconds_all=times,
               step_gflop=flops / 1e9, achieved_gflops=flops / t / 1e9,
               matmul_gflop=mm_flops / 1e9, matmul_limit_gflops=limit / 1e9,
               ideal_step_seconds=flops / limit, fraction=flops / limit / t,
               attention_kernels=dict(log.attention), products=products)
    if breakdown:
        out["breakdown"] = _breakdown(step, dev)
    return out


# ----------------------------------------------------------------------------- feeding

def write_feed_shard(folder, name: str, table) -> None:
    """A `feed_table` (or a part of one) as a shard of a `romae.store` TokenStore, laid out as ELAsTiCC's."""
    from .. import store
    from ..data.elasticc import BANDS

    store.write_shard(folder, name, table, id="object_id", time="mjd", variable="band", value=["flux", "flux_err"],
                      flag="photflag", variables=list(BANDS))


def feed_table(n: int, seed: int = 0):
    """`n` random light curves of ELAsTiCC's shape, drawn as `romae.data.elasticc.generate` draws them but
    vectorised (seconds for 20,000): every third has 80 points per band (over ATAT's cap of 65 per band),
    the others 10-200 in random bands; PHOTFLAG marks detections and each one's brightest point as the
    trigger (so `alert_mask` has work to do). A long table as `romae.store.write_shard` takes it."""
    import numpy as np
    import pandas as pd

    from ..data.elasticc import BANDS, DETECTED, TRIGGER

    rng = np.random.default_rng(seed)
    k = np.where(np.arange(n) % 3 == 0, 80 * len(BANDS), rng.integers(10, 201, n))
    oid = np.repeat(np.arange(n), k)
    t = rng.uniform(0.0, 1095.0, len(oid))
    t = t[np.lexsort((t, oid))]  # sorted within each light curve
    err = rng.lognormal(1.0, 0.3, len(oid))
    flux = 50.0 * np.sin(2 * np.pi * t / (5.0 + 10.0 * (oid % 20))) + err * rng.standard_normal(len(oid))
    flag = np.where(np.abs(flux) / err > 5, DETECTED, 0)
    flag[np.lexsort((flux, oid))[np.cumsum(k) - 1]] = TRIGGER  # the brightest point of each
    band = np.asarray(BANDS)[rng.integers(0, len(BANDS), len(oid))]
    return pd.DataFrame(dict(object_id=oid, mjd=60000.0 + t, band=band, flux=flux.astype(np.float32),
                             flux_err=err.astype(np.float32), photflag=flag.astype(np.int32)))
