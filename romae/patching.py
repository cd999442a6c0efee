"""N-D patchification: regular grids <-> token lists with positions.

RoMAE sees every input as a list of tokens: values [B, N, token_dim], real-valued positions
[B, n_axes, N] and an optional padding mask [B, N] (True = padding).

* Regular data (images, spectrograms, regularly sampled series) is a grid x [B, *axes, C]
  (channels last) cut into non-overlapping patches of `patch_size` (one entry per axis).
  Tokens are ordered row-major over the patch grid (first axis slowest, e.g. time, then height, then
  width); inside a token the values are ordered (offset along axis 0, ..., offset along the last axis,
  channel) with the channel fastest, as in the authors' code.
* Irregular axes (e.g. observation time) carry their real coordinates in `positions`. A patch must
  not straddle several irregular samples (Proposition 4.1: there is no single position for it), so a
  patch size > 1 along an irregular axis is refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor


def _sizes(values, name: str, minimum: int = 1) -> tuple[int, ...]:
    """`values` (one entry per axis) as a tuple of whole numbers >= minimum, else a ValueError naming them.

    2 and 2.0 (and numpy / torch integers) pass; 2.5, True, "2", NaN and a bare number are refused."""
    if isinstance(values, Tensor):
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, range)) and not hasattr(values, "tolist"):
        raise ValueError(f"{name} must be a sequence with one whole number per axis, got {values!r}")
    values = values.tolist() if hasattr(values, "tolist") else list(values)
    if not isinstance(values, list):  # a 0-d array: a bare number
        raise ValueError(f"{name} must be a sequence with one whole number per axis, got {values!r}")
    out = []
    for v in values:
        v = v.item() if hasattr(v, "item") and not isinstance(v, (bool, int, float)) else v
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or int(v) != v \
                or v < minimum:
            raise ValueError(f"{name} must hold whole numbers >= {minimum}, one per axis, got {tuple(values)!r}")
        out.append(int(v))
    return tuple(out)


def _check_tensor(x, what: str = "x") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{what} must be a torch.Tensor [B, *axes, C], got {type(x).__name__} "
                        "(torch.as_tensor(x) converts an array)")
    return x


def _check_grid(x: Tensor, patch_size: tuple[int, ...]) -> tuple[int, ...]:
    """Validate x [B, *axes, C] against patch_size (already through `_sizes`); return the patch grid shape."""
    _check_tensor(x)
    n_axes = len(patch_size)
    if n_axes == 0:
        raise ValueError("patch_size must have one entry per axis of x [B, *axes, C], got ()")
    if x.dim() != n_axes + 2:
        raise ValueError(
            f"x must be [B, *axes, C] with {n_axes} axes for patch_size={tuple(patch_size)}, "
            f"got shape {tuple(x.shape)}")
    grid = []
    for i, (n, p) in enumerate(zip(x.shape[1:-1], patch_size)):
        if n == 0:
            raise ValueError(f"axis {i} of x has length 0: no patch to cut (x shape {tuple(x.shape)})")
        if n % p:
            raise ValueError(f"patch size {p} does not divide axis {i} of length {n} "
                             f"(x shape {tuple(x.shape)}, patch_size {tuple(patch_size)})")
        grid.append(n // p)
    return tuple(grid)


def patchify(x: Tensor, patch_size: Sequence[int], irregular_axes: Sequence[int] = ()) -> Tensor:
    """x [B, *axes, C] -> tokens [B, N, prod(patch_size) * C], N = number of patches, row-major."""
    patch_size = _sizes(patch_size, "patch_size")
    grid = _check_grid(x, patch_size)
    for i in irregular_axes:
        if isinstance(i, bool) or not isinstance(i, int) or not -len(patch_size) <= i < len(patch_size):
            raise ValueError(f"irregular_axes must name axes 0..{len(patch_size) - 1} of the grid, got {i!r}")
        if patch_size[i] != 1:
            raise ValueError(
                f"patch size {patch_size[i]} > 1 along irregular axis {i}: a patch of irregularly "
                "sampled points has no single position (Proposition 4.1); use patch size 1 there")
    B, C, n = x.shape[0], x.shape[-1], len(patch_size)
    # [B, g0, p0, g1, p1, ..., C] -> [B, g0, g1, ..., p0, p1, ..., C]
    split = [B] + [s for g, p in zip(grid, patch_size) for s in (g, p)] + [C]
    perm = [0] + [1 + 2 * i for i in range(n)] + [2 + 2 * i for i in range(n)] + [2 * n + 1]
    n_tokens, n_patch = math.prod(grid), math.prod(patch_size)
    return x.reshape(split).permute(perm).reshape(B, n_tokens, n_patch * C)


def unpatchify(tokens: Tensor, patch_size: Sequence[int], grid: Sequence[int]) -> Tensor:
    """Inverse of `patchify`: tokens [B, N, prod(patch_size) * C] -> x [B, *axes, C]."""
    _check_tensor(tokens, "tokens")
    patch_size, grid = _sizes(patch_size, "patch_size"), _sizes(grid, "grid")
    n = len(patch_size)
    if tokens.dim() != 3 or len(grid) != n:
        raise ValueError(f"tokens must be [B, N, D] and grid have one entry per patch_size axis ({n}), got tokens "
                         f"{tuple(tokens.shape)} and grid {grid}")
    B, N, D = tokens.shape
    n_patch = math.prod(patch_size)
    if N != math.prod(grid) or D % n_patch:
        raise ValueError(f"tokens {tuple(tokens.shape)} do not fit grid {tuple(grid)} "
                         f"with patch_size {tuple(patch_size)}")
    C = D // n_patch
    x = tokens.reshape(B, *grid, *patch_size, C)
    perm = [0] + [v for i in range(n) for v in (1 + i, 1 + n + i)] + [2 * n + 1]
    return x.permute(perm).reshape(B, *[g * p for g, p in zip(grid, patch_size)], C)


def grid_positions(grid: Sequence[int], device=None) -> Tensor:
    """Integer coordinates of each patch of a grid: [n_axes, N] (row-major, matching `patchify`)."""
    grid = _sizes(grid, "grid", minimum=0)
    axes = [torch.arange(g, dtype=torch.float32, device=device) for g in grid]
    return torch.stack(torch.meshgrid(*axes, indexing="ij")).reshape(len(grid), -1)


def patch_positions(x_shape: Sequence[int], patch_size: Sequence[int],
                    coords: Sequence[Tensor | None] | None = None) -> Tensor:
    """Positions [B, n_axes, N] of the patches of a grid of shape x_shape = (B, *axes, C).

    Regular axes get the patch index (0, 1, 2, ...). An irregular axis i gets its real coordinates
    `coords[i]` ([B, axis_length] or [axis_length]); its patch size must then be 1.
    """
    x_shape, patch_size = _sizes(x_shape, "x_shape", minimum=0), _sizes(patch_size, "patch_size")
    if len(x_shape) != len(patch_size) + 2:
        raise ValueError(f"x_shape must be (B, *axes, C) with {len(patch_size)} axes for patch_size={patch_size}, "
                         f"got {x_shape}")
    B = x_shape[0]
    n = len(patch_size)
    grid = [s // p for s, p in zip(x_shape[1:-1], patch_size)]
    coords = list(coords) if coords is not None else [None] * n
    if len(coords) != n:
        raise ValueError(f"coords must have one entry per axis ({n}), got {len(coords)}")
    axes = []
    for i, (g, c) in enumerate(zip(grid, coords)):
        if c is None:
            axes.append(torch.arange(g, dtype=torch.float32).expand(B, g))
            continue
        if patch_size[i] != 1:
            raise ValueError(
                f"patch size {patch_size[i]} > 1 along irregular axis {i} (Proposition 4.1)")
        c = torch.as_tensor(c, dtype=torch.float32)
        c = c.expand(B, g) if c.dim() == 1 else c
        if tuple(c.shape) != (B, g):
            raise ValueError(f"coords[{i}] must be [B={B}, {g}] or [{g}], got {tuple(c.shape)}")
        axes.append(c)
    # broadcast every axis over the patch grid, row-major like patchify
    out = []
    for i, a in enumerate(axes):
        view = [B] + [1] * n
        view[1 + i] = grid[i]
        out.append(a.reshape(view).expand(B, *grid).reshape(B, -1))
    return torch.stack(out, dim=1)
