"""How batches reach `fit`: datasets, shuffling and sharding, feeding a device, micro-batches.

`ArrayDataset` holds tensors that share their first dimension; any map-style dataset with `__len__` and
`__getitem__` (or a vectorised `batch(idx)`, like `romae.store.TokenStore` and `romae.images.GridDataset`)
works too. Each epoch's order is a permutation drawn from (seed, epoch) (`shard` deals it to processes;
`bucketed` groups samples of similar length); on an accelerator the next batch is gathered by a thread
into pinned memory while this one trains (`Feeder`), or a small ArrayDataset is moved there once.
`data_fingerprint` names a dataset's content for checkpoints (a resume on other data is refused).
"""
from __future__ import annotations

import math
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from torch.utils.data import default_collate

from .masking import check_counts, host_hidden_count


FLOAT32_EXACT = 2.0 ** 24  # beyond it float32 cannot hold whole units (its values are 2 or more apart)


def _positions_tensor(v) -> torch.Tensor:
    """`positions` as a tensor, kept from float32's rounding: a list of Python floats (torch.as_tensor makes it
    float32, torch's default) stays float32 unless float32 would round distinct positions of a row together (Unix
    seconds 60 apart do): then it is kept as float64, with a warning that says so. Float32 positions given as such
    that reach 2**24 get a warning (what they held before that cast is lost)."""
    t = torch.as_tensor(v)
    if not torch.is_tensor(v) and t.dtype == torch.float32 and not (isinstance(v, np.ndarray) and v.dtype == np.float32):
        try:
            exact = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            exact = None
        if exact is not None and exact.ndim >= 1 and exact.size:
            rows = np.sort(exact.reshape(-1, exact.shape[-1]), axis=-1)  # monotone rounding: merged values adjacent
            with np.errstate(over="ignore"):
                rows32 = rows.astype(np.float32)
            merged = ((rows[:, 1:] != rows[:, :-1]) & (rows32[:, 1:] == rows32[:, :-1])).any(-1)
            if merged.any():
                r = int(np.flatnonzero(merged)[0])
                where = (f"sample {r // exact.shape[1]} on axis {r % exact.shape[1]}" if exact.ndim == 3
                         else f"row {r}")
                seen = rows[r][~np.isnan(rows[r])]
                warnings.warn(f"positions of {where}: {len(np.unique(seen))} distinct times become "
                              f"{len(np.unique(seen.astype(np.float32)))} in float32 (torch's default for a list of "
                              "floats), so they are kept as float64, which RoPE reads exactly; pass a float64 array to "
                              "say so, or subtract a reference time (e.g. t - t.min())", stacklevel=4)
                return torch.as_tensor(exact)
    if t.dtype in (torch.float32, torch.float16, torch.bfloat16) and t.device.type == "cpu" and t.numel():
        real = t[torch.isfinite(t)]
        top = float(real.abs().max()) if real.numel() else 0.0
        if top >= FLOAT32_EXACT:
            gap = float(np.spacing(np.float32(top))) if t.dtype == torch.float32 else float("nan")
            warnings.warn(f"positions are {str(t.dtype).replace('torch.', '')} and reach {top:.6g}, where "
                          + (f"float32 values are {gap:g} apart" if t.dtype == torch.float32 else "whole units are lost")
                          + ": distinct times may have been rounded together before they got here; give float64 "
                          "positions (RoPE reads them exactly) or subtract a reference time (e.g. t - t.min())",
                          stacklevel=4)
    return t


class ArrayDataset:
    """Tensors sharing dim 0 as a dataset: item i is `{name: tensor[i]}`, `batch(idx)` slices them all.

    Tensors are kept as given; other arrays become tensors by `torch.as_tensor`, except that positions given as a
    list of floats that float32 would round together stay float64 (with a warning), and float32 positions that
    reach 2**24 (e.g. Unix seconds) are warned about (`_positions_tensor`)."""

    def __init__(self, **tensors):
        self.tensors = {k: _positions_tensor(v) if k == "positions" else torch.as_tensor(v) for k, v in tensors.items()}
        lengths = {len(t) for t in self.tensors.values()}
        if len(lengths) != 1:
            raise ValueError(f"tensors must share their first dimension, got lengths {sorted(lengths)}")
        self._len = lengths.pop()

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {k: t[i] for k, t in self.tensors.items()}

    def batch(self, idx: torch.Tensor) -> dict[str, torch.Tensor]:
        """idx: [B] long -> {name: [B, ...]} in one indexing op per tensor (no per-item collation)."""
        return {k: t[idx] for k, t in self.tensors.items()}


def shard(perm: torch.Tensor, b: int, batch_size: int, rank: int, n_proc: int) -> torch.Tensor:
    """Indices of process `rank` in global batch `b` of the epoch's permutation `perm`: [<= batch_size]."""
    g = perm[b * batch_size * n_proc : (b + 1) * batch_size * n_proc]
    if len(g) < batch_size * n_proc and n_proc > 1:
        # Short last batch: pad to a multiple of n_proc from the epoch's start (as DistributedSampler)
        # and split evenly, so no process gets an empty batch and DDP never waits on a missing rank.
        per = math.ceil(len(g) / n_proc)
        g = torch.cat([g, perm[: per * n_proc - len(g)]])
        return g[rank * per : (rank + 1) * per]
    return g[rank * batch_size : (rank + 1) * batch_size]


def bucketed(perm: torch.Tensor, lengths: torch.Tensor, batch: int, buckets: int,
              generator: torch.Generator) -> torch.Tensor:
    """An epoch order whose consecutive `batch`-sized slices hold samples of similar length.

    The shuffled order `perm` is cut into windows of `buckets` batches; each window is sorted by length and
    cut into batches, and the order of all whole batches is shuffled (a last partial batch stays last, so
    batch b is still perm[b * batch:(b + 1) * batch]). Each sample is still seen once per epoch; with
    padding trimmed per batch (`romae.masking.trim_padding`) a batch costs about its own length, not the
    longest sample's. Depends on (perm, generator) only, so a resumed run rebuilds the same order.
    """
    window = batch * buckets
    parts = [w[lengths[w].argsort(stable=True)] for w in perm.split(window)]
    order = torch.cat(parts)
    n_full = len(order) // batch
    full = order[: n_full * batch].view(n_full, batch)
    full = full[torch.randperm(n_full, generator=generator)].reshape(-1)
    return torch.cat((full, order[n_full * batch:]))


def lengths(data) -> torch.Tensor:
    """Real tokens per sample (from the dataset's pad_mask) for length bucketing."""
    if hasattr(data, "lengths"):  # e.g. a romae.store.TokenStore
        return torch.as_tensor(data.lengths)
    pad = getattr(data, "tensors", {}).get("pad_mask")
    if pad is None:
        raise ValueError("length_buckets needs a dataset with a pad_mask (an ArrayDataset / TokenDataset) "
                         "or a `lengths` attribute (a TokenStore)")
    return (~pad).sum(1)


def fetch(data, idx: torch.Tensor) -> dict:
    """idx: [B] -> batch dict, via the dataset's vectorised `batch` if it has one."""
    if hasattr(data, "batch"):
        return data.batch(idx)
    return default_collate([data[i] for i in idx.tolist()])


RESIDENT_SHARE = 0.05  # an ArrayDataset taking at most this share of the accelerator's memory (and of what is
#                        free) moves there: within the headroom romae.compendium.plan leaves above its planned peak


def feed_mode(data, dev: torch.device, transform: bool = False) -> str:
    """How training batches reach `dev`: "host" (the CPU trains: batches as they are), "resident" (an
    ArrayDataset within RESIDENT_SHARE of the device's memory is moved there once and batched there) or "prefetch" (the next batch
    is gathered by a thread, into pinned memory, while this one trains). With a `transform`, never resident: the
    transform runs on the host batch, where what it reads (trim_padding's columns, counts) costs no device sync."""
    if dev.type == "cpu":
        return "host"
    if isinstance(data, ArrayDataset) and dev.type == "cuda" and not transform:
        size = sum(t.numel() * t.element_size() for t in data.tensors.values())
        free, total = torch.cuda.mem_get_info(dev)
        if size <= RESIDENT_SHARE * min(free, total):
            return "resident"
    return "prefetch"


def two_part(data) -> bool:
    """Whether `data` splits a batch into a draw-free `raw(idx)` and a `finish(raw)` that may draw random
    numbers and runs where its input lies (romae.images.GridDataset: uint8 grids, then augment and resize)."""
    return callable(getattr(data, "raw", None)) and callable(getattr(data, "finish", None))


class Feeder:
    """Training batches for `fit`, gathered as `feed_mode` says: the same batches, in the same order, as
    gathering each on the host when it is due. Only indexing runs ahead (no random draws: the `finish` of a
    two-part dataset (`two_part`) and a transform's draws stay in the training thread, in order), so seeds
    and resumes are unchanged. A two-part dataset's raw part travels to the device, which finishes it (a GPU
    resizes and augments images there)."""

    def __init__(self, data, dev: torch.device, mode: str):
        self.mode, self.dev, self.ahead = mode, dev, None
        self.data = ArrayDataset(**{k: v.to(dev) for k, v in data.tensors.items()}) if mode == "resident" else data
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="romae-prefetch") if mode == "prefetch" else None
        self.split = mode != "resident" and two_part(data)
        # a resident dataset's given masks: each sample's hidden and visible real counts, read once on the host
        self.counts = _mask_counts(data.tensors) if mode == "resident" else None

    def hidden_count(self, batch: dict, idx: torch.Tensor) -> int | None:
        """The hidden count of the batch's given mask, checked on the host (`romae.masking.check_mask`): from the
        host batch, or from the counts of a resident dataset read once; None without a mask."""
        if batch.get("mask") is None:
            return None
        if self.counts is not None:
            counts, seen, n = self.counts
            return check_counts(counts[idx], n, None if seen is None else seen[idx])
        return host_hidden_count(batch)

    def _gather(self, idx: torch.Tensor) -> dict:
        if self.mode == "resident":  # pinned: a copy from pageable memory would wait for the device
            idx = idx.pin_memory() if self.dev.type == "cuda" else idx
            return fetch(self.data, idx.to(self.dev, non_blocking=True))
        batch = self.data.raw(idx) if self.split else fetch(self.data, idx)
        if self.mode == "prefetch" and self.dev.type == "cuda":  # pinned: the copy to the GPU is asynchronous
            batch = {k: v.pin_memory() if torch.is_tensor(v) else v for k, v in batch.items()}
        return batch

    def get(self, idx: torch.Tensor, following: torch.Tensor | None = None) -> dict:
        """The batch of `idx`; starts gathering the batch of `following` (the next step's) if prefetching."""
        ahead, self.ahead = self.ahead, None
        batch = ahead[1].result() if ahead is not None and torch.equal(ahead[0], idx) else self._gather(idx)
        if self.pool is not None and following is not None:
            self.ahead = (following, self.pool.submit(self._gather, following))
        return self.data.finish(to_device(batch, self.dev)) if self.split else batch

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _mask_counts(tensors: dict):
    """(hidden count [n], visible real tokens [n] or None, tokens per sample) of an ArrayDataset's bool mask [n, N]
    on the host; None without one."""
    mask, pad = tensors.get("mask"), tensors.get("pad_mask")
    if mask is None or mask.dtype != torch.bool or mask.dim() != 2 or mask.device.type != "cpu":
        return None
    seen = None if pad is None or pad.shape != mask.shape else (~mask & ~pad).sum(1)
    return mask.sum(1), seen, mask.shape[1]


def to_device(batch: dict, device) -> dict:
    """The batch's tensors on `device`, copied asynchronously: host tensors bound for a GPU are pinned first (a
    copy from pageable memory waits for the device)."""
    pin = torch.device(device).type == "cuda"
    return {k: (v.pin_memory() if pin and v.device.type == "cpu" and not v.is_pinned() else v).to(
        device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}


FINGERPRINT_CHUNK = 4096  # samples fetched at a time by data_fingerprint (a dataset without a `content_hash`)


def _update(h, batch: dict) -> None:
    from .storage import tensor_digest

    for key in sorted(batch):
        h.update(key.encode())
        tensor_digest(h, batch[key])


def data_fingerprint(data) -> str:
    """A hash of a whole dataset: every sample as fit reads them (their tensors' dtypes, shapes and bytes; an
    ArrayDataset's straight from its tensors; a dataset with its own `content_hash()` by that). A checkpoint keeps
    it, so a resume on other data is refused, and the compendium's keys hold it, so a result is never read back for
    data that differs in any value. Torch's random state is left as it was."""
    import hashlib

    if hasattr(data, "content_hash") and not isinstance(data, ArrayDataset):
        return f"{len(data)}:{data.content_hash()}"[:40]
    n = len(data)
    h = hashlib.sha256(f"{n}".encode())
    if isinstance(data, ArrayDataset):  # its tensors as they are (a subclass's own batch() is not called)
        _update(h, data.tensors)
        return h.hexdigest()[:16]
    with torch.random.fork_rng(devices=[]):
        for start in range(0, n, FINGERPRINT_CHUNK):
            _update(h, fetch(data, torch.arange(start, min(start + FINGERPRINT_CHUNK, n))))
    return h.hexdigest()[:16]


def n_samples(batch: dict) -> int:
    return next(len(v) for v in batch.values() if torch.is_tensor(v))


def micro_batches(batch: dict, size: int) -> list[dict]:
    """A batch dict cut along dim 0 into pieces of `size` samples (the last may be smaller)."""
    n = n_samples(batch)
    return [{k: v[i:i + size] if torch.is_tensor(v) else v for k, v in batch.items()} for i in range(0, n, size)]


def batches(data, batch_size: int, rank: int = 0, n_proc: int = 1):
    """Whole batches of `data` in order, dealt round-robin to processes: yields (idx, batch dict)."""
    for start in range(rank * batch_size, len(data), batch_size * n_proc):
        idx = torch.arange(start, min(start + batch_size, len(data)))
        yield idx, fetch(data, idx)


def model_keys(model, batch: dict) -> dict:
    """The batch entries the model's forward takes (its ACCEPTS), or all of them."""
    accepts = getattr(model, "ACCEPTS", None)
    return batch if accepts is None else {k: v for k, v in batch.items() if k in accepts}
