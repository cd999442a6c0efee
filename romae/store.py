"""Tokens on disk: a ragged store of one-token-per-observation samples that `fit` streams from.

1.8 M light curves do not belong in one padded in-memory tensor. A store keeps every observation once,
unpadded, in memory-mapped arrays, and builds each batch (padded to the batch's own longest sample)
when `fit` or `predict` asks for it:

    write_shard(folder, "part-0001", obs, id="object_id", time="mjd", variable="band",
                value=["flux", "flux_err"], flag="photflag", labels=meta.set_index("object_id").label,
                variables=list("ugrizY"), classes=CLASSES, source={"file": "..._PHOT.FITS.gz", "sha256": ...})
    data = TokenStore(folder, max_per_variable=65)       # every shard of the folder, in name order
    train, test = data.subset(train_idx), data.subset(test_idx)
    fit(model, train, cfg)                               # train.batch(idx) -> values, positions, pad_mask, labels

A folder holds one sub-folder per shard (e.g. one per input file); each is written to a temporary
folder and renamed when complete, so an interrupted conversion keeps its finished shards and
`has_shard` lets it resume. Per shard: `values.npy` float32 [n_obs, C], `time.npy` float64 [n_obs],
`variable.npy` int8 [n_obs], `flag.npy` int32 [n_obs], `offsets.npy` int64 [n + 1], `labels.npy`
int64 [n], `meta.json` (ids, value columns, variables, classes, source).

A batch gives 2-D positions (time since the sample's first kept observation x time_scale, variable
index), the raw values through `value_transform`, pad_mask and labels. Options of the view (not of
the files), applied in this order: `max_per_variable` (thin each variable's observations evenly to at
most this many, as ATAT caps each band), `keep(flag, time)` (which observations to keep, e.g. an alert
mask; if none passes, the first one is kept), `max_tokens` (an evenly spaced subset of at most this many).
A batch is selected and gathered with array operations over all its samples, not a Python loop per
sample: a batch of 16,384 light curves has to be ready before the GPU's step is done. Only `keep` runs
sample by sample (it may look at the whole light curve, as the alert mask looks for the trigger). Which
observations a view keeps is worked out once per sample and cached: a bool per observation of the store
(plus one per sample), e.g. ~180 MB for 1.8 M light curves of ~100 observations, shared by the view's
subsets, held by each process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .builders import _py

try:
    import fcntl
except ImportError:  # Windows: no advisory locks (one builder at a time is then the user's to ensure)
    fcntl = None

FORMAT = 1
ARRAYS = ("values", "time", "variable", "flag", "offsets", "labels")


def write_shard(folder: str | Path, name: str, obs: pd.DataFrame, *, id: str, time: str, variable: str,
                value: Sequence[str], variables: Sequence, flag: str | None = None, labels: pd.Series | None = None,
                classes: Sequence | None = None, source: dict | None = None) -> Path:
    """One long table (a row per observation) -> the shard `folder/name`, written atomically.

    Samples are the distinct `id`s, in order of first appearance; observations within a sample are
    sorted by time (stable). `variables` / `classes` fix the index of each variable / class name (the
    same lists for every shard of a store); `labels`: a Series indexed by id (missing -> an error).
    Rows with a non-finite time or value are refused, naming the sample.
    """
    folder, value = Path(folder), list(value)
    missing = [c for c in [id, time, variable, *value] + ([flag] if flag else []) if c not in obs.columns]
    if missing:
        raise KeyError(f"columns {missing} are not in the table (it has {list(obs.columns)})")
    if obs.empty:
        raise ValueError(f"shard {name!r}: the table has no observation")
    var_index = {v: i for i, v in enumerate(variables)}
    unknown = sorted({str(v) for v in obs[variable].unique() if v not in var_index})
    if unknown:
        raise ValueError(f"shard {name!r}: variables {unknown[:10]} are not among {list(variables)}")
    codes, ids = pd.factorize(obs[id], sort=False)
    order = np.lexsort((obs[time].to_numpy(), codes))  # by sample (first appearance), then time
    df = obs.iloc[order]
    vals = df[value].to_numpy(np.float32)
    t = df[time].to_numpy(np.float64)
    bad = ~(np.isfinite(vals).all(1) & np.isfinite(t))
    if bad.any():
        raise ValueError(f"shard {name!r}: sample {_py(df[id].iloc[int(np.flatnonzero(bad)[0])])!r} has a non-finite "
                         f"time or value")
    counts = np.bincount(codes, minlength=len(ids))
    arrays = dict(values=vals, time=t, variable=df[variable].map(var_index).to_numpy(np.int8),
                  flag=df[flag].to_numpy(np.int32) if flag else np.zeros(len(df), np.int32),
                  offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
    if labels is not None:
        if classes is None:
            raise ValueError("labels need `classes` (the class names; index = label)")
        cls_index = {c: i for i, c in enumerate(classes)}
        lab = labels.reindex(ids)
        if lab.isna().any():
            raise ValueError(f"shard {name!r}: no label for sample {_py(lab.index[lab.isna()][0])!r}")
        unknown = sorted({str(c) for c in lab.unique() if c not in cls_index})
        if unknown:
            raise ValueError(f"shard {name!r}: labels {unknown[:10]} are not among the classes {list(classes)}")
        arrays["labels"] = lab.map(cls_index).to_numpy(np.int64)
    else:
        arrays["labels"] = np.full(len(ids), -1, np.int64)
    meta = dict(format=FORMAT, ids=[_py(x) for x in ids], value=value,
                variables=list(variables), classes=None if classes is None else list(classes), source=source or {})
    return save_arrays(folder / name, arrays, meta)


@contextlib.contextmanager
def build_lock(path: str | Path):
    """Hold `<path>.lock` (an exclusive flock beside the folder `path`) for the `with` block: wrap "is it
    built? else build it" in it, so that of several processes building the same store at once (a multi-GPU
    launch on an empty cache) one builds and the others wait, then find it built. The kernel drops the lock
    of a process that dies (kill -9 too). Where locks cannot be taken (no fcntl, a read-only folder), no lock."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path.with_name(f".{path.name}.lock"), "a") if fcntl is not None else None
    except OSError:
        f = None
    if f is None:
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield  # released when the file is closed


def save_arrays(path: str | Path, arrays: dict[str, np.ndarray], meta: dict) -> Path:
    """Write a folder `path` of `<name>.npy` arrays and `meta.json`, built under a temporary name of this
    process and renamed when complete: a reader sees the whole folder or none of it (an interrupted write
    leaves no `path`), and a complete `path` another process wrote meanwhile is kept (same content: the
    same key), never deleted under its readers. Several builders: see `build_lock`."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.part-"))
    try:
        for k, a in arrays.items():
            np.save(tmp / f"{k}.npy", a)
        (tmp / "meta.json").write_text(json.dumps(meta, default=str))
        if (final / "meta.json").is_file():  # finished by another process meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
            return final
        shutil.rmtree(final, ignore_errors=True)  # an incomplete one (no meta.json): nobody reads it
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def load_arrays(path: str | Path, names: Sequence[str]) -> tuple[dict[str, np.ndarray], dict]:
    """({name: memory-mapped array}, meta) of a folder written by `save_arrays`."""
    path = Path(path)
    return {k: np.load(path / f"{k}.npy", mmap_mode="r") for k in names}, json.loads((path / "meta.json").read_text())


def has_shard(folder: str | Path, name: str) -> bool:
    """Whether the shard `name` was written completely (an interrupted one is not)."""
    return (Path(folder) / name / "meta.json").is_file()


class _Shard:
    def __init__(self, path: Path):
        self.path = path
        arrays, self.meta = load_arrays(path, ARRAYS)
        if self.meta.get("format") != FORMAT:
            raise ValueError(f"{path}: store format {self.meta.get('format')}, this code reads {FORMAT}")
        for k, a in arrays.items():
            setattr(self, k, a)


class TokenStore:
    """A view of the samples of a store folder (all shards, in name order), see the module docstring."""

    def __init__(self, folder: str | Path, *, keep: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                 max_per_variable: int | None = None, max_tokens: int | None = None, time_scale: float = 1.0,
                 value_transform: Callable[[torch.Tensor], torch.Tensor] | None = None, name: str = ""):
        self.folder = Path(folder)
        paths = sorted(p for p in self.folder.iterdir() if p.is_dir() and (p / "meta.json").is_file()) \
            if self.folder.is_dir() else []
        if not paths:
            raise FileNotFoundError(f"{self.folder}: no complete store shard (write one with romae.store.write_shard)")
        for v, label in ((max_per_variable, "max_per_variable"), (max_tokens, "max_tokens")):
            if v is not None and (not isinstance(v, (int, np.integer)) or v < 1):
                raise ValueError(f"{label} must be a positive integer or None, got {v!r}")
        self.shards = [_Shard(p) for p in paths]
        first = self.shards[0].meta
        for s in self.shards[1:]:
            for k in ("value", "variables", "classes"):
                if s.meta[k] != first[k]:
                    raise ValueError(f"shard {s.path.name} has {k} {s.meta[k]}, shard {paths[0].name} {first[k]}")
        self.value_columns, self.variables, self.classes = first["value"], first["variables"], first["classes"]
        self.keep, self.max_per_variable, self.max_tokens = keep, max_per_variable, max_tokens
        self.time_scale, self.value_transform, self.name = time_scale, value_transform, name
        self._chosen: dict[int, tuple] = {}  # shard -> (options, kept? [n_obs] bool, worked out? [n] bool)
        sizes = [len(s.labels) for s in self.shards]
        self._shard_of = np.repeat(np.arange(len(sizes)), sizes)
        self._local = np.concatenate([np.arange(n) for n in sizes])
        # per object over all shards, read once (small: one number per object)
        self._labels = np.concatenate([np.asarray(s.labels) for s in self.shards])
        self._n_obs = np.concatenate([np.diff(np.asarray(s.offsets)) for s in self.shards])
        self._ids = [x for s in self.shards for x in s.meta["ids"]]
        self.index = np.arange(sum(sizes))

    def content_hash(self) -> str:
        """A hash of every shard's files and of this view (its samples, filters and scaling): what
        `romae.feeding.data_fingerprint` keys a store by."""
        import hashlib

        from .storage import describe_callable, sha256, tensor_digest

        h = hashlib.sha256()
        for shard in self.shards:
            for f in sorted(p for p in shard.path.rglob("*") if p.is_file()):
                h.update(f"{f.relative_to(shard.path).as_posix()}:{sha256(f)}".encode())
        for v in (self.index, self.max_per_variable, self.max_tokens, self.time_scale, describe_callable(self.keep),
                  describe_callable(self.value_transform)):
            tensor_digest(h, v)
        return h.hexdigest()[:16]

    # --- the dataset protocol of romae.train (len, batch) and what the recipe reads
    def __len__(self) -> int:
        return len(self.index)

    def subset(self, idx) -> "TokenStore":
        """The samples `idx` (positions in this view, or a boolean mask) as a new view."""
        out = object.__new__(TokenStore)
        out.__dict__.update(self.__dict__)
        idx = np.asarray(idx)
        out.index = self.index[np.flatnonzero(idx) if idx.dtype == bool else idx.astype(np.int64)]
        return out

    @property
    def labels(self) -> torch.Tensor:
        return torch.as_tensor(self._labels[self.index])

    @property
    def ids(self) -> list:
        return [self._ids[i] for i in self.index.tolist()]

    @property
    def lengths(self) -> torch.Tensor:
        """Observations per sample before `keep` and thinning, capped by the view (what length bucketing sorts by)."""
        caps = [c for c in (self.max_tokens, self.max_per_variable and self.max_per_variable * len(self.variables)) if c]
        n = self._n_obs[self.index]
        return torch.as_tensor(np.minimum(n, min(caps)) if caps else n, dtype=torch.long)

    @property
    def token_dim(self) -> int:
        return len(self.value_columns)

    def fingerprint(self) -> str:
        """A hash of the shards' sources and sizes and of this view's options (for cache keys)."""
        parts = [(s.path.name, s.meta["source"], len(s.labels), int(s.offsets[-1])) for s in self.shards]
        opts = (self.max_per_variable, self.max_tokens, self.time_scale, self.name, self.index.tolist())
        return hashlib.sha256(json.dumps([parts, opts], default=str).encode()).hexdigest()[:16]

    def sample(self, i: int) -> dict[str, np.ndarray]:
        """Sample i of the view after `keep` and thinning: values [n, C], time [n] (raw), variable [n], flag [n]."""
        (sh, _, obs, _), = self._kept(np.atleast_1d(self.index[i]))
        return dict(values=np.asarray(sh.values[obs]), time=np.asarray(sh.time[obs]),
                    variable=np.asarray(sh.variable[obs]), flag=np.asarray(sh.flag[obs]))

    def batch(self, idx: torch.Tensor) -> dict[str, torch.Tensor]:
        """idx [B] -> values [B, N, C] float32, positions [B, 2, N] float64 (time, variable), pad_mask [B, N],
        labels [B] (when the store has labels); N = the batch's longest sample."""
        idx = np.asarray(torch.as_tensor(idx).cpu(), dtype=np.int64).reshape(-1)
        parts = self._kept(self.index[idx])
        n = np.zeros(len(idx), np.int64)
        for _, rows, _, k in parts:
            n[rows] = k
        N, C = int(n.max()), self.token_dim
        values = np.zeros((len(idx), N, C), np.float32)
        pos = np.zeros((len(idx), 2, N), np.float64)
        pad = np.arange(N)[None] >= n[:, None]
        for sh, rows, obs, k in parts:  # kept observation i of sample r (its m-th) -> [r, m] of the batch
            first, i = np.cumsum(k) - k, np.arange(len(obs))
            at = i + np.repeat(rows * N - first, k)  # in values [B, N, C] as [B * N, C]
            for c in range(C):  # column by column: 1-D gathers and scatters (written by pandas, the columns lie apart)
                values.reshape(-1, C)[:, c][at] = np.take(sh.values[:, c], obs)
            t = np.take(sh.time, obs)
            at = i + np.repeat(rows * 2 * N - first, k)  # in positions [B, 2, N] flattened
            pos.reshape(-1)[at] = (t - np.repeat(t[first], k)) * self.time_scale
            pos.reshape(-1)[at + N] = np.take(sh.variable, obs)
        v = torch.from_numpy(values)
        if self.value_transform is not None:
            v = self.value_transform(v).masked_fill(torch.from_numpy(pad)[..., None], 0.0)
        out = dict(values=v, positions=torch.from_numpy(pos), pad_mask=torch.from_numpy(pad))
        labels = self._labels[self.index[idx]]
        if (labels >= 0).all():
            out["labels"] = torch.as_tensor(labels, dtype=torch.long)
        return out

    def _kept(self, g: np.ndarray) -> list[tuple]:
        """The observations the view keeps of the samples `g` (global numbers), as (shard, rows, obs, n) for each
        shard holding some of them: `rows` the positions in g of its samples, `obs` the indices in the shard's
        arrays of their kept observations (sample after sample, each in time order), `n` how many each keeps."""
        out, shard_of = [], self._shard_of[g]
        for s in np.unique(shard_of):
            rows = np.flatnonzero(shard_of == s)
            sh, j = self.shards[s], self._local[g[rows]]
            obs, seg = _spans(np.asarray(sh.offsets[j]), np.asarray(sh.offsets[j + 1]))
            sel = self._chosen_of(s, j)[obs]
            out.append((sh, rows, obs[sel], np.bincount(seg[sel], minlength=len(j))))
        return out

    def _chosen_of(self, s: int, j: np.ndarray) -> np.ndarray:
        """Shard s's bool per observation, kept by the view or not, worked out (`_choose`) for its samples j that
        were not yet, then cached (see the module docstring) for later batches, epochs and subsets."""
        opts = (self.keep, self.max_per_variable, self.max_tokens)
        cached = self._chosen.get(s)
        if cached is None or cached[0] != opts:
            sh = self.shards[s]
            cached = self._chosen[s] = (opts, np.zeros(len(sh.time), bool), np.zeros(len(sh.labels), bool))
        _, chosen, done = cached
        todo = np.unique(j[~done[j]])
        if len(todo):
            obs, sel = self._choose(s, todo)
            chosen[obs] = sel
            done[todo] = True  # after the choice: another thread never reads one not yet written
        return chosen

    def _choose(self, s: int, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The options' rules (module docstring) for the samples j of shard s, all at once: (obs, sel) their
        observations (sample after sample) and which are kept. Groups laid end to end ((variable, sample) after
        a stable sort by variable, or samples) and `_even_mask` stand for the loops over samples and variables;
        only `keep` is called sample by sample, on the whole sample."""
        sh = self.shards[s]
        start, stop = np.asarray(sh.offsets[j]), np.asarray(sh.offsets[j + 1])
        (obs, seg), n = _spans(start, stop), stop - start
        sel = np.ones(len(obs), bool)
        if self.max_per_variable is not None:  # first, on the whole sample (ATAT thins before its alert mask)
            var = np.asarray(sh.variable[obs])
            sel[np.argsort(var, kind="stable")] = _even_mask(np.bincount(var.astype(np.int64) * len(j) + seg),
                                                             self.max_per_variable)
        if self.keep is not None:
            kept = np.empty(len(obs), bool)
            for a, b, o in zip(start.tolist(), stop.tolist(), (np.cumsum(n) - n).tolist()):
                kept[o:o + b - a] = np.asarray(self.keep(np.asarray(sh.flag[a:b]), np.asarray(sh.time[a:b])), bool)
            kept &= sel
            first = sel & (_within(np.cumsum(sel), n) == 1)  # each sample's first selected point
            sel = kept | (first & (np.bincount(seg[kept], minlength=len(j)) == 0)[seg])  # if none passes
        if self.max_tokens is not None:
            where = np.flatnonzero(sel)
            sel[where[~_even_mask(np.bincount(seg[where], minlength=len(j)), self.max_tokens)]] = False
        return obs, sel

    def __repr__(self) -> str:
        return (f"TokenStore({len(self)} samples in {len(self.shards)} shard(s) of {self.folder}, values "
                f"{self.value_columns}, {len(self.variables)} variables"
                + (f", {len(self.classes)} classes" if self.classes else "") + ")")


def _even_mask(counts: np.ndarray, k: int) -> np.ndarray:
    """Over groups laid end to end (sizes `counts`), the members kept: all of a group of at most k, and of a group
    of c > k the k spread evenly, first and last included, ATAT's `linspace(0, c - 1, k).astype(int)`: computed for
    all groups at once with linspace's own arithmetic (i * ((c - 1) / (k - 1)), the last c - 1), bit for bit."""
    counts = np.asarray(counts, np.int64)
    mask = np.repeat(counts <= k, counts)
    big = np.flatnonzero(counts > k)
    if len(big):
        c = counts[big]
        r = np.zeros((len(c), 1), np.int64)
        if k > 1:
            r = (np.arange(k, dtype=np.float64) * ((c - 1) / (k - 1))[:, None]).astype(np.int64)
            r[:, -1] = c - 1
        mask[((np.cumsum(counts)[big] - c)[:, None] + r).ravel()] = True
    return mask


def _spans(start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ranges start[i]:stop[i] end to end -> (their indices, which range each index is of)."""
    n = stop - start
    which = np.repeat(np.arange(len(n)), n)
    return np.arange(len(which)) + np.repeat(start - (np.cumsum(n) - n), n), which


def _within(cum: np.ndarray, n: np.ndarray) -> np.ndarray:
    """A running total `cum` over groups laid end to end (sizes n) -> the running total within each group."""
    before = np.concatenate([[0], cum])[np.cumsum(n) - n]  # the total before each group
    return cum - np.repeat(before, n)


__all__ = ["TokenStore", "has_shard", "write_shard"]
