"""How much memory and time one training of the paper profile takes on a device: the model behind the plan
(`romae.compendium.plan`, which re-exports it) and what experiments ask of it (`fit_memory`, `training_seconds`).

Memory per device = parameters + gradients (FP32) + optimiser state (AdamW 2, SGD 1 FP32 copies) + the
activations autograd saves for the backward. Saved activations are counted with
`torch.autograd.graph.saved_tensors_hooks` (unique storages, parameters excluded) in a forward of the CPU's
kernels on fake tensors (shapes without arithmetic: a test checks them against real forwards), at micro-batches
1 and 2, extrapolated linearly (a + b * m) and checked by a count at the micro-batch chosen; BF16 under CPU bf16
autocast. Attention is counted as the kernel the GPU will run (`attention_kernel`, by PyTorch's documented
constraints: e.g. a padding mask rules flash out, and BF16 with RoMAE-tiny's head size 60 rules the
memory-efficient kernel out too): a fused kernel as the CPU's own fused kernel, attention dropout off (the fused
kernels apply it inside), the math kernel through PyTorch's math kernel with its dropout (it saves the
[B, H, N, N] probabilities and dropout mask); `bench plan` says which kernel each training gets. Padded data
is counted at its longest sample, with a padding mask. Not counted, hence the planned peak = HEADROOM x
(counted bytes) + CONTEXT_GIB: the CUDA context and library workspaces, allocator fragmentation, the backward's
transient buffers, a dataset kept on the device. Counts are cached in-process and on disk (romae.compendium.cache, keyed by the model code).

Time per optimiser step on a GPU = FLOPs (`romae.compendium.cost.step_flops`, the roofline's count) / (the data sheet's
peak dense FLOP/s x EFFICIENCY) + OVERHEAD per transformer block and micro-batch (kernel launches: eager PyTorch
is launch-bound on RoMAE's narrow models), per micro-batch and per step: calibrated on an NVIDIA H200
(`romae.runner.promise` in `make gpu-check`, 2026-11-26, reports/gpu/), an estimate for other GPUs and shapes.
`cpu` is romae.compendium.cost's fitted reference CPU (FP32) x CPU_FACTOR, calibrated on the paper trainings themselves;
`this` scales romae.compendium.cost's model by a step measured here (`romae.compendium.cost.measured_step_seconds`). GB means GiB (2^30 bytes) throughout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import inspect
import json
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from . import cost
from .cache import cached
from ..config import RoMAEConfig, TrainConfig, to_json

GIB = 2 ** 30
HEADROOM = 1.25  # planned peak / counted bytes: fragmentation, transient backward buffers (assumed, not measured)
CONTEXT_GIB = 1.5  # CUDA context, cuBLAS / cuDNN workspaces (assumed)
CODE = ("model.py", "rope.py", "masking.py", "config.py")  # what the counted bytes depend on (+ the counting code)
OPTIMIZER_COPIES = {"adamw": 2, "sgd": 1}  # FP32 copies of the parameters the optimiser keeps (SGD: momentum)
# peak dense FLOP/s (no sparsity) from NVIDIA's data sheets: H100 SXM5 80 GB; A100 SXM4 80 GB
PEAK = {"h100": {"fp32": 67e12, "tf32": 494.5e12, "bf16": 989.5e12},
        "a100": {"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12}}
# share of peak a RoMAE step's matrix products reach (narrow matrices, d_model 60-960, far from the tensor cores'
# best). BF16: 0.2 measured on the H200 (notebook 10's pre-training, 1.5e13 FLOP a step: 111 ms, of which 41 ms
# launches); FP32 and TF32 assumed (FP32's big steps measured within 2x of 0.5; TF32 not measured)
EFFICIENCY = {"fp32": 0.5, "tf32": 0.3, "bf16": 0.2}
# seconds on a GPU per transformer block and micro-batch (forward + backward kernel launches; BF16 adds autocast's
# casts), per micro-batch (embedding, loss, heads) and per optimiser step (optimiser, clipping, schedule). "block":
# measured on the H200 over 12-14-block trainings of 01, 02, 04, 12, 15 and 16 whose matrix work is negligible:
# 20-38 ms a step in FP32 (median 28), 32-51 ms in BF16 (median 38), where the first plan (3 + 2 ms, no per-block
# term) said 5 ms. The others are the first plan's assumptions (2-block Pendulum measured within 2x of them).
# Against the 30 steps measured with a number: measured / planned median 0.96, 25 within 25 % (the first plan: none)
OVERHEAD = {"block": {"fp32": 1.9e-3, "tf32": 1.9e-3, "bf16": 2.6e-3}, "micro": 3e-3, "step": 2e-3}
# Steps replayed from CUDA graphs (romae.graphs; TrainConfig.cuda_graphs, on by default on one CUDA process, whole
# batches, AdamW, batches of one shape): the host launches one graph a step instead of every kernel, so the eager
# OVERHEAD above goes; the GPU still runs each kernel, at least "kernel" seconds however small its work, and the
# host's own loop (feeding, copies, bookkeeping) takes "host" seconds a step, overlapping the GPU's work. Kernels
# a step = the eager OVERHEAD / "launch", the host seconds one eager launch costs (~30 us: eager op counts against
# the H200's eager times). ESTIMATES, never measured on a GPU yet: `make gpu-check` measures graphed steps
GRAPHED = {"launch": 30e-6, "kernel": 4e-6, "host": 1e-3}
# the reference CPU's paper-training steps / romae.compendium.cost's model of them: romae.compendium.cost was fitted on RoMAE-tiny steps
# (batch 8-64), but every paper training measured on the same 2-core AMD EPYC (`python -m romae.runner.promise --device
# this`, idle, 2026-11-26: 47 trainings, README's promise table) ran 1.1-2.5x its estimate, median 1.74, with no
# clear dependence on depth, width or tokens (a per-block term did not fit better: 74 % of rows within 25 % against
# 74 % for the factor alone); the kept paper trainings agree (wall / plan: Pendulum 1.31, Spiral 1.69). With it,
# 35 of the 47 steps are within 25 % (the model alone: 3)
CPU_FACTOR = 1.7
DEVICES = ("h100", "a100", "cpu", "this")
PRECISIONS = ("fp32", "tf32", "bf16")


@dataclass(frozen=True)
class Training:
    """One training of a notebook's paper profile, as its run builds it."""

    name: str  # e.g. "uea:Epilepsy pre-training"
    stage: str  # romae.compendium.cost's: "pretrain" (MAE) | "finetune" (supervised)
    model: RoMAEConfig  # the model the run trains
    train: TrainConfig  # its training (batch_size per process)
    n_tokens: int  # data tokens per sample, [CLS] not included (padded data: the longest sample)
    samples: int  # training samples per epoch
    runs: int = 1  # how many such trainings (seeds x variants)
    processes: int = 1  # processes the global batch is split over
    padded: bool = False  # samples of different lengths: n_tokens is the longest (memory, FLOPs: upper bounds)
    hidden: float | None = None  # pre-training on masks the data gives: the share hidden (None: model.mask_ratio)
    source: str = ""  # where `samples` and `n_tokens` come from
    feed: str = ""  # how its batches are built on the host (FEEDS): "store" | "images" | "" (tensors: free)
    varying: bool = False  # each batch cut to its own longest sample: many shapes, so no CUDA graphs (romae.graphs);
    #                        a TokenStore's batches (feed "store") always are

    @property
    def shape_model(self) -> RoMAEConfig:
        """The model as memory and FLOPs see it: with the data's share of hidden tokens."""
        return self.model if self.hidden is None else dataclasses.replace(self.model, mask_ratio=self.hidden)

    @property
    def tokens(self) -> int:
        return self.n_tokens + int(self.model.use_cls)

    @property
    def steps(self) -> int:
        return self.train.epochs * math.ceil(self.samples / (self.train.batch_size * self.processes))


# ----------------------------------------------------------------------------- memory

def _batch(cfg: RoMAEConfig, stage: str, micro: int, n_tokens: int, padded: bool = False) -> dict:
    """Inputs of the run's shapes (values, positions and labels drawn here: only shapes matter); `padded`: with a
    padding mask (the last token of every sample padded), so attention gets a mask as in the run."""
    g = torch.Generator().manual_seed(0)
    batch = dict(values=torch.randn(micro, n_tokens, cfg.token_dim, generator=g),
                 positions=torch.arange(n_tokens, dtype=torch.float32).expand(micro, cfg.n_axes, n_tokens))
    if padded:
        batch["pad_mask"] = torch.arange(n_tokens).expand(micro, n_tokens) == n_tokens - 1
    if stage == "finetune":
        shape = (micro, n_tokens, cfg.n_outputs) if cfg.head == "tokens" else (micro, cfg.n_outputs)
        batch["labels"] = (torch.randint(cfg.n_outputs, shape[:-1], generator=g) if cfg.task == "classification"
                           else torch.randn(shape, generator=g))
    return batch


@functools.lru_cache(maxsize=4)
def _model(model_json: str, stage: str, attention_dropout: bool = False) -> torch.nn.Module:
    """The model a training of `stage` builds, in training mode; attention dropout off unless asked (see the
    module doc: the math kernel materialises its mask, the fused kernels do not)."""
    from ..model import Attention, RoMAEForPrediction, RoMAEForPreTraining

    cfg = dataclasses.replace(RoMAEConfig.from_dict(json.loads(model_json)), init="default")  # only shapes matter
    with torch.random.fork_rng(devices=[]):  # the caller's generator stays as it was
        model = (RoMAEForPreTraining if stage == "pretrain" else RoMAEForPrediction)(cfg).train()
    if not attention_dropout:
        for m in model.modules():
            if isinstance(m, Attention):
                m.dropout = 0.0  # CUDA applies it inside the fused kernel; the CPU would save [B, H, N, N]
    return model


# ----------------------------------------------------------------------------- attention kernels

def attention_kernel(head_dim: int, precision: str, masked: bool, device: str = "h100") -> str:
    """The SDPA kernel PyTorch (2.13) picks on an sm80+ GPU (A100, H100) for RoMAE's attention, by its documented
    constraints (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp): flash takes no attention mask, only
    FP16 / BF16 and head sizes up to 256; the memory-efficient kernel takes masks, with head sizes that are
    multiples of 8 in FP16 / BF16 and of 4 in FP32 / TF32 (its GEMM alignment); otherwise the math kernel,
    which materialises every [B, H, N, N] score matrix (in FP32: it upcasts BF16 inputs). cuDNN's kernel,
    which PyTorch tries after these, is not counted on. `device` "cpu" / "this": "cpu" (the CPU's own fused
    kernel, which takes masks: the counts are its)."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {PRECISIONS}")
    if device in ("cpu", "this"):
        return "cpu"
    half = precision == "bf16"
    if half and not masked and 0 < head_dim <= 256:
        return "flash"
    if head_dim > 0 and head_dim % (8 if half else 4) == 0:
        return "efficient"
    return "math"


def training_kernel(t: "Training", precision: str, device: str = "h100", pad_heads: bool | None = None) -> str:
    """`attention_kernel` of a training: the widest head of its encoder and decoder decides (the decoder of a
    pre-training attends with the same padding mask). On a GPU the model pads head sizes to a multiple of 8
    (`romae.model.attend`; `pad_heads` None: as `romae.model.ACCELERATOR` says), so RoMAE-tiny's 60 counts as 64."""
    from ..kernels import ACCELERATOR, HEAD_MULTIPLE

    pad = ACCELERATOR["pad_heads"] if pad_heads is None else pad_heads
    stacks = [t.model.encoder] + ([t.model.decoder] if t.stage == "pretrain" else [])
    kernels = {attention_kernel(e.head_dim + (-e.head_dim % HEAD_MULTIPLE if pad else 0), precision, t.padded,
                                device) for e in stacks}
    return next(k for k in ("math", "efficient", "flash", "cpu") if k in kernels)


@functools.lru_cache(maxsize=None)
def _saved_bytes(model_json: str, stage: str, n_tokens: int, micro: int, bf16: bool, padded: bool = False,
                 math_kernel: bool = False) -> int:
    """Bytes autograd saves for the backward of one forward on the CPU (unique storages, parameters excluded).

    Run on fake tensors (torch's FakeTensorMode: the CPU's kernels and shapes, no arithmetic), so a forward
    costs the same at any size; the checks that would read a value back are made asynchronous. `math_kernel`:
    attention through PyTorch's math kernel, with its dropout (what a GPU runs where `attention_kernel` says
    "math"); else the CPU's fused kernel, attention dropout off."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from .. import masking

    model = _model(model_json, stage, attention_dropout=math_kernel)
    seen: dict[int, int] = {}
    with mock.patch.object(masking, "_async_checks", lambda device: True), masking.deferred_checks(), \
            FakeTensorMode(allow_non_fake_inputs=True) as mode:
        weights = {k: mode.from_tensor(v) for k, v in [*model.named_parameters(), *model.named_buffers()]}
        params = {w.untyped_storage()._cdata for w in weights.values()}

        def pack(t):
            s = t.untyped_storage()
            if s._cdata not in params:
                seen[s._cdata] = max(seen.get(s._cdata, 0), s.nbytes())
            return t

        batch = {k: mode.from_tensor(v) for k, v in _batch(model.cfg, stage, micro, n_tokens, padded).items()}
        kernel = sdpa_kernel([SDPBackend.MATH]) if math_kernel else contextlib.nullcontext()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), kernel, \
                torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            torch.func.functional_call(model, weights, kwargs=batch)
    return sum(seen.values())


@dataclass(frozen=True)
class Memory:
    """Bytes per device: static (parameters, gradients, optimiser state) + a + b * micro (saved activations)."""

    static: int
    a: float
    b: float

    def counted(self, micro: int) -> float:
        return self.static + self.a + self.b * micro

    def peak_gib(self, micro: int) -> float:
        """The planned peak: HEADROOM x counted + CONTEXT_GIB."""
        return HEADROOM * self.counted(micro) / GIB + CONTEXT_GIB

    def graphed_peak_gib(self, micro: int, shapes: int = None) -> float:
        """The planned peak with CUDA graphs: each batch shape's graph keeps its activations in a private pool of
        its own (a second shape's eager warm-up runs beside the first pool), so `shapes` x the activations."""
        shapes = GRAPH_SHAPES if shapes is None else shapes
        return HEADROOM * (self.static + shapes * (self.a + self.b * micro)) / GIB + CONTEXT_GIB


def memory(t: Training, bf16: bool = False, kernel: str = "flash") -> Memory:
    """Memory of training `t` per device: saved activations measured at micro-batches 1 and 2, a line through
    them; `kernel` "math" (`training_kernel`): counted with attention through PyTorch's math kernel."""
    n_params, m1, m2 = _measured(t, (1, 2), bf16, kernel == "math")
    static = 4 * n_params * (2 + OPTIMIZER_COPIES[t.train.optimizer])  # FP32 weights, gradients, optimiser state
    return Memory(static, 2 * m1 - m2, m2 - m1)


def check(t: Training, mem: Memory, micro: int, bf16: bool = False, kernel: str = "flash") -> float:
    """(extrapolated - measured) / measured saved activations at `micro`: the line of `memory` checked."""
    _, measured = _measured(t, (micro,), bf16, kernel == "math")
    return (mem.a + mem.b * micro - measured) / measured


def _measured(t: Training, micros: tuple, bf16: bool, math_kernel: bool = False) -> list:
    """[parameters, saved bytes at each micro-batch], cached on disk too (a plan is asked for by every paper
    notebook), keyed by the code that decides what is saved."""
    key = (to_json(t.shape_model), t.stage, t.n_tokens)
    return cached("plan_memory", dict(model=key[0], stage=t.stage, n_tokens=t.n_tokens, micros=micros, bf16=bf16,
                                      padded=t.padded, math_kernel=math_kernel, torch=torch.__version__),
                  lambda: [_n_params(key[0], t.stage)] + [_saved_bytes(*key, m, bf16, t.padded, math_kernel)
                                                          for m in micros],
                  code=_code_version())


@functools.lru_cache(maxsize=None)
def _code_version() -> str:
    """The version of the code that decides the saved activations: the model's modules and the counting here."""
    here = Path(__file__).resolve().parents[1]
    counting = "".join(inspect.getsource(f) for f in (_batch, _model, _saved_bytes, _measured, attention_kernel))
    return hashlib.sha256(b"".join((here / f).read_bytes() for f in CODE) + counting.encode()).hexdigest()


def _n_params(model_json: str, stage: str) -> int:
    return sum(p.numel() for p in _model(model_json, stage).parameters())


def pick_micro_batch(batch: int, mem: Memory, memory_gib: float | None) -> tuple[int | None, int]:
    """(micro-batch, accumulation k) for a per-process `batch` in `memory_gib` per device: the whole batch if
    its planned peak fits (or no memory is given), else its largest divisor that fits (k = batch / micro,
    equal micro-batches). (None, 0) when not even one sample fits."""
    if memory_gib is None or mem.peak_gib(batch) <= memory_gib:
        return batch, 1
    for micro in sorted((d for d in range(1, batch) if batch % d == 0), reverse=True):
        if mem.peak_gib(micro) <= memory_gib:
            return micro, batch // micro
    return None, 0


def device_memory_gib() -> float | None:
    """Memory per device a run plans for: ROMAE_GPU_MEMORY (romae.runtime), else the CUDA device's, else None."""
    from .. import runtime

    rt = runtime.current()
    if rt.gpu_memory_gb is not None:
        return rt.gpu_memory_gb
    if rt.device != "cpu" and torch.cuda.is_available():
        return torch.cuda.get_device_properties(0).total_memory / GIB
    return None


def fit_memory(train_cfg: TrainConfig, model_cfg: RoMAEConfig, n_tokens: int, stage: str, profile: str,
               hidden: float | None = None, padded: bool = False) -> TrainConfig:
    """`train_cfg` as the plan runs it in the paper profile (other profiles: unchanged): with the micro-batch
    the plan picks for this device's memory (unchanged where the whole batch fits or no device memory is
    known; warns, and takes 1, when not even one fits), and a checkpoint about every CHECKPOINT_MINUTES of
    planned time (`checkpoint_steps`), so a lost machine costs at most that much of a long training.
    n_tokens: per sample, [CLS] not included (padded: the longest); hidden: as `Training.hidden`; padded: the
    data has a padding mask (`is_padded`), which decides the attention kernel (`training_kernel`)."""
    if profile != "paper":
        return train_cfg
    t = Training("", stage, model_cfg, train_cfg, n_tokens, samples=1, hidden=hidden, padded=padded)
    changes = {}
    memory_gib = device_memory_gib()
    if memory_gib is not None:
        precision = _precision(train_cfg)
        mem = memory(t, bf16=precision == "bf16", kernel=training_kernel(t, precision, planned_device()))
        micro, _ = pick_micro_batch(train_cfg.batch_size, mem, memory_gib)
        if micro is None:
            warnings.warn(f"{stage} at {n_tokens} tokens plans {mem.peak_gib(1):.1f} GiB at micro-batch 1, more than "
                          f"the {memory_gib:.1f} GiB per device; trying micro-batch 1")
            micro = 1
        if micro != train_cfg.batch_size:
            changes["micro_batch"] = micro
        elif train_cfg.cuda_graphs is None and planned_device() != "cpu" and pools_fit(mem, micro, memory_gib):
            changes["cuda_graphs"] = False  # graphs' pools would not fit where eager steps do: eager, as planned
    every = checkpoint_steps(t, math.ceil(train_cfg.batch_size / changes.get("micro_batch", train_cfg.batch_size)))
    if every is not None and train_cfg.checkpoint_every is None:
        changes["checkpoint_every"] = every
    return dataclasses.replace(train_cfg, **changes) if changes else train_cfg


CHECKPOINT_MINUTES = 25.0  # a paper training saves a checkpoint about this often (planned time)


def planned_device() -> str:
    """The plan's name for the device this process trains on: h100 / a100 by the GPU's name (another GPU is
    planned as an h100), cpu (the reference CPU) without one."""
    from .. import runtime

    name = runtime.accelerator_name() if runtime.current().device != "cpu" else None
    if name is None or not torch.cuda.is_available():
        return "cpu"
    return "a100" if "A100" in name else "h100"


def checkpoint_steps(t: Training, k: int = 1, device: str | None = None) -> int | None:
    """Optimiser steps between checkpoints: about CHECKPOINT_MINUTES of `t`'s planned step time on `device`
    (default: `planned_device()`) with k micro-batches per step; None where the plan has no time for it."""
    device = device or planned_device()
    precision = "fp32" if device == "cpu" else _precision(t.train)
    seconds = step_seconds(t, device, precision, k)
    if not seconds:
        return None
    return max(1, round(CHECKPOINT_MINUTES * 60 / seconds))


def is_padded(data) -> bool:
    """Whether a training set's batches carry a padding mask: a TokenStore (ragged), or tensors with a
    'pad_mask' entry."""
    if hasattr(data, "lengths"):  # romae.store.TokenStore
        return True
    return "pad_mask" in (data.tensors if hasattr(data, "tensors") else data if isinstance(data, dict) else {})


def tokens_of(data) -> int:
    """Tokens per sample of a training set, [CLS] not included (padded data: the longest)."""
    if hasattr(data, "grid"):  # romae.images.GridDataset: one token per patch
        return data.grid[0] * data.grid[1]
    if hasattr(data, "lengths"):  # romae.store.TokenStore: observations per sample, capped by the view
        return int(data.lengths.max())
    return (data.tensors if hasattr(data, "tensors") else data)["values"].shape[1]


def hidden_of(data) -> float | None:
    """The share of tokens a training set's own masks hide (a 'mask' entry, as interpolation's data gives), else
    None (the model's mask_ratio)."""
    tensors = data.tensors if hasattr(data, "tensors") else data if isinstance(data, dict) else {}
    return float(tensors["mask"][0].float().mean()) if "mask" in tensors else None


def training_seconds(stage: str, model_cfg: RoMAEConfig, train_cfg: TrainConfig, data=None, *,
                     n_tokens: int | None = None, samples: int | None = None,
                     device: str | None = None) -> float | None:
    """The plan's seconds for one training of `model_cfg` with `train_cfg` on `data` (or on `samples` samples of
    `n_tokens` tokens): its steps x the modelled step time on `device` (default: `planned_device()`, the reference
    CPU without a GPU); None where not modelled. What `romae.compendium.trainings` records beside the measured wall time."""
    if data is not None:  # a dataset, or a dict of tensors (its samples: the length of its values)
        n = len(data["values"]) if isinstance(data, dict) else len(data)
        t = Training("", stage, model_cfg, train_cfg, tokens_of(data), n, padded=is_padded(data),
                     hidden=hidden_of(data) if stage == "pretrain" else None)
    elif n_tokens is not None and samples is not None:
        t = Training("", stage, model_cfg, train_cfg, n_tokens, samples)
    else:
        raise ValueError("training_seconds needs the data, or n_tokens and samples")
    device = device or planned_device()
    precision = "fp32" if device == "cpu" else _precision(train_cfg)
    k = math.ceil(train_cfg.batch_size / (train_cfg.micro_batch or train_cfg.batch_size))
    seconds = step_seconds(t, device, precision, k)
    return None if seconds is None else t.steps * seconds


def _precision(train_cfg: TrainConfig) -> str:
    from .. import runtime

    return runtime.current().precision or ("bf16" if train_cfg.bf16 else "fp32")


# ----------------------------------------------------------------------------- time

def blocks(t: Training) -> int:
    """Transformer blocks one micro-batch of `t` runs through: the encoder's, and the decoder's in a pre-training."""
    return t.model.encoder.depth + (t.model.decoder.depth if t.stage == "pretrain" else 0)


GRAPH_SHAPES = 2  # batch shapes a graphed training holds pools for: whole batches and a short last one (issue 55)


def pools_fit(mem: "Memory", micro: int, memory_gib: float | None) -> str:
    """'' when a graphed training's pools (`Memory.graphed_peak_gib`) fit `memory_gib` per device (or no memory is
    known), else why not: graphs are then off for it, in the plan and at run time (`fit_memory`)."""
    if memory_gib is None or mem.graphed_peak_gib(micro) <= memory_gib:
        return ""
    return (f"pools do not fit ({mem.graphed_peak_gib(micro):.0f} GiB graphed, {GRAPH_SHAPES} batch shapes, "
            f"> {memory_gib:.0f})")


def graphable(t: Training, k: int) -> str:
    """'' when `fit` replays `t`'s steps from CUDA graphs on a GPU (romae.graphs.wanted), else why not."""
    why = [w for w, bad in (("micro-batches", k > 1), ("several processes", t.processes > 1),
                            ("not AdamW", t.train.optimizer != "adamw"), ("compiled", t.train.compile),
                            ("cuda_graphs=False", t.train.cuda_graphs is False),
                            ("varying length", t.varying or t.feed == "store")) if bad]
    return ", ".join(why)


def step_seconds(t: Training, device: str, precision: str, k: int, graphed: bool | None = None) -> float | None:
    """Seconds of one optimiser step of `t` on one device (k micro-batches); None where not modelled. On a GPU:
    `graphed` None = as `fit` runs it (CUDA graphs where `graphable`), False = eager, True = graphed."""
    flops = cost.step_flops(t.shape_model, t.train.batch_size, t.n_tokens, t.stage)
    if device in PEAK:
        launches = k * (blocks(t) * OVERHEAD["block"][precision] + OVERHEAD["micro"]) + OVERHEAD["step"]
        arithmetic = flops / (PEAK[device][precision] * EFFICIENCY[precision])
        if graphed is None:
            graphed = not graphable(t, k)
        if graphed:
            kernels = launches / GRAPHED["launch"]
            return max(arithmetic + kernels * GRAPHED["kernel"], GRAPHED["host"])
        return arithmetic + launches
    if precision != "fp32":
        return None  # the reference CPU model is FP32 only
    seconds = cost.reference_seconds(t.shape_model, t.train.batch_size, t.n_tokens, t.stage)
    if device == "this":
        return seconds * _speed_here(to_json(t.shape_model), t.stage, t.n_tokens, to_json(t.train))
    return seconds * CPU_FACTOR


# ----------------------------------------------------------------------------- feeding

# The host's share of a step: building the batch. "store": romae.store.TokenStore.batch (ELAsTiCC's light curves,
# thinned to 65 per band); "images": romae.images.GridDataset (gather the uint8 images; on the CPU also augment,
# resize and patch them; a GPU finishes them itself, on the device). Seconds per sample measured on the
# compendium's 2-core CPU (AMD EPYC) by `python -m romae.runner.bench plan --device this` (FEED_MEASURED below); "this"
# measures them again wherever it runs. On a GPU the batch is built by a thread while the previous step trains
# (romae.feeding's prefetch), so a step takes the longer of the two; on the CPU one after the other.
FEEDS = ("store", "images")
FEED_MEASURED = {"store": 1.9e-5, "images": 3.1e-3, "images-gather": 8.9e-6}  # s per sample, 2-core EPYC (224 px images)


def feed_seconds(t: Training, device: str) -> float:
    """Host seconds to build one process's batch of `t` (0 for tensors)."""
    if not t.feed:
        return 0.0
    if t.feed not in FEEDS:
        raise ValueError(f"Training.feed must be one of {FEEDS} or '', got {t.feed!r}")
    kind = "images-gather" if t.feed == "images" and device in PEAK else t.feed  # a GPU finishes images itself
    per = _feed_here(kind, *_image_shape(t)) if device == "this" else FEED_MEASURED[kind]
    return t.train.batch_size * per


def _image_shape(t: Training) -> tuple[int, int]:
    """(side, patch) in pixels of `t`'s square RGB images after resizing ((0, 0): not images)."""
    if t.feed != "images":
        return 0, 0
    patch = round(math.sqrt(t.model.token_dim / 3))
    return round(math.sqrt(t.n_tokens)) * patch, patch


@functools.lru_cache(maxsize=None)
def _feed_here(kind: str, side: int = 0, patch: int = 0, n: int = 256) -> float:
    """Seconds per sample of building batches of `n` on this machine (median of 3): light curves of ELAsTiCC's
    shape in a TokenStore, or 64 x 64 uint8 images gathered (and augmented, resized to `side`, patched)."""
    import statistics
    import tempfile

    if kind == "store":
        from .. import store
        from .measure import feed_table, write_feed_shard
        from ..data.elasticc import MAX_PER_BAND

        with tempfile.TemporaryDirectory(prefix="romae-plan-feed-") as tmp:
            write_feed_shard(tmp, "part-0", feed_table(n * 4))
            data = store.TokenStore(tmp, max_per_variable=MAX_PER_BAND)
            data.batch(torch.arange(n))  # what a view computes once
            times = []
            for i in range(3):
                t0 = time.perf_counter()
                data.batch(torch.randperm(len(data), generator=torch.Generator().manual_seed(i))[:n])
                times.append(time.perf_counter() - t0)
        return statistics.median(times) / n
    from ..images import GridDataset, rand_augment

    g = torch.Generator().manual_seed(0)
    grids = torch.randint(0, 256, (n * 2, 3, 64, 64), dtype=torch.uint8, generator=g)
    data = GridDataset(grids, patch_size=patch or 8, mean=(0.5,) * 3, std=(0.25,) * 3,
                       scale=255.0, size=(side, side) if side else None, augment=rand_augment(2, 9))
    times = []
    for i in range(3):
        idx = torch.randperm(len(data), generator=torch.Generator().manual_seed(i))[:n]
        t0 = time.perf_counter()
        raw = data.raw(idx)
        if kind == "images":
            data.finish(raw)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) / n


@functools.lru_cache(maxsize=None)
def _speed_here(model_json: str, stage: str, n_tokens: int, train_json: str) -> float:
    """This machine's step time / the reference CPU's, measured on a step of 2 samples."""
    from ..model import RoMAEForPrediction, RoMAEForPreTraining

    cfg = RoMAEConfig.from_dict(json.loads(model_json))
    train = TrainConfig(**json.loads(train_json))
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = (RoMAEForPreTraining if stage == "pretrain" else RoMAEForPrediction)(cfg).to(dev)
    batch = {k: v.to(dev) for k, v in _batch(cfg, stage, 2, n_tokens).items()}
    seconds = cost.measured_step_seconds(model, batch, train)
    return seconds / cost.reference_seconds(cfg, 2, n_tokens, stage)
