"""What a training costs: FLOPs per step (analytic), seconds on the reference CPU, and seconds measured here.

    flops = step_flops(model_cfg, batch=64, n_tokens=70, stage="pretrain")
    reference_seconds(model_cfg, 64, 70, "pretrain") * steps     # the 2-core reference CPU, deterministic
    measured_step_seconds(model, batch, train_cfg)                # one step of the real model on this device

Plans that must not depend on the machine they run on (how many steps a `quick` run of an unseen data set
gets, so that its cache key and its numbers are the same everywhere) use `reference_seconds`; what a run
will take *here* is measured (`measured_step_seconds`) and printed beside it.

FLOPs: matrix products only, 2 per multiply-add, as `torch.utils.flop_counter` counts them (embedding,
attention projections, MLP, the attention products Q K^T and A V, decoder and heads): the backward of a
linear layer is 2 x its forward, of attention 2.5 x (the counter's five products to the forward's two); element-wise work and the optimiser are in the per-step overhead of the time model. The time
model `seconds = overhead[stage] + FLOPs / REFERENCE_FLOPS` was fitted on the reference machine (2-core
AMD EPYC with AVX-512, torch 2.13 CPU, float32, fused AdamW / SGD) over RoMAE-tiny steps with batch 8-64,
16-940 tokens and 1-300 values per token: within 25 % of the measured step times, median 6-9 %.
"""

from __future__ import annotations

import math
import time

import torch

from ..config import EncoderConfig, RoMAEConfig, TrainConfig

REFERENCE = "2-core CPU (AMD EPYC, AVX-512; torch 2.13 CPU, float32)"
REFERENCE_FLOPS = 128e9  # FLOP/s of RoMAE training steps on the reference CPU (fitted: 126-132 per stage)
OVERHEAD = {"pretrain": 0.023, "finetune": 0.014, "predict": 0.004}  # seconds per step (fitted)
STAGES = tuple(OVERHEAD)
REGULARISED = 1.15  # a fine-tuning step with dropout, drop-path 0.1 and gradient clipping costs this much more
#                    (measured on the reference CPU: 1.0-1.44, typically 1.15)


def stack_flops(enc: EncoderConfig, n: int) -> tuple[float, float]:
    """Forward FLOPs of one transformer stack on n tokens of one sample: (linear layers, attention products)."""
    d, f = enc.d_model, enc.d_ff
    return enc.depth * 2 * n * (4 * d * d + 2 * d * f), enc.depth * 4 * n * n * d


def step_flops(cfg: RoMAEConfig, batch: int, n_tokens: int, stage: str) -> float:
    """FLOPs of one step on `batch` samples of `n_tokens` tokens (padding included, as it is computed).

    stage: "pretrain" (MAE: encoder on the visible tokens, decoder on all; forward + backward), "finetune"
    (classifier on all tokens; forward + backward) or "predict" (classifier forward only)."""
    if stage not in OVERHEAD:
        raise ValueError(f"unknown stage {stage!r}; choose one of {STAGES}")
    if batch < 1 or n_tokens < 1:
        raise ValueError(f"batch and n_tokens must be >= 1, got {batch}, {n_tokens}")
    d, c, cls = cfg.encoder.d_model, cfg.token_dim, int(cfg.use_cls)
    if stage == "pretrain":
        visible = n_tokens - min(math.ceil(n_tokens * cfg.mask_ratio), n_tokens - 1) + cls
        dd = cfg.decoder.d_model
        (el, ea), (dl, da) = stack_flops(cfg.encoder, visible), stack_flops(cfg.decoder, n_tokens + cls)
        linear = el + dl + 2 * visible * c * d + 2 * (n_tokens + cls) * d * dd + 2 * n_tokens * dd * c
        return batch * (3.0 * linear + 3.5 * (ea + da))
    el, ea = stack_flops(cfg.encoder, n_tokens + cls)
    linear = el + 2 * n_tokens * c * d + 2 * d * cfg.n_outputs
    return batch * (linear + ea if stage == "predict" else 3.0 * linear + 3.5 * ea)


def reference_seconds(cfg: RoMAEConfig, batch: int, n_tokens: int, stage: str) -> float:
    """Seconds of one step on the reference CPU (the fitted model above)."""
    return OVERHEAD[stage] + step_flops(cfg, batch, n_tokens, stage) / REFERENCE_FLOPS


def measured_step_seconds(model: torch.nn.Module, batch: dict, cfg: TrainConfig | None = None,
                          steps: int = 2, warmup: int = 1) -> float:
    """Median seconds of `steps` training steps (after `warmup`) of `model` on `batch` here, with the
    optimiser and clipping `cfg` names (cfg=None: forward only, no gradients, as `predict`). The model's weights are
    restored afterwards; its mode too."""
    from ..optim import make_optimizer as _make_optimizer

    was_training = model.training
    saved = {k: v.detach().clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()  # the timing draws masks and dropout: leave the caller's generator as it was
    device = next(model.parameters()).device
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times = []
    try:
        if cfg is None:
            model.eval()
            with torch.no_grad():
                for i in range(warmup + steps):
                    t0 = time.perf_counter()
                    model(**{k: v for k, v in batch.items() if k != "labels"})
                    sync()
                    times.append(time.perf_counter() - t0)
        else:
            model.train()
            opt = _make_optimizer(model.parameters(), cfg)
            for i in range(warmup + steps):
                t0 = time.perf_counter()
                opt.zero_grad(set_to_none=True)
                _, loss = model(**batch)
                loss.backward()
                if cfg.grad_clip:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                opt.step()
                sync()
                times.append(time.perf_counter() - t0)
    finally:
        model.load_state_dict(saved)
        model.train(was_training)
        torch.set_rng_state(rng)
    kept = sorted(times[warmup:])
    return kept[len(kept) // 2]


def minutes(seconds: float) -> str:
    """'40 s', '7.5 min', '2.3 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
