"""The model's checks of its inputs: positions within reach of the encodings (`MAX_POSITION`), finite real tokens,
real (not complex) numbers, and positions that float32 would merge where an encoding computes in float32; each error
names the sample and token (`romae.masking.BadSample`; deferred on an accelerator)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from . import masking
from .masking import _require


MAX_POSITION = 2.0 ** 53  # the largest position magnitude a model reading positions takes: beyond it float64
#                          cannot hold whole units, and RoPE's angles (position x theta, reduced mod 2 pi) keep no digits


def _check_finite(name: str, bad: Tensor, x: Tensor, limit: float | None = None) -> None:
    """Refuse the first non-finite real token (a BadSample naming it): bad [B, N] bool, x [B, N, ...]; on an
    accelerator, a deferred check (masking.deferred_checks) that keeps only the first bad token's row. With
    `limit`, entries beyond +-limit are refused too (positions: MAX_POSITION)."""
    n_tokens = bad.shape[1]
    first = masking.first_true(bad)
    row = x.reshape(bad.numel(), -1).index_select(0, first.reshape(1))[0]

    def error():
        b, n = divmod(int(first), n_tokens)
        v = row[~(torch.isfinite(row) if limit is None else row.abs() <= limit)][0].item()
        if math.isfinite(v):
            return masking.BadSample(f"{name} must lie within +-2**53 (about 9.0e15), found {v:g} in ", b,
                                     f", token {n} (beyond it positions lose whole units and RoPE's angles all their "
                                     "digits): subtract a reference time, e.g. t - t.min()")
        return masking.BadSample(f"{name} must be finite, found {v} in ", b, f", token {n} (real, non-padded tokens "
                                 "must be finite: mark a missing observation as padding, pad_mask=True, or build the "
                                 "batch with romae.from_sequences)")

    _require(~bad.any(), f"{name} must be finite" + ("" if limit is None else " and within +-2**53"), error=error)


def _refuse_complex(name: str, x) -> None:
    """A complex tensor is refused (a TypeError naming it) rather than cast to real with torch's warning."""
    if torch.is_tensor(x) and x.is_complex():
        raise TypeError(f"{name} is {str(x.dtype).replace('torch.', '')}; RoMAE takes real numbers: pass .real or "
                        ".abs() yourself")


def _check_float32_merge(positions: Tensor, pad_mask: Tensor | None) -> None:
    """pos_encoding='absolute_nd' forms its sin/cos from float32 positions: refuse float64 positions of a sample
    whose distinct values on an axis float32 would round together (e.g. Unix seconds 60 apart), naming them."""
    B, A, N = positions.shape
    p = positions if pad_mask is None else positions.masked_fill(pad_mask.unsqueeze(1), float("nan"))
    s = p.sort(dim=-1).values  # rounding is monotone: merged values end up side by side; NaN (padding) last
    s32 = s.float()
    bad = ((s[..., 1:] != s[..., :-1]) & (s32[..., 1:] == s32[..., :-1])).any(-1)  # [B, A]
    first = masking.first_true(bad)
    row = s.reshape(B * A, N).index_select(0, first.reshape(1))[0]

    def error():
        b, a = divmod(int(first), A)
        r = row[~torch.isnan(row)]
        return masking.BadSample("positions of ", b, f" on axis {a}: {r.unique().numel()} distinct positions become "
                                 f"{r.float().unique().numel()} in float32, which pos_encoding='absolute_nd' computes "
                                 "its sin/cos in; subtract a reference time (e.g. t - t.min()) or use RoPE (float64 "
                                 "angles)")

    _require(~bad.any(), "positions merge in float32 (pos_encoding='absolute_nd')", error=error)
