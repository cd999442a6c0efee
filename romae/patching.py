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

from collections.abc import Sequence

import torch
from torch import Tensor


def _check_grid(x: Tensor, patch_size: Sequence[int]) -> tuple[int, ...]:
    """Validate x [B, *axes, C] against patch_size; return the patch grid shape."""
    n_axes = len(patch_size)
    if x.dim() != n_axes + 2:
        raise ValueError(
            f"x must be [B, *axes, C] with {n_axes} axes for patch_size={tuple(patch_size)}, "
            f"got shape {tuple(x.shape)}")
    grid = []
    for i, (n, p) in enumerate(zip(x.shape[1:-1], patch_size)):
        if p < 1 or n % p:
            raise ValueError(f"patch size {p} does not divide axis {i} of length {n} "
                             f"(x shape {tuple(x.shape)}, patch_size {tuple(patch_size)})")
        grid.append(n // p)
    return tuple(grid)


def patchify(x: Tensor, patch_size: Sequence[int], irregular_axes: Sequence[int] = ()) -> Tensor:
    """x [B, *axes, C] -> tokens [B, N, prod(patch_size) * C], N = number of patches, row-major."""
    for i in irregular_axes:
        if patch_size[i] != 1:
            raise ValueError(
                f"patch size {patch_size[i]} > 1 along irregular axis {i}: a patch of irregularly "
                "sampled points has no single position (Proposition 4.1); use patch size 1 there")
    grid = _check_grid(x, patch_size)
    B, C, n = x.shape[0], x.shape[-1], len(patch_size)
    # [B, g0, p0, g1, p1, ..., C] -> [B, g0, g1, ..., p0, p1, ..., C]
    split = [B] + [s for g, p in zip(grid, patch_size) for s in (g, p)] + [C]
    perm = [0] + [1 + 2 * i for i in range(n)] + [2 + 2 * i for i in range(n)] + [2 * n + 1]
    return x.reshape(split).permute(perm).reshape(B, -1, int(torch.tensor(patch_size).prod()) * C)


def unpatchify(tokens: Tensor, patch_size: Sequence[int], grid: Sequence[int]) -> Tensor:
    """Inverse of `patchify`: tokens [B, N, prod(patch_size) * C] -> x [B, *axes, C]."""
    n = len(patch_size)
    B, N, D = tokens.shape
    n_patch = int(torch.tensor(patch_size).prod())
    if N != int(torch.tensor(grid).prod()) or D % n_patch:
        raise ValueError(f"tokens {tuple(tokens.shape)} do not fit grid {tuple(grid)} "
                         f"with patch_size {tuple(patch_size)}")
    C = D // n_patch
    x = tokens.reshape(B, *grid, *patch_size, C)
    perm = [0] + [v for i in range(n) for v in (1 + i, 1 + n + i)] + [2 * n + 1]
    return x.permute(perm).reshape(B, *[g * p for g, p in zip(grid, patch_size)], C)


def grid_positions(grid: Sequence[int], device=None) -> Tensor:
    """Integer coordinates of each patch of a grid: [n_axes, N] (row-major, matching `patchify`)."""
    axes = [torch.arange(g, dtype=torch.float32, device=device) for g in grid]
    return torch.stack(torch.meshgrid(*axes, indexing="ij")).reshape(len(grid), -1)


def patch_positions(x_shape: Sequence[int], patch_size: Sequence[int],
                    coords: Sequence[Tensor | None] | None = None) -> Tensor:
    """Positions [B, n_axes, N] of the patches of a grid of shape x_shape = (B, *axes, C).

    Regular axes get the patch index (0, 1, 2, ...). An irregular axis i gets its real coordinates
    `coords[i]` ([B, axis_length] or [axis_length]); its patch size must then be 1.
    """
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
