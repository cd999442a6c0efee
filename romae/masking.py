"""Vectorised MAE masks and the gathers that split tokens into visible and hidden sets.

Conventions (as in MAE and the authors' code): `mask` [B, N] is True where a token is hidden (to be
reconstructed); `pad_mask` [B, N] is True where a token is padding. Every sample of a batch hides the
same number of tokens, so the visible set is a dense [B, N_visible, ...] tensor with no Python loop.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def check_pad_mask(pad_mask: Tensor | None, B: int, N: int) -> None:
    """Raise if pad_mask is not a boolean [B, N] or if some sample is nothing but padding."""
    if pad_mask is None:
        return
    if pad_mask.dtype != torch.bool or tuple(pad_mask.shape) != (B, N):
        raise ValueError(f"pad_mask must be a bool tensor of shape [{B}, {N}], "
                         f"got {pad_mask.dtype} {tuple(pad_mask.shape)}")
    empty = pad_mask.all(dim=1)
    if empty.any():
        raise ValueError(f"sample {int(empty.nonzero()[0])} of the batch is all padding")


def random_mask(B: int, N: int, mask_ratio: float, pad_mask: Tensor | None = None,
                device=None, generator: torch.Generator | None = None) -> Tensor:
    """Uniform random mask [B, N] (True = hidden) with the same number of hidden tokens per sample.

    Without padding every sample hides ceil(N * mask_ratio) tokens. With padding, a sample with n real
    tokens hides ceil(n * mask_ratio) of them (at most n - 1, so one real token stays visible), and the
    count is topped up to the batch-wide K = ceil(N * mask_ratio) with padded slots, which the loss
    ignores (the authors' "single" masking mode, done without a per-sample loop).
    """
    if not 0.0 < mask_ratio < 1.0:
        raise ValueError(f"mask_ratio must lie in (0, 1), got {mask_ratio}")
    if N < 2:
        raise ValueError(f"a random mask needs at least 2 tokens (one visible, one hidden), got N={N}")
    device = pad_mask.device if pad_mask is not None else device
    K = min(math.ceil(N * mask_ratio), N - 1)
    noise = torch.rand(B, N, device=device, generator=generator)
    if pad_mask is None:
        rank = noise.argsort(dim=1).argsort(dim=1)  # rank of each token in a random order
        return rank < K
    check_pad_mask(pad_mask, B, N)
    n_real = (~pad_mask).sum(dim=1, keepdim=True)
    k_real = torch.minimum(torch.ceil(n_real * mask_ratio).long(), n_real - 1)
    # real tokens rank first (random order), padding after them (random order)
    rank = (noise + pad_mask.float() * 2.0).argsort(dim=1).argsort(dim=1)
    hide_real = ~pad_mask & (rank < k_real)
    hide_pad = pad_mask & (rank < n_real + (K - k_real))
    # K - k_real <= N - n_real always holds (ceil is subadditive), so every sample hides exactly K
    return hide_real | hide_pad


def check_mask(mask: Tensor, B: int, N: int) -> int:
    """Validate a hidden-token mask [B, N]; return the (common) number of hidden tokens per sample."""
    if mask.dtype != torch.bool or tuple(mask.shape) != (B, N):
        raise ValueError(f"mask must be a bool tensor of shape [{B}, {N}], got {mask.dtype} "
                         f"{tuple(mask.shape)}")
    counts = mask.sum(dim=1)
    if (counts != counts[0]).any():
        raise ValueError(
            f"every sample must hide the same number of tokens; got counts {counts.tolist()[:16]}")
    n_hidden = int(counts[0])
    if n_hidden == 0:
        raise ValueError("the mask hides no token: pre-training and interpolation need at least one hidden "
                         "token to reconstruct")
    if n_hidden == N:
        raise ValueError("the mask hides every token: at least one must stay visible")
    return n_hidden


def split_indices(mask: Tensor) -> tuple[Tensor, Tensor]:
    """mask [B, N] -> (visible_idx [B, N_vis], hidden_idx [B, N_hid]), each in original token order."""
    n_hidden = int(mask[0].sum())
    order = mask.to(torch.int8).argsort(dim=1, stable=True)  # visible (0) first, then hidden (1)
    return order[:, : mask.shape[1] - n_hidden], order[:, mask.shape[1] - n_hidden:]


def gather_tokens(x: Tensor, idx: Tensor) -> Tensor:
    """x [B, N, *rest] gathered along tokens by idx [B, M] -> [B, M, *rest]."""
    return x.gather(1, idx.reshape(*idx.shape, *[1] * (x.dim() - 2)).expand(-1, -1, *x.shape[2:]))


def gather_positions(positions: Tensor, idx: Tensor) -> Tensor:
    """positions [B, A, N] gathered along tokens by idx [B, M] -> [B, A, M]."""
    return positions.gather(2, idx.unsqueeze(1).expand(-1, positions.shape[1], -1))


def pad_observed(values: Tensor, positions: Tensor, observed: Tensor, n_min: int, n_max: int) -> dict:
    """Series with different numbers of observed points -> equal-count masks through padding.

    The model hides the same number of tokens in every sample. A series with k observed points (n_min
    <= k <= n_max) gets P = n_max - n_min padded tokens appended: n_max - k of them visible and k - n_min
    hidden, so every row shows n_max tokens and hides N - n_min. Padded tokens carry value 0 and
    position 0 and are excluded from attention and from the loss through `pad_mask`.

    values [B, N, C], positions [B, A, N], observed [B, N] bool -> dict(values [B, N+P, C],
    positions [B, A, N+P], mask [B, N+P] (True = hidden), pad_mask [B, N+P]).
    """
    B, N, C = values.shape
    k = observed.sum(1, keepdim=True)
    if (k < n_min).any() or (k > n_max).any() or not 1 <= n_min <= n_max < N:
        raise ValueError(f"observed counts must lie in [n_min={n_min}, n_max={n_max}] with n_max < N={N}; "
                         f"got {sorted(set(k.flatten().tolist()))}")
    P = n_max - n_min
    extra = torch.arange(P, device=values.device).expand(B, P)
    return dict(values=torch.cat((values, values.new_zeros(B, P, C)), 1),
                positions=torch.cat((positions, positions.new_zeros(B, positions.shape[1], P)), 2),
                mask=torch.cat((~observed, extra >= n_max - k), 1),
                pad_mask=torch.cat((torch.zeros_like(observed), torch.ones_like(extra, dtype=torch.bool)), 1))
