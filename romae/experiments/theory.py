"""Continuous RoPE and the [CLS] token: the paper's theory (Sec. 3.1, Prop. 4.2, Corollary 4.1), checked numerically.

Nothing here trains. Four small computations, each on the library's own RoPE (`romae.rope`) or model:

* `relative_property_table`: <R^m q, R^n k> = <R^(m-n) q, k> for real m, n on 1-3 axes (Sec. 3.1).
* `channel_frequency_table` / `channel_summary` / `plot_channel_frequencies`: which channel of a head
  turns at which frequency theta (or not at all: 'NoPE') under axial p-RoPE, for the Table 8 sizes.
* `prop42_psi` / `prop42_scores` / `prop42_closed_form`: the construction of App. C.1. A [CLS] key at the
  origin (Definition C.1) equal to R^r psi and a query psi at position j score psi^T R^(r-j) psi
  = sum_i ||psi^(i)||^2 cos((r - j) theta_i) (eqs. 5-7), largest at j = r for any real r.
* `translation_gap` / `translation_table`: a randomly initialised RoMAE encoder is blind to a common
  shift of all positions without [CLS] (Corollary 4.1) and sees it with [CLS] at the origin.

Every profile does the same (cheap) work; `config(profile)` only validates the name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from ..config import RoMAEConfig, check_profile, size
from ..model import RoMAEForPrediction
from ..rope import RoPE, apply_rope


@dataclass(frozen=True)
class TheoryConfig:
    """What the notebook computes; identical for smoke | quick | paper (seconds on a CPU)."""

    sizes: tuple[str, ...] = ("tiny", "small", "base")  # Table 8 sizes: head dims 60, 72, 60
    axes: tuple[int, ...] = (1, 2, 3)  # Table 8's sizes are chosen to work for up to 3 axes (Sec. 3.1)
    p: float = 0.75  # p-RoPE fraction of rotating pairs (Sec. 3.1; highest frequencies kept, authors' code)
    head_dim: int = 60  # tiny / base head width, used for the Prop. 4.2 construction
    r_values: tuple[float, ...] = (2.5, 7.3, 13.0, 16.77)  # real target distances r for Fig. prop42
    j_max: float = 20.0  # query positions j in [0, j_max] ...
    j_step: float = 0.01  # ... on this grid (fine enough to see each peak's shape)
    shifts: tuple[float, ...] = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)  # common shifts c
    encoder_size: str = "tiny"  # the real encoder of the translation check (12 blocks, random init)
    n_tokens: int = 16  # tokens per sample in the translation check
    batch: int = 4  # samples in the translation check
    position_scale: float = 20.0  # positions drawn from U(0, position_scale) on every axis
    seed: int = 0


def config(profile: str) -> TheoryConfig:
    """The (profile-independent) settings; raises ValueError on an unknown profile name."""
    check_profile(profile)
    return TheoryConfig()


# ----------------------------------------------------------------------------- Sec. 3.1: relative property

def relative_property_table(axes=(1, 2, 3), head_dim: int = 60, n_pairs: int = 4, p: float = 0.75,
                            scale: float = 50.0, seed: int = 0) -> pd.DataFrame:
    """Check <R^m q, R^n k> = <R^(m-n) q, k> for random real m, n in [-scale/2, scale/2]^n_axes.

    One row per (n_axes, draw): the two scores (float32, as the model computes them), their absolute
    difference, and the score after adding the same real offset to m and n (must not change) and after
    moving m alone by 0.37 (must change). q, k: [head_dim] standard normal.
    """
    g = torch.Generator().manual_seed(seed)
    rows = []
    for n_axes in axes:
        rope = RoPE(head_dim, n_axes, p)
        for _ in range(n_pairs):
            q, k = torch.randn(2, 1, 1, 1, head_dim, generator=g).unbind(0)  # each [B=1, H=1, N=1, hd]
            m, n = (torch.rand(2, 1, n_axes, 1, generator=g) * scale - scale / 2).unbind(0)  # [1, A, 1]
            offset = float(torch.rand((), generator=g) * 100)

            def score(mq, nk):
                return float((apply_rope(q, rope.angles(mq)) * apply_rope(k, rope.angles(nk))).sum())

            lhs = score(m, n)
            rhs = float((apply_rope(q, rope.angles(m - n)) * k).sum())
            rows.append(dict(n_axes=n_axes, m=np.round(m.double().flatten().numpy(), 3).tolist(),
                             n=np.round(n.double().flatten().numpy(), 3).tolist(), score=lhs, score_relative=rhs,
                             abs_diff=abs(lhs - rhs), diff_after_common_offset=abs(score(m + offset, n + offset) - lhs),
                             diff_after_moving_m=abs(score(m + 0.37, n) - lhs)))
    return pd.DataFrame(rows)


def relative_property_text(rel: pd.DataFrame) -> str:
    """What `relative_property_table` found, in one sentence computed from it (for the notebook's prose)."""
    return (f"Over {len(rel)} draws on {rel.n_axes.nunique()} axis counts: |score - score_relative| <= "
            f"{rel.abs_diff.max():.1e}; a common real offset of m and n changes the score by <= "
            f"{rel.diff_after_common_offset.max():.1e}; moving m alone by 0.37 changes it by "
            f"{rel.diff_after_moving_m.min():.2g} to {rel.diff_after_moving_m.max():.2g}.")


# ----------------------------------------------------------------------------- axial chunks and p-RoPE

def channel_frequency_table(size_name: str, n_axes: int, p: float = 0.75, base: float = 10000.0) -> pd.DataFrame:
    """One row per channel of one attention head (rotate-half layout): which axis and pair it belongs to,
    its partner channel, its frequency theta (0 for NoPE pairs) and a label ('1.00e+00' or 'NoPE').

    Layout: head = n_axes contiguous chunks of a = head_dim / n_axes channels; inside a chunk channel l
    pairs with l + a/2; pair k turns by position * theta_k, theta_k = base^(-2k/a), the last
    a/2 - floor(p a/2) pairs are NoPE. (The model stores pairs interleaved; scores are identical.)
    """
    head_dim = size(size_name).head_dim
    rope = RoPE(head_dim, n_axes, p, base)  # validates the split; rope.theta: [a/2]
    a, half = rope.axis_dim, rope.axis_dim // 2
    c = np.arange(head_dim)
    local = c % a
    pair = local % half
    theta = rope.theta.double().numpy()[pair]
    return pd.DataFrame(dict(
        size=size_name, head_dim=head_dim, n_axes=n_axes, channel=c, axis=c // a, pair=pair,
        partner=(c // a) * a + (local + half) % a, theta=theta, rotated=theta > 0,
        label=[f"{t:.2e}" if t > 0 else "NoPE" for t in theta]))


def channel_summary(sizes=("tiny", "small", "base"), axes=(1, 2, 3), p: float = 0.75) -> pd.DataFrame:
    """One row per (size, n_axes): chunk width, pairs / rotated / NoPE pairs per axis and per head,
    the lowest kept theta and its period 2 pi / theta (the longest distance RoPE can tell apart)."""
    rows = []
    for s in sizes:
        for A in axes:
            t = channel_frequency_table(s, A, p)
            pairs = t[t.channel % (t.head_dim.iloc[0] // A) < t.head_dim.iloc[0] // (2 * A)]  # one row per pair
            kept = pairs[pairs.rotated]
            rows.append(dict(size=s, head_dim=int(t.head_dim.iloc[0]), n_axes=A, chunk=int(t.head_dim.iloc[0] // A),
                             pairs_per_axis=len(pairs) // A, rotated_per_axis=len(kept) // A,
                             nope_per_axis=(len(pairs) - len(kept)) // A, rotated_pairs_per_head=len(kept),
                             pairs_per_head=len(pairs), lowest_theta=kept.theta.min(),
                             longest_period=2 * math.pi / kept.theta.min()))
    return pd.DataFrame(rows)


def plot_channel_frequencies(sizes=("tiny", "small", "base"), axes=(1, 2, 3), p: float = 0.75):
    """Figure: one row per (size, n_axes), one column per channel; colour = log10 theta, grey = NoPE,
    black ticks = axis-chunk boundaries. Returns the matplotlib figure."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    tables = [channel_frequency_table(s, A, p) for s in sizes for A in axes]
    width = max(int(t.head_dim.iloc[0]) for t in tables)
    logt = np.full((len(tables), width), np.nan)  # [rows, channels]
    nope = np.full((len(tables), width), np.nan)
    for r, t in enumerate(tables):
        logt[r, t.channel[t.rotated]] = np.log10(t.theta[t.rotated])
        nope[r, t.channel[~t.rotated]] = 1.0
    fig, ax = plt.subplots(figsize=(11, 0.42 * len(tables) + 1.4))
    im = ax.imshow(logt, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.imshow(nope, aspect="auto", cmap=ListedColormap(["0.75"]), interpolation="nearest")
    for r, t in enumerate(tables):
        a = int(t.head_dim.iloc[0]) // int(t.n_axes.iloc[0])
        for b in range(0, int(t.head_dim.iloc[0]) + 1, a):  # chunk boundaries
            ax.plot([b - 0.5, b - 0.5], [r - 0.5, r + 0.5], color="k", lw=1.5)
        ax.plot([a // 2 - 0.5] * 2, [r - 0.5, r + 0.5], color="w", lw=0.6, ls=":")  # half of chunk 0
    ax.set_yticks(range(len(tables)))
    ax.set_yticklabels([f"{t['size'].iloc[0]} (hd {t.head_dim.iloc[0]}), {t.n_axes.iloc[0]} ax" for t in tables])
    ax.set_xlabel("channel of one head (rotate-half layout; grey = NoPE, black = axis-chunk boundary)")
    ax.set_title(f"Axial p-RoPE (p = {p}): frequency theta of each channel")
    fig.colorbar(im, ax=ax, label="log10 theta", fraction=0.03, pad=0.01)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- Prop. 4.2 (App. C.1)

def prop42_psi(head_dim: int = 60, n_axes: int = 1, p: float = 0.75, support: str | int = "all",
               seed: int = 0) -> Tensor:
    """A non-zero content vector psi [head_dim] (standard normal), restricted to `support`:
    'all' channels, only 'rotated' pairs, only 'nope' pairs, or one pair index k (in every axis chunk)."""
    psi = torch.randn(head_dim, generator=torch.Generator().manual_seed(seed))
    if support == "all":
        return psi
    rope = RoPE(head_dim, n_axes, p)
    a, half = rope.axis_dim, rope.axis_dim // 2
    pair = torch.arange(head_dim) % a % half
    if support == "rotated":
        keep = rope.theta[pair] > 0
    elif support == "nope":
        keep = rope.theta[pair] == 0
    elif isinstance(support, int):
        keep = pair == support
    else:
        raise ValueError(f"unknown support {support!r}; choose 'all', 'rotated', 'nope' or a pair index")
    return psi * keep


def _as_positions(x, n_axes: int) -> Tensor:
    """Real positions given as [P] (one axis) or [P, n_axes] -> RoPE's layout [1, n_axes, P]."""
    x = torch.as_tensor(x, dtype=torch.float32)
    x = x.reshape(-1, 1) if x.dim() == 1 else x
    if x.shape[1] != n_axes:
        raise ValueError(f"positions need {n_axes} coordinates, got shape {tuple(x.shape)}")
    return x.T.unsqueeze(0)


def prop42_scores(r, j, psi: Tensor, n_axes: int = 1, p: float = 0.75, base: float = 10000.0) -> Tensor:
    """Attention scores of App. C.1, through the library's RoPE: -> [R, J] (float32).

    r: target distances [R] or [R, n_axes] (any reals); j: query positions [J] or [J, n_axes].
    The [CLS] key is k = R^r psi and sits at the origin (Definition C.1), so RoPE rotates it by R^0;
    the query q = psi sits at position j and is rotated by R^j. Score = (R^j q)^T (R^0 k) (eq. 5).
    """
    rope = RoPE(psi.numel(), n_axes, p, base)
    r_pos, j_pos = _as_positions(r, n_axes), _as_positions(j, n_axes)  # [1, A, R], [1, A, J]
    x_r = psi.view(1, 1, 1, -1).expand(1, 1, r_pos.shape[-1], -1)
    k = apply_rope(x_r, rope.angles(r_pos))  # R^r psi: [1, 1, R, hd]
    k = apply_rope(k, rope.angles(torch.zeros_like(r_pos)))  # [CLS] at position 0: R^0 = identity
    q = apply_rope(psi.view(1, 1, 1, -1).expand(1, 1, j_pos.shape[-1], -1), rope.angles(j_pos))  # [1,1,J,hd]
    return k[0, 0] @ q[0, 0].T


def prop42_closed_form(r, j, psi: Tensor, n_axes: int = 1, p: float = 0.75, base: float = 10000.0) -> Tensor:
    """Eq. (7) in float64: sum over axes i and pairs k of ||psi^(i,k)||^2 cos((r_i - j_i) theta_k) -> [R, J]."""
    rope = RoPE(psi.numel(), n_axes, p, base)
    a, half = rope.axis_dim, rope.axis_dim // 2
    chunks = psi.double().view(n_axes, 2, half)  # rotate-half: pair k = (channel k, channel k + a/2)
    energy = (chunks ** 2).sum(1)  # [A, a/2]
    theta = rope.theta.double()  # [a/2]
    r_pos, j_pos = _as_positions(r, n_axes)[0].double(), _as_positions(j, n_axes)[0].double()  # [A, R], [A, J]
    d = r_pos[:, :, None] - j_pos[:, None, :]  # [A, R, J]
    return (energy[:, None, None, :] * torch.cos(d[..., None] * theta)).sum((0, -1))


def prop42_summary(r_values, j, psi: Tensor, n_axes: int = 1, p: float = 0.75) -> tuple[Tensor, pd.DataFrame]:
    """Scores [R, J] of `prop42_scores` (1 axis: r [R], j [J]) and one row per r: the grid point j that
    maximises the score, the grid point nearest to r, the peak score against psi^T psi, and the largest
    deviation of the float32 scores from the float64 closed form eq. (7)."""
    j = torch.as_tensor(j, dtype=torch.float32)
    scores = prop42_scores(r_values, j, psi, n_axes, p)
    closed = prop42_closed_form(r_values, j, psi, n_axes, p)
    rows = [dict(r=r, argmax_j=float(j[int(s.argmax())]), nearest_grid_j=float(j[int((j - r).abs().argmin())]),
                 peak_score=float(s.max()), psi_norm_sq=float(psi.double().pow(2).sum()),
                 max_abs_diff_eq7=float((s.double() - c).abs().max()))
            for r, s, c in zip(r_values, scores, closed)]
    return scores, pd.DataFrame(rows)


def prop42_support_table(head_dim: int = 60, p: float = 0.75, r: float = 7.3, span: float = 2000.0,
                         step: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """Where the construction needs care: for psi on all / rotated / NoPE pairs / one pair only, the
    peak score psi^T psi at j = r, the flat NoPE offset, and the best score at |j - r| >= 1 and >= 10
    on j in [r - span, r + span] (as a fraction of the peak; 1.0 = the maximum is not unique)."""
    j = torch.arange(-span, span + step / 2, step, dtype=torch.float64) + r
    rows = []
    for support in ("all", "rotated", "nope", 0):
        psi = prop42_psi(head_dim, 1, p, support, seed)
        s = prop42_closed_form([r], j, psi, 1, p)[0]
        peak = float((psi.double() ** 2).sum())
        nope = float((prop42_psi(head_dim, 1, p, "nope", seed).double() * (psi != 0)).pow(2).sum())
        dist = (j - r).abs()
        rows.append(dict(psi_support="one pair (k=0, theta=1)" if support == 0 else support, peak=peak,
                         nope_offset=nope, contrast=peak - float(s.min()),
                         best_at_dist_ge_1=float(s[dist >= 1].max()) / peak,
                         best_at_dist_ge_10=float(s[dist >= 10].max()) / peak))
    return pd.DataFrame(rows)


def plot_prop42(r_values, j: Tensor, scores: Tensor):
    """Figure: score against query position j, one curve per real r, a dashed line at each r."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 3.8))
    for r, s in zip(r_values, scores):
        line, = ax.plot(j, s, lw=1.2, label=f"r = {r:g} (argmax j = {float(j[int(s.argmax())]):.2f})")
        ax.axvline(r, color=line.get_color(), ls="--", lw=0.8)
    ax.set_xlabel("query position j (the [CLS] key sits at 0)")
    ax.set_ylabel(r"score $(R^j q)^\top (R^0 k)$")
    ax.set_title("Proposition 4.2: a [CLS] key R^r psi at the origin makes the score peak at j = r")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- Corollary 4.1 on a real encoder

def translation_gap(shifts, use_cls: bool, n_axes: int = 1, size_name: str = "tiny", n_tokens: int = 16,
                    batch: int = 4, position_scale: float = 20.0, seed: int = 0) -> Tensor:
    """max |f(x, s + c) - f(x, s)| over outputs for each shift c: -> [len(shifts)] float64.

    f: RoMAEForPrediction (head='tokens', one regression output per token), random initialisation
    (the authors' fine-tuning init), eval mode. x: [batch, n_tokens, 4] standard normal values,
    s: [batch, n_axes, n_tokens] from U(0, position_scale); c is added on every axis.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 64 tokens: one thread is fastest; on a busy shared CPU, 10-50x faster
    try:
        return _translation_gap(shifts, use_cls, n_axes, size_name, n_tokens, batch, position_scale, seed)
    finally:
        torch.set_num_threads(threads)


def _translation_gap(shifts, use_cls, n_axes, size_name, n_tokens, batch, position_scale, seed) -> Tensor:
    torch.manual_seed(seed)
    cfg = RoMAEConfig(token_dim=4, n_axes=n_axes, encoder=size(size_name), use_cls=use_cls, head="tokens",
                      n_outputs=1, task="regression")
    model = RoMAEForPrediction(cfg).eval()
    g = torch.Generator().manual_seed(seed + 1)
    values = torch.randn(batch, n_tokens, 4, generator=g)
    positions = torch.rand(batch, n_axes, n_tokens, generator=g) * position_scale
    with torch.no_grad():
        out, _ = model(values, positions)  # [B, N, 1]
        gaps = [(model(values, positions + c)[0] - out).abs().max().item() for c in shifts]
    return torch.tensor(gaps, dtype=torch.float64)


def translation_table(cfg: TheoryConfig, axes=(1, 2)) -> pd.DataFrame:
    """Long table (n_axes, cls, shift, max_abs_diff) of `translation_gap` with and without [CLS]."""
    rows = []
    for A in axes:
        for use_cls in (False, True):
            gaps = translation_gap(cfg.shifts, use_cls, A, cfg.encoder_size, cfg.n_tokens, cfg.batch,
                                   cfg.position_scale, cfg.seed)
            rows += [dict(n_axes=A, cls="with [CLS]" if use_cls else "no [CLS]", shift=c, max_abs_diff=float(d))
                     for c, d in zip(cfg.shifts, gaps)]
    return pd.DataFrame(rows)


def translation_text(table: pd.DataFrame) -> str:
    """What `translation_table` found, computed from it: the largest output change without [CLS] (over every
    shift) and with [CLS] at the smallest shift and over the shifts >= 10."""
    no, cls = table[table.cls == "no [CLS]"], table[table.cls == "with [CLS]"]
    small = cls[cls["shift"] == cls["shift"].min()].max_abs_diff
    large = cls[cls["shift"] >= 10].max_abs_diff
    out = (f"Without [CLS] the outputs change by at most {no.max_abs_diff.max():.1e} for every shift up to "
           f"c = {no['shift'].max():g}. With [CLS] they change by {small.min():.1e}-{small.max():.1e} at "
           f"c = {cls['shift'].min():g}")
    if len(large):
        out += f" and by {large.min():.1e}-{large.max():.1e} for c >= 10"
    return out + "."


def plot_translation(table: pd.DataFrame):
    """Figure: max |output difference| against shift c (log-log), per n_axes, with and without [CLS]."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for (A, cls), t in table.groupby(["n_axes", "cls"]):
        ax.loglog(t["shift"], t.max_abs_diff, marker="o" if cls == "with [CLS]" else "s",
                  ls="-" if cls == "with [CLS]" else "--", label=f"{cls}, {A} ax")
    ax.set_xlabel("common shift c of all positions")
    ax.set_ylabel("max |f(s + c) - f(s)|")
    ax.set_title("Corollary 4.1: RoPE alone is shift-blind; [CLS] at the origin is not")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
