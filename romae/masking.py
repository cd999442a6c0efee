"""Vectorised MAE masks and the gathers that split tokens into visible and hidden sets.

Conventions (as in MAE and the authors' code): `mask` [B, N] is True where a token is hidden (to be
reconstructed); `pad_mask` [B, N] is True where a token is padding. Every sample of a batch hides the
same number of tokens, so the visible set is a dense [B, N_visible, ...] tensor with no Python loop.
"""

from __future__ import annotations

import contextlib
import math
import threading

import torch
from torch import Tensor


def _async_checks(device: torch.device) -> bool:
    """Whether checks on `device` must not wait for it: on an accelerator, reading a value back stalls
    its queue, every step. The tests switch this on for the CPU, to prove that path free of syncs."""
    return device.type != "cpu"


_STATE = threading.local()  # this thread's checks collected by `deferred_checks` (.pending) and namer (.namer)
MAX_PENDING = 256  # collected checks read back at the latest after this many (one sync)


class BadSample(ValueError):
    """An input error of one sample of a batch: "<head>sample <k><tail>", k its position in the batch.
    `fit`, `predict` and evaluation re-raise it naming the sample's index in the dataset (`at`)."""

    def __init__(self, head: str, sample: int, tail: str = ""):
        super().__init__(f"{head}sample {sample} of the batch{tail}")
        self.head, self.sample, self.tail, self.named = head, int(sample), tail, False

    def at(self, where: str) -> "BadSample":
        """The same error with the sample named by `where` (e.g. "sample 1234 of the training data")."""
        err = BadSample(self.head, self.sample, self.tail)
        err.args, err.named = (f"{self.head}{where}{self.tail}",), True
        return err


def name_sample(data, index: int, what: str) -> str:
    """'sample <index> of <what>' plus the dataset's id for it, when it keeps ids (a TokenDataset)."""
    ids = getattr(data, "ids", None)
    shown = f" (id {ids[index]!r})" if ids is not None and index < len(ids) and ids[index] != index else ""
    return f"sample {index} of {what}{shown}"


@contextlib.contextmanager
def deferred_checks():
    """Within it, this thread's input checks on an accelerator are collected instead of read back: the
    forward launches them and goes on (inputs that failed a check are made harmless for the kernels: such
    class labels are ignored, such rows clamped), and `flush_checks` reads them all in one host sync and raises
    the first that failed, with its full message. `fit`'s training loop opens it and flushes at each logged
    step, evaluation, checkpoint and at the end. Outside it (`predict`, evaluation, a user's own forward), a
    check on an accelerator is read at once (one sync per check). Never a device-side assert: on CUDA that leaves the process's context unusable.
    Nested: the outer collection is used. Leaving it drops what was not flushed."""
    outer = getattr(_STATE, "pending", None)
    if outer is not None:
        yield outer
        return
    _STATE.pending = []
    try:
        yield _STATE.pending
    finally:
        _STATE.pending = None


@contextlib.contextmanager
def _scoped(name: str, value):
    """This thread's `_STATE.<name>` is `value` within the block, and what it was before after it."""
    outer = getattr(_STATE, name, None)
    setattr(_STATE, name, value)
    try:
        yield
    finally:
        setattr(_STATE, name, outer)


def naming(rename):
    """A BadSample among the checks collected within it is raised as `rename(error)` by `flush_checks`
    (e.g. naming the sample's index in the dataset, which the batch no longer knows when the check is read)."""
    return _scoped("namer", rename)


def _error(message, detail, error):
    return error() if error is not None else ValueError(message + detail())


def flush_checks(extra=()) -> list[float]:
    """Read the checks collected by `deferred_checks` and those of replayed CUDA graphs (`GraphChecks`), together
    with `extra` (scalar tensors or numbers the caller wants on the host too, e.g. the losses since the last history
    row), in one host sync; raise the first check that failed, else return `extra`'s values. No check is kept
    afterwards."""
    pending = getattr(_STATE, "pending", None)
    entries = list(pending or ())
    if pending:
        pending.clear()
    graphs = [g for g in getattr(_STATE, "graphs", None) or () if g.oks is not None]
    parts = [e[0] for e in entries] + [g.oks for g in graphs] + list(extra)
    if not parts:
        return []
    read = _read_together(parts)
    oks, at = read[:len(entries)], len(entries)
    for ok, (_, message, detail, error, namer) in zip(oks, entries):
        if not ok:
            err = _error(message, detail, error)
            raise (namer(err) if namer is not None and isinstance(err, BadSample) else err) from None
    for g in graphs:
        found = read[at:at + g.oks.numel()]
        at += g.oks.numel()
        g.reset()
        if not all(found):
            raise ValueError(g.messages[[bool(f) for f in found].index(False)]
                             + " (in a training step replayed from a CUDA graph since the last history row; "
                             "TrainConfig(cuda_graphs=False) names the sample)") from None
    return read[at:]


def _read_together(parts: list) -> list[float]:
    """Scalar tensors (any dtype, one device) and numbers -> their values, in one device -> host read."""
    tensors = [p for p in parts if torch.is_tensor(p)]
    if not tensors:
        return [float(p) for p in parts]
    flat = [p.detach().reshape(-1).to(torch.float32) if torch.is_tensor(p) else None for p in parts]
    try:
        stacked = torch.cat([f for f in flat if f is not None]).tolist()
    except RuntimeError:  # tensors on several devices
        stacked = [v for f in flat if f is not None for v in f.tolist()]
    out, it = [], iter(stacked)
    for p, f in zip(parts, flat):
        if f is None:
            out.append(float(p))
        else:
            out.extend(next(it) for _ in range(f.numel()))
    return out


class GraphChecks:
    """The deferred input checks of a captured CUDA graph: captured once, their results rewritten by every replay.
    `after_replay` folds them into one accumulated tensor (a failure is kept until the next flush); `flush_checks`
    reads it with the rest and names the first check that failed (the sample cannot be named: the graph's buffers
    hold the latest batch)."""

    def __init__(self, entries: list):
        self.statics = [e[0] for e in entries]  # rewritten by each replay
        self.messages = [e[1] for e in entries]
        self.oks = torch.ones(len(entries), dtype=torch.bool, device=entries[0][0].device) if entries else None
        if self.oks is not None:
            _STATE.graphs = (getattr(_STATE, "graphs", None) or []) + [self]

    def after_replay(self) -> None:
        if self.oks is not None:
            self.oks.logical_and_(torch.stack(self.statics))

    def reset(self) -> None:
        self.oks.fill_(True)

    def close(self) -> None:
        graphs = getattr(_STATE, "graphs", None) or []
        _STATE.graphs = [g for g in graphs if g is not self]


def take_checks() -> list:
    """Remove and return the checks collected since `deferred_checks` opened or the last flush (what a CUDA graph's
    capture collected: the graph keeps them as `GraphChecks`)."""
    pending = getattr(_STATE, "pending", None)
    if not pending:
        return []
    entries = list(pending)
    pending.clear()
    return entries


def _require(ok: Tensor, message, detail=lambda: "", error=None) -> None:
    """Raise ValueError(message + detail()), or `error()` if given (e.g. a BadSample naming the sample), if
    the boolean tensor `ok` is False. On an accelerator within `deferred_checks` the check is collected and
    read later (no device -> host sync per forward, the slowdown the paper measured): `detail` and `error`
    are then called after the forward, so they must hold only small tensors (a first index, one row), not
    the batch."""
    pending = getattr(_STATE, "pending", None)
    if pending is not None and _async_checks(ok.device):
        pending.append((ok.detach().reshape(()), message, detail, error, getattr(_STATE, "namer", None)))
        if len(pending) >= MAX_PENDING:
            flush_checks()
    elif not bool(ok):
        raise _error(message, detail, error)


def first_true(flags: Tensor) -> Tensor:
    """Index of the first True of a flattened bool tensor (0 if none), as a device scalar: nothing read back."""
    return flags.reshape(-1).to(torch.int32).argmax()


def check_pad_mask(pad_mask: Tensor | None, B: int, N: int) -> None:
    """Raise if pad_mask is not a boolean [B, N] or if some sample is nothing but padding."""
    if pad_mask is None:
        return
    if pad_mask.dtype != torch.bool or tuple(pad_mask.shape) != (B, N):
        raise ValueError(f"pad_mask must be a bool tensor of shape [{B}, {N}], "
                         f"got {pad_mask.dtype} {tuple(pad_mask.shape)}")
    empty = pad_mask.all(dim=1)
    _require(~empty.any(), "a sample of the batch is all padding",
             error=lambda: BadSample("", int(empty.nonzero()[0]), " is all padding"))


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
    K = hidden_count(N, mask_ratio)
    # generator=None passed explicitly breaks torch.compile's dynamic shapes (PyTorch 2.13): leave it out
    noise = torch.rand(B, N, device=device) if generator is None else torch.rand(B, N, device=device,
                                                                                  generator=generator)
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


def checked_masks(hidden: int):
    """Within it, the given masks the model meets were checked already, on the host, and hide `hidden` tokens per
    sample: `check_mask` returns that count without reading the mask back from the device (a sync per forward).
    `fit` opens it around a training step whose batch's mask it checked on the host (`host_hidden_count`)."""
    return _scoped("hidden", int(hidden))


def host_hidden_count(batch: dict) -> int | None:
    """The hidden count of a batch's given mask, checked in full (`check_mask`) while the batch is still on the
    host (reading it costs nothing there); None when the batch has no mask or lies on an accelerator already."""
    mask = batch.get("mask")
    if mask is None or not torch.is_tensor(mask) or mask.device.type != "cpu" or mask.dim() != 2:
        return None
    values = batch.get("values")
    N = mask.shape[1] if values is None or values.dim() < 2 else values.shape[1]
    return check_mask(mask, mask.shape[0], N, batch.get("pad_mask"))


def check_mask(mask: Tensor, B: int, N: int, pad_mask: Tensor | None = None) -> int:
    """Validate a hidden-token mask [B, N] (with the batch's pad_mask: every sample keeps a real token
    visible); return the (common) number of hidden tokens per sample. Within `checked_masks` (the mask was
    checked on the host) only its dtype and shape are, and the count is the one given there."""
    if mask.dtype != torch.bool or tuple(mask.shape) != (B, N):
        raise ValueError(f"mask must be a bool tensor of shape [{B}, {N}], got {mask.dtype} "
                         f"{tuple(mask.shape)}")
    known = getattr(_STATE, "hidden", None)
    if known is not None and _async_checks(mask.device):
        return known
    counts = mask.sum(dim=1)
    # a sample whose real tokens are all hidden has nothing to reconstruct them from
    seen = None if pad_mask is None else (~mask & ~pad_mask).sum(dim=1)
    return check_counts(counts, N, seen)


def check_counts(counts: Tensor, N: int, seen: Tensor | None = None) -> int:
    """`check_mask` from each sample's hidden count [B] and, with padding, its visible real tokens [B]."""
    if (counts != counts[0]).any():
        raise ValueError(
            f"every sample must hide the same number of tokens; got counts {counts.tolist()[:16]}")
    n_hidden = int(counts[0])
    if n_hidden == 0:
        raise ValueError("the mask hides no token: pre-training and interpolation need at least one hidden "
                         "token to reconstruct")
    if n_hidden == N:
        raise ValueError("the mask hides every token: at least one must stay visible")
    if seen is not None and (seen == 0).any():
        raise BadSample("the mask hides every real (non-padded) token of ", int((seen == 0).nonzero()[0, 0]),
                        ": at least one must stay visible")
    return n_hidden


def hidden_count(N: int, mask_ratio: float) -> int:
    """Tokens per sample that `random_mask` hides: ceil(N * mask_ratio), at most N - 1."""
    return min(math.ceil(N * mask_ratio), N - 1)


def split_indices(mask: Tensor, n_hidden: int | None = None) -> tuple[Tensor, Tensor]:
    """mask [B, N] -> (visible_idx [B, N_vis], hidden_idx [B, N_hid]), each in original token order.

    `n_hidden`, the hidden count per sample, when the caller knows it: otherwise it is read from the
    mask, which on a GPU waits for the device (one synchronisation)."""
    if n_hidden is None:
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


def bucket_lengths(N: int, first: int = 64) -> tuple[int, ...]:
    """Lengths `trim_padding(lengths=)` rounds a batch up to, so that a run meets few batch shapes (CUDA graphs
    capture one graph per shape, `romae.graphs`): first, 2 x first, 4 x first, ... below N, then N."""
    if N < 1 or first < 1:
        raise ValueError(f"bucket_lengths needs N >= 1 and first >= 1, got N={N}, first={first}")
    out, n = [], first
    while n < N:
        out.append(n)
        n *= 2
    return tuple(out) + (N,)


def trimmed_to(lengths: tuple[int, ...] | None):
    """Within it, `trim_padding` without its own `lengths` cuts to one of these (`fit` opens it around its
    transform when it replays steps from CUDA graphs: one graph per batch shape); None: exact cuts."""
    return _scoped("lengths", lengths)


def trim_padding(batch: dict, lengths: tuple[int, ...] | None = None) -> dict:
    """Drop the token columns that are padding in every sample of a batch (a `fit` transform).

    Long-table datasets are padded to their longest sample; a batch of shorter ones need not carry the
    rest. Per-token entries (values [B, N, C], positions [B, A, N], pad_mask, mask [B, N]) are cut to
    the last column holding a real token; nothing else changes, so the model's outputs for real tokens
    are the same (a random mask drawn afterwards differs: it is drawn over fewer columns). `lengths` (e.g.
    `bucket_lengths(N)`): cut to the smallest of them that keeps every real token instead, so batches take few
    shapes; the columns kept beyond the last real one are padding, which attention and the loss ignore, but a
    random mask is then drawn over them too (which columns, not how many real tokens each sample hides in
    expectation, changes), so results differ from the exact cut's. Without `lengths`, those of an enclosing
    `trimmed_to` (fit on CUDA graphs), else the exact cut.
    """
    if lengths is None:
        lengths = getattr(_STATE, "lengths", None)
    pad = batch.get("pad_mask")
    if pad is None:
        return batch
    real = (~pad).any(0)
    n = int(real.nonzero().max()) + 1 if real.any() else pad.shape[1]
    if lengths:
        n = min((m for m in lengths if m >= n), default=pad.shape[1])
    if n >= pad.shape[1]:
        return batch
    out = dict(batch)
    for key in ("values", "pad_mask", "mask"):
        if out.get(key) is not None:
            out[key] = out[key][:, :n]
    out["positions"] = out["positions"][..., :n]
    return out


def keep_groups(groups: Tensor, pad_mask: Tensor | None, keep: float = 0.5,
                generator: torch.Generator | None = None) -> Tensor:
    """Hide whole groups of tokens (e.g. all values observed at one time point): hidden mask [B, N].

    groups [B, N]: a label per token (equal labels = one group, e.g. the time). In each sample a uniform
    random floor(n_groups * keep) of its groups stay visible (at least one) and every token of the other
    groups is hidden: HeTVAE's `subsample_timepoints`. Padding is never hidden here; the counts differ
    between samples, so pass the result through `equalize` before the model.
    """
    if not 0.0 < keep < 1.0:
        raise ValueError(f"keep must lie in (0, 1), got {keep}")
    B, N = groups.shape
    real = torch.ones_like(groups, dtype=torch.bool) if pad_mask is None else ~pad_mask
    # dense group ids per sample, in order of first appearance after sorting by label
    order = groups.argsort(dim=1, stable=True)
    g_sorted = groups.gather(1, order)
    r_sorted = real.gather(1, order)
    new = torch.ones_like(g_sorted, dtype=torch.bool)
    new[:, 1:] = g_sorted[:, 1:] != g_sorted[:, :-1]
    new &= r_sorted  # padding opens no group
    gid_sorted = new.cumsum(1) - 1  # group index of each sorted token (padding: irrelevant)
    gid = torch.empty_like(gid_sorted).scatter_(1, order, gid_sorted)
    n_groups = new.sum(1, keepdim=True)
    n_keep = torch.clamp((n_groups.double() * keep).floor().long(), min=1)
    rank = torch.rand(B, N, device=groups.device, generator=generator)
    rank = rank.masked_fill(~torch.arange(N, device=groups.device).lt(n_groups), 2.0)  # only real groups
    rank = rank.argsort(1).argsort(1)  # a random order of each sample's groups
    hidden_group = rank >= n_keep  # [B, group index]
    return hidden_group.gather(1, gid.clamp(min=0, max=N - 1)) & real


def equalize(batch: dict, hidden: Tensor) -> dict:
    """A batch whose samples hide different numbers of real tokens -> one the model takes.

    The model hides the same number K of tokens in every sample (K = the largest count in `hidden`);
    a sample hiding fewer gets K - k of its padded slots hidden, with padded columns appended where it
    has too few. Padded tokens are excluded from attention and from the loss, so the result is exactly
    `hidden` for the real tokens. Returns the batch with `mask` (and `pad_mask`, values, positions).
    """
    values, positions = batch["values"], batch["positions"]
    B, N = hidden.shape
    pad = batch.get("pad_mask")
    pad = torch.zeros(B, N, dtype=torch.bool, device=hidden.device) if pad is None else pad
    if (hidden & pad).any():
        raise ValueError("hidden marks padded tokens; hide real tokens only")
    k = hidden.sum(1)
    K = max(int(k.max()), 1)
    need = K - k  # padded slots each sample must hide
    extra = int((need - pad.sum(1)).clamp(min=0).max())
    visible = (~hidden & ~pad).sum(1)
    if (visible == 0).any():
        raise ValueError(f"sample {int((visible == 0).nonzero()[0])} hides every real token; one must stay visible")
    if extra:
        values = torch.cat((values, values.new_zeros(B, extra, values.shape[2])), 1)
        positions = torch.cat((positions, positions.new_zeros(B, positions.shape[1], extra)), 2)
        pad = torch.cat((pad, pad.new_ones(B, extra)), 1)
        hidden = torch.cat((hidden, hidden.new_zeros(B, extra)), 1)
    slot = pad.long().cumsum(1)  # 1-based index of each padded slot within its sample
    mask = hidden | (pad & (slot <= need.unsqueeze(1)))
    return {**batch, "values": values, "positions": positions, "pad_mask": pad, "mask": mask}
