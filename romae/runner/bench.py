"""Benchmarks: model sizes (Table 8), the relative speed of positional encodings (Table 9), the
roofline of a training step and the host's batches from a token store (`feed`).

    python -m romae.runner.bench sizes [--json]
    python -m romae.runner.bench table9 [--batch 8] [--rounds 3] [--steps 5] [--device cpu|cuda] [--json]
    python -m romae.runner.bench roofline [--workload table9|pendulum|physionet|all] [--device cpu|cuda]
                                   [--dtype float32|bfloat16] [--compile] [--breakdown] [--json]
    python -m romae.runner.bench plan --profile paper [--device h100|a100|cpu|this] [--gpus N] [--gpu-memory GB]
                               [--precision fp32|tf32|bf16|all] [--only 12,13] [--out plan.json] [--markdown]
                               [--readme README.md]     (see romae.compendium.plan)
    python -m romae.runner.bench feed [--objects 20000] [--batch 4096,16384] [--epochs 3] [--json]

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

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

from ..config import SIZES, RoMAEConfig, size
from ..model import Encoder, RoMAEForPrediction, RoMAEForPreTraining
from ..patching import grid_positions
from ..compendium.reference import paper_value
from ..compendium.report import device_label

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


def feed(objects: int = 20000, batches: tuple[int, ...] = (4096, 16384), epochs: int = 3, shards: int = 2,
         seed: int = 0, progress: bool = True) -> dict:
    """Seconds per `romae.store.TokenStore.batch` (the host's share of a training step on a store) on
    `objects` random ELAsTiCC-shaped light curves (`feed_table`) in `shards` shards, as the ELAsTiCC
    recipe views them: thinned to 65 points per band, with and without ATAT's alert mask. Each batch size
    runs `epochs` epochs of whole random batches on a fresh view: the first epoch apart (what a view
    computes once, e.g. a cached `keep`), the median of the later ones; wall and CPU seconds (this process's:
    on a machine shared with other work, the steadier of the two)."""
    import statistics
    import tempfile

    import numpy as np

    from .. import store
    from ..data.elasticc import MAX_PER_BAND, alert_mask

    views = {"thinned": dict(max_per_variable=MAX_PER_BAND),
             "thinned+alert": dict(max_per_variable=MAX_PER_BAND, keep=alert_mask)}
    rows = []
    with tempfile.TemporaryDirectory(prefix="romae-feed-") as tmp:
        obs = feed_table(objects, seed)
        cut = np.searchsorted(obs.object_id.to_numpy(), np.linspace(0, objects, shards + 1)[1:-1].astype(int))
        for i, part in enumerate(np.split(np.arange(len(obs)), cut)):
            write_feed_shard(tmp, f"part-{i}", obs.iloc[part])
        rng = np.random.default_rng(seed)
        for name, opts in views.items():
            for b in batches:
                data = store.TokenStore(tmp, **opts)
                wall, cpu = [], []  # per epoch: (wall, CPU) seconds of each batch
                for _ in range(epochs):
                    perm = torch.as_tensor(rng.permutation(len(data)))
                    wall.append([])
                    cpu.append([])
                    for j in range(max(1, len(data) // b)):
                        t0, c0 = time.perf_counter(), time.process_time()
                        data.batch(perm[j * b:(j + 1) * b])
                        wall[-1].append(time.perf_counter() - t0)
                        cpu[-1].append(time.process_time() - c0)
                later = slice(1 if epochs > 1 else 0, None)
                row = dict(view=name, batch=min(b, len(data)), batches_per_epoch=len(wall[0]),
                           first_epoch_seconds=statistics.median(wall[0]),
                           first_epoch_cpu_seconds=statistics.median(cpu[0]),
                           seconds=statistics.median([t for e in wall[later] for t in e]),
                           cpu_seconds=statistics.median([t for e in cpu[later] for t in e]))
                rows.append(row)
                if progress:
                    print(f"{name} batch {row['batch']}: {row['seconds']:.3f} s ({row['cpu_seconds']:.3f} s CPU)",
                          file=sys.stderr)
    return dict(rows=rows, settings=dict(objects=objects, observations=len(obs), shards=shards, epochs=epochs,
                                         seed=seed, device=device_label("cpu"), threads=torch.get_num_threads()))


# ----------------------------------------------------------------------------- the authors' step

def _load_authors(repo: Path):
    """The authors' library (a checkout of github.com/Chromeilion/RoMAE) as `authors_romae`: its package
    is also named `romae`, so its three modules are read and their `romae.` imports renamed."""
    import types

    src_dir = Path(repo) / "romae"
    if not (src_dir / "model.py").is_file():
        raise FileNotFoundError(f"{src_dir / 'model.py'} not found: --repo must be a checkout of "
                                "https://github.com/Chromeilion/RoMAE")
    pkg = types.ModuleType("authors_romae")
    pkg.__path__ = []
    sys.modules["authors_romae"] = pkg
    for name in ("utils", "positional_embeddings", "model"):
        path = src_dir / f"{name}.py"
        mod = types.ModuleType(f"authors_romae.{name}")
        mod.__file__ = str(path)
        sys.modules[mod.__name__] = mod
        code = path.read_text().replace("from romae.", "from authors_romae.").replace("import romae.", "import authors_romae.")
        try:
            exec(compile(code, str(path), "exec"), mod.__dict__)
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError(f"the authors' code needs {e.name!r}: pip install pydantic-settings einops "
                                      "(or pass --deps, a folder they are installed in)") from e
    return sys.modules["authors_romae.model"]


def authors(repo: str | Path, batch: int = 16, rounds: int = 3, steps: int = 10, warmup: int = 3,
            seed: int = 0, progress: bool = True, compile: bool = False) -> dict:
    """Our Table 9 step (continuous RoPE) against the authors' model on the same images, masks and
    positions, alternating step by step: their step as their trainer takes it (torch.optim.AdamW with
    its defaults) and with the fused AdamW we use, to separate the model from the optimiser.
    `compile`: also our model through romae.train.compile_model ("ours_compiled")."""
    from ..masking import random_mask
    from ..patching import patchify

    A = _load_authors(Path(repo))
    torch.manual_seed(seed)
    images = torch.randn(batch, 3, 224, 224)
    grid = grid_positions((14, 14)).expand(batch, -1, -1)
    ours = RoMAEForPreTraining(table9_config()).train()

    def theirs_model():
        torch.manual_seed(seed)
        small = {k: v for k, v in SIZES["small"].items() if k != "d_ff"}
        cfg = A.RoMAEForPreTrainingConfig(
            encoder_config=A.EncoderConfig(d_model=small["d_model"], nhead=small["n_heads"], depth=small["depth"]),
            use_cls=False, pos_encoding="ropend", tubelet_size=(1, 16, 16), n_channels=3, n_pos_dims=2,
            normalize_targets=True)
        return A.RoMAEForPreTraining(cfg).train()

    models = {"ours": ours, "authors": theirs_model(), "authors_fused_adamw": theirs_model()}
    if compile:
        from ..train import compile_model

        torch.manual_seed(seed)
        twin = RoMAEForPreTraining(ours.cfg).train()
        models["ours_compiled"] = compile_model(twin)
    opts = {"ours": torch.optim.AdamW(ours.parameters(), lr=1e-4, fused=True),
            "authors": torch.optim.AdamW(models["authors"].parameters(), lr=1e-4),  # their trainer's call
            "authors_fused_adamw": torch.optim.AdamW(models["authors_fused_adamw"].parameters(), lr=1e-4,
                                                     fused=True)}
    if compile:
        opts["ours_compiled"] = torch.optim.AdamW(models["ours_compiled"].parameters(), lr=1e-4, fused=True)

    def step(name: str) -> None:
        pos = grid + torch.rand_like(grid) - 0.5  # fresh real-valued positions
        opts[name].zero_grad(set_to_none=True)
        if name.startswith("ours"):  # channels-last patches, as romae.from_images gives them
            values = patchify(images.permute(0, 2, 3, 1), (16, 16))
            _, loss = models[name](values, pos)
        else:  # their input: [B, T, C, H, W] and a mask they are given
            mask = random_mask(batch, 196, 0.75)
            _, loss = models[name](images[:, None], mask, pos)
        loss.backward()
        opts[name].step()

    compile_seconds = None
    for name in models:
        if name == "ours_compiled":  # its first step compiles
            compile_seconds = timed_steps(lambda: step(name), torch.device("cpu"), 1)[0]
        for _ in range(warmup):
            step(name)
    times = _interleaved(step, list(models), rounds, steps, torch.device("cpu"), progress,
                         lambda t: f"{1e3 * t:.0f} ms")
    out = {n: {"step_seconds": statistics.median(t), "speedup_of_ours": _paired(t, times["ours"]),
               "speedup_over_authors": _paired(times["authors"], t)} for n, t in times.items()}
    out["settings"] = dict(batch=batch, rounds=rounds, steps_per_round=steps, warmup=warmup,
                           device=device_label("cpu"), torch=torch.__version__, threads=torch.get_num_threads(),
                           # which checkout, never where it lay on the machine that measured (published file)
                           authors_repo=Path(repo).name, compile_seconds=compile_seconds)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m romae.runner.bench", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sizes", help="Table 8: model sizes and block parameter counts")
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.add_argument("--out", help="also write the JSON result to this file")
    t = sub.add_parser("table9", help="Table 9: relative speed of positional encodings")
    t.add_argument("--batch", type=int, default=8, help="images per step (default 8)")
    t.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    t.add_argument("--steps", type=int, default=20, help="timed steps per variant per round (default 20)")
    t.add_argument("--warmup", type=int, default=3, help="untimed steps per variant first (default 3)")
    t.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    t.add_argument("--json", action="store_true", help="print JSON instead of a table")
    t.add_argument("--out", help="also write the JSON result to this file")
    r = sub.add_parser("roofline", help="a training step's FLOP/s against the plain-matmul limit of its shapes")
    r.add_argument("--workload", default="table9", choices=[*WORKLOADS, "all"],
                   help="table9 (default, App. B.2), pendulum (notebook 14), physionet (notebook 16), or all")
    r.add_argument("--batch", type=int, help="samples per step (default: the workload's, 16)")
    r.add_argument("--steps", type=int, default=10, help="timed steps (default 10)")
    r.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    r.add_argument("--min-seconds", type=float, default=2.0,
                   help="repeat the timed steps until they add up to this (default 2.0)")
    r.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    r.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                   help="float32, or bfloat16 autocast (default float32)")
    r.add_argument("--compile", action="store_true", help="time the torch.compile'd model (romae.train.compile_model)")
    r.add_argument("--breakdown", action="store_true", help="also profile where the step's time goes")
    r.add_argument("--json", action="store_true", help="print JSON instead of a table")
    r.add_argument("--out", help="also write the JSON result to this file")
    a = sub.add_parser("authors", help="our Table 9 step against the authors' model (needs their code)")
    a.add_argument("--repo", required=True, help="a checkout of https://github.com/Chromeilion/RoMAE")
    a.add_argument("--deps", help="a folder holding pydantic-settings and einops (pip install --target)")
    a.add_argument("--batch", type=int, default=16, help="images per step (default 16)")
    a.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    a.add_argument("--steps", type=int, default=10, help="timed steps per model per round (default 10)")
    a.add_argument("--compile", action="store_true", help="also time our model through torch.compile")
    a.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a.add_argument("--out", help="also write the JSON result to this file")
    pl = sub.add_parser("plan", help="steps, FLOPs, memory, micro-batch and time of every paper training (romae.compendium.plan)")
    pl.add_argument("--profile", default="paper", choices=["paper"], help="the profile planned (paper)")
    pl.add_argument("--device", default="h100", choices=["h100", "a100", "cpu", "this"],
                    help="h100 / a100: estimated from peak FLOP/s; cpu: the reference CPU; this: measured here")
    pl.add_argument("--gpus", type=int, default=1, help="devices (notebooks 10, 11, 13 split their batch over them)")
    pl.add_argument("--gpu-memory", type=float, help="GiB per device the micro-batches must fit (default: whole batches)")
    pl.add_argument("--precision", default="all", choices=["fp32", "tf32", "bf16", "all"], help="default all")
    pl.add_argument("--only", help="notebooks, e.g. 12,13 (default: all that train)")
    pl.add_argument("--no-check", action="store_true", help="skip the measured check of the memory extrapolation")
    pl.add_argument("--markdown", action="store_true", help="a markdown table")
    pl.add_argument("--readme", help="write the markdown table into this README between its plan markers")
    pl.add_argument("--out", help="also write the plan as JSON to this file")
    f = sub.add_parser("feed", help="seconds per TokenStore.batch on generated ELAsTiCC-shaped light curves")
    f.add_argument("--objects", type=int, default=20000, help="light curves in the store (default 20000)")
    f.add_argument("--batch", default="4096,16384", help="batch sizes, comma-separated (default 4096,16384)")
    f.add_argument("--epochs", type=int, default=3, help="epochs per batch size (default 3; the first apart)")
    f.add_argument("--json", action="store_true", help="print JSON instead of a table")
    f.add_argument("--out", help="also write the JSON result to this file")
    args = ap.parse_args(argv)

    def save(result) -> None:
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(result, indent=2) + "\n")

    if args.cmd == "sizes":
        rows = size_rows()
        save(rows)
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        print(f"{'size':<13}{'d_model':>8}{'heads':>6}{'depth':>6}{'d_ff':>6}{'block params':>14}"
              f"{'paper':>9}{'diff':>8}")
        for r in rows:
            paper = "-" if r["paper_M"] is None else f"{r['paper_M']:g}M"
            diff = "-" if r["rel_diff"] is None else f"{100 * r['rel_diff']:+.2f}%"
            print(f"{r['size']:<13}{r['d_model']:>8}{r['n_heads']:>6}{r['depth']:>6}{r['d_ff']:>6}"
                  f"{r['block_params_M']:>13.4f}M{paper:>9}{diff:>8}")
        return 0

    if args.cmd == "plan":
        from ..compendium import plan

        precisions = plan.PRECISIONS if args.precision == "all" else (args.precision,)
        try:
            p = plan.plan(args.device, args.gpus, args.gpu_memory, precisions,
                          only=[n.strip() for n in args.only.split(",")] if args.only else None, checked=not args.no_check)
        except ValueError as e:
            ap.error(str(e))
        save(p)
        if args.readme:
            plan.write_readme(args.readme, p)
        print(plan.describe(p))
        print(plan.table(p, markdown=args.markdown))
        return 0

    if args.cmd == "feed":
        batches = tuple(int(b) for b in args.batch.split(","))
        if min(args.objects, args.epochs, *batches) < 1:
            ap.error("--objects, --batch and --epochs must be >= 1")
        res = feed(args.objects, batches, args.epochs)
        save(res)
        if args.json:
            print(json.dumps(res, indent=2))
            return 0
        st = res["settings"]
        print(f"TokenStore.batch on {st['objects']} generated light curves ({st['observations']} observations, "
              f"{st['shards']} shards) on {st['device']}")
        print(f"{'view':<15}{'batch':>7}{'s/batch':>9}{'CPU s':>8}{'first epoch: s':>16}{'CPU s':>8}{'curves/s':>10}")
        for r in res["rows"]:
            print(f"{r['view']:<15}{r['batch']:>7}{r['seconds']:>9.3f}{r['cpu_seconds']:>8.3f}"
                  f"{r['first_epoch_seconds']:>16.3f}{r['first_epoch_cpu_seconds']:>8.3f}"
                  f"{r['batch'] / r['seconds']:>10.0f}")
        print("first epoch: a fresh view's first pass (a `keep` such as the alert mask runs once per light curve)")
        return 0
    if args.cmd == "authors":
        if args.deps:
            sys.path.append(args.deps)  # last: never shadows what this environment has
        res = authors(args.repo, args.batch, args.rounds, args.steps, compile=args.compile)
        save(res)
        if args.json:
            print(json.dumps(res, indent=2))
            return 0
        print(f"Table 9 step (batch {args.batch}, continuous RoPE) on {res['settings']['device']}")
        print(f"{'':<22}{'step ms':>9}{'speed-up over the authors (paired median)':>44}")
        for name in (n for n in res if n != "settings"):
            print(f"{name:<22}{1e3 * res[name]['step_seconds']:>9.1f}{res[name]['speedup_over_authors']:>44.2f}")
        if res["settings"]["compile_seconds"] is not None:
            print(f"ours_compiled: the first step compiled in {res['settings']['compile_seconds']:.1f} s")
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda asked for, but torch sees no CUDA device")
    if args.cmd == "roofline":
        if (args.batch is not None and args.batch < 1) or args.steps < 1 or args.warmup < 0:
            ap.error("--batch and --steps must be >= 1 and --warmup >= 0")
        names = list(WORKLOADS) if args.workload == "all" else [args.workload]
        res = [roofline(n, args.batch, args.steps, args.warmup, args.device, args.dtype, args.compile,
                        args.breakdown, min_seconds=args.min_seconds) for n in names]
        save(res if len(res) > 1 else res[0])
        if args.json:
            print(json.dumps(res if len(res) > 1 else res[0], indent=2))
            return 0
        print(f"roofline on {res[0]['device']}, torch {res[0]['torch']}, {args.dtype}"
              f"{', compiled' if args.compile else ''}")
        print(f"{'workload':<11}{'batch':>6}{'step ms':>9}{'GFLOP':>8}{'GFLOP/s':>9}{'limit':>8}{'fraction':>10}")
        for x in res:
            print(f"{x['workload']:<11}{x['batch']:>6}{1e3 * x['step_seconds']:>9.1f}{x['step_gflop']:>8.2f}"
                  f"{x['achieved_gflops']:>9.1f}{x['matmul_limit_gflops']:>8.1f}{x['fraction']:>10.3f}")
            if x["compile_seconds"] is not None:
                print(f"{'':<11}compile: {x['compile_seconds']:.1f} s (first step)")
            if "breakdown" in x:
                parts = ", ".join(f"{k} {1e3 * v:.1f}" for k, v in x["breakdown"]["seconds_per_step"].items())
                print(f"{'':<11}ms per step: {parts}")
        print("limit: GFLOP/s of the step's own matrix products run alone on this device; "
              "fraction = (FLOPs / limit) / step time")
        return 0
    if min(args.batch, args.rounds, args.steps) < 1 or args.warmup < 0:
        ap.error("--batch, --rounds and --steps must be >= 1 and --warmup >= 0")
    res = table9(args.batch, args.rounds, args.steps, args.warmup, args.device)
    save(res)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    st = res["settings"]
    print(f"Table 9 workload on {st['device']}, torch {st['torch']}, batch {st['batch']}: "
          f"{st['rounds']} rounds x {st['steps_per_round']} steps per variant, interleaved")
    print(f"{'positional encoding':<22}{'steps/s':>9}{'relative':>10}{'(of medians)':>14}{'paper':>8}")
    for name in TABLE9_VARIANTS:
        r = res[name]
        print(f"{name:<22}{r['steps_per_s']:>9.3f}{r['relative_speed']:>10.3f}"
              f"{r['relative_speed_of_medians']:>14.3f}{r['paper_relative_speed']:>8.2f}")
    print("paper: NVIDIA GTX 1650 Ti, the authors' code (App. B.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
