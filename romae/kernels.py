"""The normalisation and attention kernels of RoMAE's blocks, and what an accelerator runs differently from the CPU.

* `RMSNorm` (App. A.2, eq. 3): on the CPU a float32 autograd function with a hand-derived backward (`_RMSNorm`), or
  F.rms_norm's composite path; on an accelerator F.rms_norm's fused kernel in float32 (`fused_rms_norm`).
* `attend`: scaled dot-product attention; on an accelerator a head size that is not a multiple of 8 is zero-padded
  to one, with the true head size's softmax scale.

The accelerator's paths are exact up to float rounding (tests/test_launch_bound.py); the CPU's are the ones the
results' keys fingerprint (romae.compendium.numerics). `ACCELERATOR` switches them, for measurement only
(`python -m romae.runner.launch`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# what an accelerator runs differently from the CPU (exact up to float rounding): RMSNorm through F.rms_norm's fused
# kernel in float32 (`fused_rms_norm`), head sizes padded to a multiple of 8 (`attend`). Switches for measuring them
# (`python -m romae.runner.launch` turns them off one by one); leave them on
ACCELERATOR = {"fused_norm": True, "pad_heads": True}


class _RMSNorm(torch.autograd.Function):
    """float32 RMSNorm with a hand-derived backward: F.rms_norm is composite on the CPU, so autograd
    records and replays its five element-wise ops; this saves x / rms and 1 / rms and does
    dx = (gw - xn * mean(gw * xn)) / rms, gw = dy * w, dw = sum(dy * xn) (~1.3 % of a Table 9 step)."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True).add_(eps))
        xn = x * rstd
        ctx.save_for_backward(xn, rstd, weight)
        return xn * weight

    @staticmethod
    def backward(ctx, grad):
        xn, rstd, weight = ctx.saved_tensors
        gw = grad * weight
        dx = (gw - xn * (gw * xn).mean(-1, keepdim=True)).mul_(rstd)
        return dx, (grad * xn).sum(tuple(range(grad.dim() - 1))), None


class RMSNorm(nn.Module):
    """RMSNorm (App. A.2, eq. 3): x / sqrt(eps + mean(x^2)) * g; no centring, no bias."""

    def __init__(self, dim: int, eps: float = 1e-12):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        if x.device.type != "cpu" and ACCELERATOR["fused_norm"] and not torch.compiler.is_compiling():
            return fused_rms_norm(x, self.weight, self.eps)
        if (x.dtype == self.weight.dtype == torch.float32 and not torch.is_autocast_enabled(x.device.type)
                and not torch.compiler.is_compiling()):  # compiled: Inductor fuses F.rms_norm itself
            return _RMSNorm.apply(x, self.weight, self.eps)
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


def fused_rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """RMSNorm on an accelerator: normalised in float32 by F.rms_norm's fused kernel (one kernel forward, one
    backward; under BF16 autocast the input is BF16 and the weight float32, which sends F.rms_norm to its composite
    path of ~15 kernels each way), returned in x's dtype, as the composite path returns it. The CPU keeps
    `_RMSNorm` / the composite path (its numbers are the fingerprinted ones)."""
    with torch.autocast(x.device.type, enabled=False):
        y = F.rms_norm(x.float(), (x.shape[-1],), weight.float(), eps)
    return y if y.dtype == x.dtype else y.to(x.dtype)


HEAD_MULTIPLE = 8  # the fused attention kernels (flash, memory-efficient, cuDNN) want head sizes divisible by 8


def attend(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, dropout_p: float = 0.0,
           pad_heads: bool = False) -> Tensor:
    """Scaled dot-product attention of q, k, v [B, H, N, head_dim] -> [B, H, N, head_dim].

    `pad_heads` (on accelerators): a head size that is not a multiple of 8 (RoMAE-tiny's and -base's 60) is
    zero-padded to the next one in q, k and v, with the softmax scale given as 1/sqrt(the true head size) (the
    default would use the padded size's), and the output cut back. The zeros add nothing to q.k and give zero output
    columns, so the result is the same up to float rounding (the wider products may sum in another order; within
    1e-6 in float32 on the CPU's math kernel, tests/test_launch_bound.py), at about 7 % more attention FLOPs; it
    lets padded BF16 batches use the memory-efficient and cuDNN kernels instead of the math kernel and its
    [B, H, N, N] scores."""
    hd = q.shape[-1]
    pad = -hd % HEAD_MULTIPLE if pad_heads else 0
    if not pad:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)
    q, k, v = (F.pad(t, (0, pad)) for t in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, scale=hd ** -0.5)
    return out[..., :hd]
