"""Absolute-position reconstruction data (Sec. 5.1 / Table 1 and App. B.1 / Figure 2).

A sample is `n_tokens` tokens that all carry the value 1.0 (one scalar per token, token_dim 1), each at
an independent real-valued 1-D position p ~ U(low, high); the label is the positions themselves. The
values carry no information, so a model can only recover p from how RoPE acted on its attention.

    data = position_samples(20_000, n_tokens=10, low=1.0, high=50.0, seed=0)
    data["values"]     # [n, N, 1]  all ones
    data["positions"]  # [n, 1, N]  (one positional axis, the layout RoMAE takes)
    data["labels"]     # [n, N, 1]  = the positions, one target per token

Sec. 5.1 (authors' code): 10 tokens, U(1, 50) (the paper's text says "between 0 and 50").
App. B.1: one token (+ [CLS], added by the model), U(0, 100) or U(0, 1000), evaluated on an even grid.
The authors drew the data from torch's global generator before seeding each run (one unseeded data set
shared by all seeds); here every draw comes from its own seeded generator, so a data set is a
function of (n, n_tokens, low, high, seed) alone.
"""

from __future__ import annotations

import torch


def position_samples(n: int, n_tokens: int = 10, low: float = 1.0, high: float = 50.0,
                     seed: int = 0) -> dict[str, torch.Tensor]:
    """n samples of n_tokens ones at positions i.i.d. U(low, high) -> {values, positions, labels} (float32).

    values [n, N, 1] = 1; positions [n, 1, N]; labels [n, N, 1] = the positions. Deterministic in `seed`.
    """
    if n < 1 or n_tokens < 1:
        raise ValueError(f"n and n_tokens must be >= 1, got {n}, {n_tokens}")
    if not high > low:
        raise ValueError(f"need high > low, got low={low}, high={high}")
    g = torch.Generator().manual_seed(seed)
    p = low + (high - low) * torch.rand(n, n_tokens, generator=g, dtype=torch.float64)  # [n, N]
    p = p.float()
    return dict(values=torch.ones(n, n_tokens, 1), positions=p.unsqueeze(1).contiguous(),
                labels=p.unsqueeze(-1).contiguous())


def position_grid(low: float, high: float, n: int = 500) -> dict[str, torch.Tensor]:
    """App. B.1's evaluation set: n single-token samples at linspace(low, high, n) (end points included).

    Same layout as `position_samples` with n_tokens = 1: values [n, 1, 1], positions [n, 1, 1], labels [n, 1, 1].
    """
    p = torch.linspace(low, high, n, dtype=torch.float64).float()
    return dict(values=torch.ones(n, 1, 1), positions=p.view(n, 1, 1).clone(), labels=p.view(n, 1, 1).clone())


def uniform_variance(low: float, high: float) -> float:
    """Variance of U(low, high), (high - low)^2 / 12: the MSE of the best constant prediction (the mean).

    For reference lines and prose only; no metric of ours is computed from it.
    """
    return (high - low) ** 2 / 12.0


def translation_invariant_floor(n_tokens: int, low: float, high: float) -> float:
    """Lowest MSE a translation-invariant model can reach on `position_samples` data: L^2 / (2 (n+1)(n+2)).

    A model that sees only the differences between the n positions (no [CLS], Corollary 4.1) still
    knows their spread R = max - min; the unknown shift min is then uniform on [low, high - R], so the
    best prediction is offset + E[min | R] with MSE (L - R)^2 / 12, L = high - low. (L - R) / L is
    Beta(2, n - 1), so E[(L - R)^2] = 6 L^2 / ((n + 1)(n + 2)). For n = 10 on U(1, 50): 9.09, far below
    the variance 200.08 that the constant (mean) prediction scores. For prose and reference lines only.
    """
    return (high - low) ** 2 / (2.0 * (n_tokens + 1) * (n_tokens + 2))
