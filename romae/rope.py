"""Positional encodings: continuous axial p-RoPE (Sec. 3.1) and the absolute sin/cos baselines.

RoPE comes in two pieces, as in timm and rotary-embedding-torch:

* `RoPE.angles(positions)` turns real-valued positions [B, n_axes, N] into unit phasors
  exp(i * angle), complex64 [B, N, n_axes, axis_dim/2]. It runs once per forward pass of a stack;
  every block of that stack reuses it.
* `apply_rope(x, rot)` rotates queries or keys x [B, H, N, head_dim]: the plain, readable version.

Layout of one head (head_dim = n_axes * a):

    [ axis 0: a channels | axis 1: a channels | ... ]      contiguous chunk per axis (authors' code)
    inside a chunk, rotate-half pairing: channel j pairs with channel j + a/2, j = 0 .. a/2 - 1
    pair k turns by angle position * theta_k, theta_k = base^(-2k/a)  (exponent normalised by the chunk)
    p-RoPE keeps the floor(p * a/2) highest frequencies (k small); the remaining pairs have theta = 0,
    i.e. they pass through unrotated and carry content only (Barbero et al.; the paper's sentence says
    the opposite, its code does this).

Inside the model (`rotate_qk_`), the fused q/k projection stores each rotate-half pair in two
neighbouring channels, (j, j + a/2) -> (2j, 2j + 1), so that the rotation is one in-place complex
multiply. That is a fixed permutation of the projection's rows, shared by q and k, so attention
scores are exactly those of the rotate-half layout (`interleave_permutation` gives it; a test checks
the equality). On this CPU it makes RoPE about 3x cheaper than rotate-half arithmetic.

Precision of the angles. The angle position * theta_k is formed in float64 and reduced modulo 2 pi
in float64; only the reduced angle, in [0, 2 pi), is cast to float32 for the phasor. In float32 (as
the authors) large positions break RoPE's relative property: float32 keeps 24 significant bits, so
its spacing is 1 from 2^23 ~ 8.4e6 on (fractions lost), 2 from 2^24 ~ 1.7e7, and 128 at 1.7e9
(Unix-second timestamps: about two minutes of distinct times collapse onto one angle); and even from
exact float64 positions, a float32 angle of up to 1.7e9 rad (theta_0 = 1) has no digits left below
2 pi, so its sin/cos are noise. float64 has spacing 2.4e-7 at 1.7e9, so the reduced angle is good to
~1e-7 rad. Large positions should therefore arrive in float64: float32 positions are cast exactly,
but above ~1e7 the caller has already rounded them, which is out of RoPE's hands. This is one elementwise float64 product and remainder over B * N * n_axes *
axis_dim/2 values per forward pass of a stack (not per layer): negligible next to the blocks.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .config import check_number, check_whole


def rope_frequencies(axis_dim: int, p: float = 0.75, base: float = 10000.0,
                     dtype: torch.dtype = torch.float32) -> Tensor:
    """theta_k for the axis_dim/2 rotation pairs of one axis chunk: [axis_dim/2], zeros for NoPE pairs.

    Computed in float64; returned in `dtype` (float32 by default; `RoPE.angles` uses float64).
    """
    if axis_dim % 2:
        raise ValueError(f"an axis chunk needs an even number of channels, got {axis_dim}")
    half = axis_dim // 2
    k = torch.arange(half, dtype=torch.float64)
    theta = base ** (-2.0 * k / axis_dim)
    n_rotated = math.floor(p * half)
    theta[n_rotated:] = 0.0  # identity pairs: cos 0 = 1, sin 0 = 0 exactly
    return theta.to(dtype)


def check_positions(positions: Tensor, n_axes: int, n_tokens: int | None = None,
                    check_finite: bool = True) -> None:
    """Raise a ValueError naming the problem if positions is not a (finite) [B, n_axes, N] tensor."""
    if not isinstance(positions, Tensor):
        raise TypeError(f"positions must be a torch.Tensor [B, n_axes, N], got {type(positions).__name__}")
    if positions.dim() != 3 or positions.shape[1] != n_axes:
        raise ValueError(
            f"positions must have shape [B, n_axes={n_axes}, N], got {tuple(positions.shape)}")
    if n_tokens is not None and positions.shape[2] != n_tokens:
        raise ValueError(f"positions cover {positions.shape[2]} tokens but there are {n_tokens}")
    if check_finite and positions.is_floating_point() and not torch.isfinite(positions).all():
        bad = positions[~torch.isfinite(positions)][0].item()
        raise ValueError(f"positions must be finite, found {bad}")


class RoPE(nn.Module):
    """Continuous axial p-RoPE for one attention stack (head_dim and n_axes fixed)."""

    def __init__(self, head_dim: int, n_axes: int, p: float = 0.75, base: float = 10000.0,
                 quantize: bool = False):
        super().__init__()
        index = lambda v: v.__index__() if hasattr(type(v), "__index__") and not isinstance(v, bool) else v
        head_dim = check_whole("RoPE", "head_dim", index(head_dim), minimum=2)
        n_axes = check_whole("RoPE", "n_axes", index(n_axes), minimum=1)
        p = check_number("RoPE", "p", p, 0, 1, meaning=" (p-RoPE: the fraction of rotation pairs kept)")
        base = check_number("RoPE", "base", base, 0, low_open=True, meaning=" (theta_k = base^(-2k / axis_dim))")
        if head_dim % n_axes or (head_dim // n_axes) % 2:
            raise ValueError(
                f"head_dim={head_dim} must split into n_axes={n_axes} equal chunks of even size; "
                f"{head_dim}/{n_axes} = {head_dim / n_axes:g}. Choose d_model / n_heads divisible by "
                f"{2 * n_axes}")
        self.head_dim, self.n_axes, self.quantize = head_dim, n_axes, quantize
        self.axis_dim, self.p, self.base = head_dim // n_axes, p, base
        self.n_rotated = math.floor(p * self.axis_dim / 2)  # pairs per axis that turn
        # theta: float32, for reading (plots, analysis); theta64: what `angles` multiplies by
        self.register_buffer("theta", rope_frequencies(self.axis_dim, p, base), persistent=False)
        self.register_buffer("theta64", rope_frequencies(self.axis_dim, p, base, torch.float64),
                             persistent=False)

    def _apply(self, fn, recurse=True):
        # `module.to(dtype)` / `.half()` / `.bfloat16()` cast floating buffers too; theta64 must stay
        # float64 (a cast would lose exactly what it is for), so it is rebuilt on its new device.
        super()._apply(fn, recurse)
        if self.theta64.dtype != torch.float64:
            self.theta64 = rope_frequencies(self.axis_dim, self.p, self.base, torch.float64).to(
                self.theta64.device)
        return self

    def angles(self, positions: Tensor) -> Tensor:
        """positions [B, n_axes, N] -> phasors exp(i * angle), complex64 [B, N, n_axes, axis_dim/2].

        NoPE pairs get exp(0) = 1 exactly. Positions get no gradient through RoPE: they are data.
        The angle is formed and reduced modulo 2 pi in float64 (see the module docstring), so float64
        positions as large as Unix-second timestamps (~1.7e9) keep their fractional part.
        """
        check_positions(positions, self.n_axes, check_finite=False)  # finiteness: checked by the model
        pos = positions.detach().to(torch.float64)  # exact for float32 / float64 / int (< 2^53)
        if self.quantize:  # "quantized RoPE": integer positions only (Table 9, ablations)
            pos = torch.round(pos)
        # angle of pair k of axis i for token n: pos[b, i, n] * theta_k, in float64, then reduced to
        # [0, 2 pi) in float64; NoPE pairs: theta = 0 -> angle 0 exactly -> phasor 1 exactly
        ang = pos.transpose(1, 2).unsqueeze(-1) * self.theta64.to(pos.device)
        ang = torch.remainder(ang, 2 * math.pi).float()
        return torch.polar(torch.ones_like(ang), ang)

    def extra_repr(self) -> str:
        return (f"head_dim={self.head_dim}, n_axes={self.n_axes}, rotated_pairs_per_axis="
                f"{self.n_rotated}/{self.axis_dim // 2}, quantize={self.quantize}")


def apply_rope(x: Tensor, rot: Tensor) -> Tensor:
    """Rotate x [B, H, N, head_dim] (queries or keys, rotate-half layout) by phasors rot [B, N, A, a/2].

    Per axis chunk: [x1, x2] -> [x1 cos - x2 sin, x2 cos + x1 sin], formed in float32, x's dtype out.
    """
    A, half = rot.shape[-2:]
    cos, sin = rot.real[:, None], rot.imag[:, None]  # [B, 1, N, A, a/2], broadcast over heads
    # rotate-half: [x0..x(a/2-1)] pairs with [x(a/2)..x(a-1)] inside each axis chunk
    x1, x2 = x.float().reshape(*x.shape[:-1], A, 2, half).unbind(-2)
    out = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-2)
    return out.reshape(x.shape).to(x.dtype)


def interleave_permutation(head_dim: int, n_axes: int) -> Tensor:
    """perm such that x_interleaved = x_rotate_half[..., perm] for one head (see the module docstring)."""
    half = head_dim // (2 * n_axes)
    return torch.arange(head_dim).view(n_axes, 2, half).transpose(1, 2).reshape(-1)


def _complex_view(x: Tensor, n_heads: int, A: int) -> Tensor:
    """[B, N, 2 * H * head_dim] float32 -> complex view [B, N, 2 (q|k), H, A, a/2]."""
    B, N, width = x.shape
    return torch.view_as_complex(x.view(B, N, 2, n_heads, A, width // (4 * n_heads * A), 2))


class _RotateQK(torch.autograd.Function):
    """In-place rotation of the fused q/k projection output; backward multiplies by conj(rot)."""

    @staticmethod
    def forward(ctx, qk, rot, n_heads):
        rot = rot[:, :, None, None]  # [B, N, 1, 1, A, a/2]: broadcast over (q|k, head)
        ctx.save_for_backward(rot)
        ctx.n_heads = n_heads
        ctx.mark_dirty(qk)
        if qk.dtype == torch.float32 and qk.is_contiguous():
            _complex_view(qk, n_heads, rot.shape[-2]).mul_(rot)
        else:  # bf16 / fp16 / strided: rotate in float32, cast back once (as the authors)
            z = _complex_view(qk.float().contiguous(), n_heads, rot.shape[-2]).mul_(rot)
            qk.copy_(torch.view_as_real(z).view(qk.shape))
        return qk

    @staticmethod
    def backward(ctx, grad):
        (rot,) = ctx.saved_tensors
        # R(phi) is orthogonal: the gradient is R(-phi) g. In the attention block the incoming
        # gradient is a fresh buffer (SDPA's q/k gradients, stacked) that nothing else reads, so it
        # is rotated in place; otherwise a float32 copy is.
        g = grad if grad.dtype == torch.float32 and grad.is_contiguous() else grad.float().contiguous()
        z = _complex_view(g, ctx.n_heads, rot.shape[-2]).mul_(rot.conj())
        return torch.view_as_real(z).view(grad.shape).to(grad.dtype), None, None


def rotate_qk_(qk: Tensor, rot: Tensor, n_heads: int) -> Tensor:
    """In place: RoPE on a fused q/k projection output qk [B, N, 2 * n_heads * head_dim], pair-interleaved.

    For the attention block only: the result must go straight to the head split and attention (as in
    `romae.model.Attention`), because the backward pass also rotates its incoming gradient in place.
    Anywhere else, use the pure `apply_rope`.
    """
    return _RotateQK.apply(qk, rot, n_heads)


# ----------------------------------------------------------------------------- absolute baselines

def sincos_1d(positions: Tensor, dim: int, base: float = 10000.0) -> Tensor:
    """Transformer sin/cos table: positions [...] -> [..., dim]; sine on even, cosine on odd channels."""
    if dim % 2:
        raise ValueError(f"a sin/cos encoding needs an even width, got {dim}")
    freq = base ** (-torch.arange(0, dim, 2, dtype=torch.float32, device=positions.device) / dim)
    ang = positions.float().unsqueeze(-1) * freq
    return torch.stack((ang.sin(), ang.cos()), dim=-1).flatten(-2)  # interleave: sin, cos, sin, ...


def sincos_nd(positions: Tensor, dim: int, base: float = 10000.0) -> Tensor:
    """MAE-style N-D sin/cos from real positions [B, n_axes, N] -> [B, N, dim]; one dim/n_axes chunk per axis."""
    n_axes = positions.shape[1]
    if dim % (2 * n_axes):
        raise ValueError(f"d_model={dim} must be divisible by 2 * n_axes = {2 * n_axes} for N-D sin/cos")
    chunks = [sincos_1d(positions[:, i], dim // n_axes, base) for i in range(n_axes)]
    return torch.cat(chunks, dim=-1)
