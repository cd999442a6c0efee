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
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .builders import _py

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


def save_arrays(path: str | Path, arrays: dict[str, np.ndarray], meta: dict) -> Path:
    """Write a folder `path` of `<name>.npy` arrays and `meta.json`, built under a temporary name and renamed
    when complete: a reader sees the whole folder or none of it (an interrupted write leaves no `path`)."""
    final = Path(path)
    tmp = final.with_name(f".{final.name}.part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for k, a in arrays.items():
        np.save(tmp / f"{k}.npy", a)
    (tmp / "meta.json").write_text(json.dumps(meta, default=str))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
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
        sizes = [len(s.labels) for s in self.shards]
        self._shard_of = np.repeat(np.arange(len(sizes)), sizes)
        self._local = np.concatenate([np.arange(n) for n in sizes])
        # per object over all shards, read once (small: one number per object)
        self._labels = np.concatenate([np.asarray(s.labels) for s in self.shards])
        self._n_obs = np.concatenate([np.diff(np.asarray(s.offsets)) for s in self.shards])
        self._ids = [x for s in self.shards for x in s.meta["ids"]]
        self.index = np.arange(sum(sizes))

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
        g = self.index[i]
        sh, j = self.shards[self._shard_of[g]], self._local[g]
        a, b = int(sh.offsets[j]), int(sh.offsets[j + 1])
        out = dict(values=np.asarray(sh.values[a:b]), time=np.asarray(sh.time[a:b]),
                   variable=np.asarray(sh.variable[a:b]), flag=np.asarray(sh.flag[a:b]))
        sel = np.ones(b - a, bool)
        if self.max_per_variable is not None:  # first, on the whole sample (ATAT thins before its alert mask)
            for v in np.unique(out["variable"]):
                where = np.flatnonzero(out["variable"] == v)
                if len(where) > self.max_per_variable:
                    sel[where] = False
                    sel[where[_even(len(where), self.max_per_variable)]] = True
        if self.keep is not None:
            kept = sel & np.asarray(self.keep(out["flag"], out["time"]), bool)
            sel = kept if kept.any() else sel & (np.cumsum(sel) == 1)  # nothing passes: the first point only
        idx = np.flatnonzero(sel)
        if self.max_tokens is not None and len(idx) > self.max_tokens:
            idx = idx[_even(len(idx), self.max_tokens)]
        return {k: v[idx] for k, v in out.items()}

    def batch(self, idx: torch.Tensor) -> dict[str, torch.Tensor]:
        """idx [B] -> values [B, N, C] float32, positions [B, 2, N] float64 (time, variable), pad_mask [B, N],
        labels [B] (when the store has labels); N = the batch's longest sample."""
        idx = torch.as_tensor(idx).tolist()
        rows = [self.sample(i) for i in idx]
        N, C = max(len(r["time"]) for r in rows), self.token_dim
        values = np.zeros((len(rows), N, C), np.float32)
        pos = np.zeros((len(rows), 2, N), np.float64)
        pad = np.ones((len(rows), N), bool)
        for k, r in enumerate(rows):
            n = len(r["time"])
            values[k, :n] = r["values"]
            pos[k, 0, :n] = (r["time"] - r["time"][0]) * self.time_scale
            pos[k, 1, :n] = r["variable"]
            pad[k, :n] = False
        v = torch.from_numpy(values)
        if self.value_transform is not None:
            v = self.value_transform(v).masked_fill(torch.from_numpy(pad)[..., None], 0.0)
        out = dict(values=v, positions=torch.from_numpy(pos), pad_mask=torch.from_numpy(pad))
        labels = self._labels[self.index[idx]]
        if (labels >= 0).all():
            out["labels"] = torch.as_tensor(labels, dtype=torch.long)
        return out

    def __repr__(self) -> str:
        return (f"TokenStore({len(self)} samples in {len(self.shards)} shard(s) of {self.folder}, values "
                f"{self.value_columns}, {len(self.variables)} variables"
                + (f", {len(self.classes)} classes" if self.classes else "") + ")")


def _even(n: int, k: int) -> np.ndarray:
    """k of range(n) spread evenly, first and last included (k < n): ATAT's `linspace(0, n - 1, k).astype(int)`."""
    return np.linspace(0, n - 1, k).astype(np.int64)


__all__ = ["TokenStore", "has_shard", "write_shard"]
