"""TokenStore.batch / sample, vectorised, against the per-sample loop they replaced (kept here as the
reference): bit for bit, over random stores (several shards, variables, labels or none) and the view's
options (max_per_variable, keep, max_tokens, time_scale, value_transform, subsets)."""

import itertools

import numpy as np
import pandas as pd
import pytest
import torch

from romae import store
from romae.data.elasticc import alert_mask

VARIABLES = list("abcde")  # "e" never observed


def _ref_even(n: int, k: int) -> np.ndarray:
    return np.linspace(0, n - 1, k).astype(np.int64)


def _ref_sample(self, i):
    """TokenStore.sample as it was: one sample at a time, a loop over its variables."""
    g = self.index[i]
    sh, j = self.shards[self._shard_of[g]], self._local[g]
    a, b = int(sh.offsets[j]), int(sh.offsets[j + 1])
    out = dict(values=np.asarray(sh.values[a:b]), time=np.asarray(sh.time[a:b]),
               variable=np.asarray(sh.variable[a:b]), flag=np.asarray(sh.flag[a:b]))
    sel = np.ones(b - a, bool)
    if self.max_per_variable is not None:
        for v in np.unique(out["variable"]):
            where = np.flatnonzero(out["variable"] == v)
            if len(where) > self.max_per_variable:
                sel[where] = False
                sel[where[_ref_even(len(where), self.max_per_variable)]] = True
    if self.keep is not None:
        kept = sel & np.asarray(self.keep(out["flag"], out["time"]), bool)
        sel = kept if kept.any() else sel & (np.cumsum(sel) == 1)
    idx = np.flatnonzero(sel)
    if self.max_tokens is not None and len(idx) > self.max_tokens:
        idx = idx[_ref_even(len(idx), self.max_tokens)]
    return {k: v[idx] for k, v in out.items()}


def _ref_batch(self, idx):
    """TokenStore.batch as it was: a padded copy of each `_ref_sample`."""
    idx = torch.as_tensor(idx).tolist()
    rows = [_ref_sample(self, i) for i in idx]
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


def _write(folder, seed: int, shards: int = 3, labels: bool = True) -> None:
    """Random samples of 1 to 120 observations in skewed variables (groups over every cap tried), times with
    ties, SNANA-like flags; the first sample of the first shard has a single observation."""
    rng = np.random.default_rng(seed)
    for k in range(shards):
        m = int(rng.integers(5, 30))
        n = rng.choice([1, 2, 3, 8, 20, 50, 120], m)
        n[0] = 1 if k == 0 else n[0]
        oid = np.repeat(np.arange(m) + 1000 * k, n)
        rows = len(oid)
        df = pd.DataFrame(dict(oid=oid, t=rng.integers(0, 60, rows) + rng.choice([0.0, 0.25, 1e-3], rows),
                               band=rng.choice(VARIABLES[:4], rows, p=[0.55, 0.2, 0.15, 0.1]),
                               f=rng.normal(0, 50, rows), e=rng.random(rows), g=rng.normal(size=rows),
                               flag=rng.choice([0, 4096, 6144, 1024], rows, p=[0.6, 0.25, 0.05, 0.1])))
        lab = pd.Series(rng.choice(["x", "y", "z"], m), index=np.arange(m) + 1000 * k) if labels else None
        store.write_shard(folder, f"part-{k}", df.sample(frac=1.0, random_state=seed + k), id="oid", time="t",
                          variable="band", value=["f", "e", "g"], flag="flag", labels=lab, variables=VARIABLES,
                          classes=["x", "y", "z"] if labels else None)


KEEPS = {"none": None,
         "detected": lambda f, t: (f & 4096) > 0,  # elementwise
         "alert": alert_mask,  # per light curve (its trigger time)
         "nothing": lambda f, t: np.zeros(len(f), bool),  # nothing passes: the first point only
         "late half": lambda f, t: t >= np.median(t)}
TRANSFORMS = [None, lambda v: torch.asinh(v / 7.0) * 3 + 1]


def _same(got: dict, want: dict, what: str) -> None:
    assert got.keys() == want.keys(), what
    for k, w in want.items():
        g = got[k]
        assert g.dtype == w.dtype and g.shape == w.shape, (what, k, g.shape, w.shape)
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes(), (what, k)  # bit for bit


def _index_sets(n: int, rng) -> list[np.ndarray]:
    return [np.arange(n), rng.permutation(n)[: max(1, n // 3)], rng.integers(0, n, 2 * n),  # repeats
            np.array([int(rng.integers(n))]), np.array([-1, 0])]


@pytest.mark.parametrize("seed,labels", [(0, True), (1, False)])
def test_batch_and_sample_match_the_per_sample_loop(tmp_path, seed, labels):
    _write(tmp_path, seed, labels=labels)
    rng = np.random.default_rng(seed)
    for mpv, keep, mt in itertools.product([None, 1, 2, 5], KEEPS, [None, 1, 3, 7]):
        opts = dict(max_per_variable=mpv, keep=KEEPS[keep], max_tokens=mt, time_scale=[1.0, 0.01, 3.0][rng.integers(3)],
                    value_transform=TRANSFORMS[rng.integers(2)])
        s = store.TokenStore(tmp_path, **opts)
        mask = rng.random(len(s)) < 0.5
        mask[-1] = True
        sub = s.subset(rng.permutation(len(s))[: len(s) // 2])
        for name, view in {"all": s, "subset": sub, "mask": s.subset(mask), "nested": sub.subset([3, 0, 3])}.items():
            for idx in _index_sets(len(view), rng):
                what = f"{opts} {name} {idx.tolist()}"
                _same(view.batch(torch.as_tensor(idx)), _ref_batch(view, idx), what)
        for i in range(len(s)):
            got, want = s.sample(i), _ref_sample(s, i)
            assert all(got[k].dtype == want[k].dtype and np.array_equal(got[k], want[k]) for k in want), (opts, i)


def test_single_observation_and_nothing_kept(tmp_path):
    _write(tmp_path, 2)
    s = store.TokenStore(tmp_path, max_per_variable=2, keep=KEEPS["nothing"], max_tokens=3)
    b = s.batch(torch.arange(len(s)))
    assert (~b["pad_mask"]).sum(1).tolist() == [1] * len(s)  # the first point of each, nothing else
    assert b["positions"][:, 0].abs().sum() == 0
    assert s.sample(0)["time"].shape == (1,)  # the single-observation sample
    _same(b, _ref_batch(s, np.arange(len(s))), "nothing kept")


def test_keep_runs_once_per_sample_and_is_shared_by_subsets(tmp_path):
    _write(tmp_path, 3)
    calls = []

    def keep(flag, time):
        calls.append(len(flag))
        return alert_mask(flag, time)

    s = store.TokenStore(tmp_path, max_per_variable=2, keep=keep)
    sub = s.subset(np.arange(0, len(s), 2))
    first = sub.batch(torch.arange(len(sub)))
    assert len(calls) == len(sub)
    s.batch(torch.arange(len(s)))
    assert len(calls) == len(s)  # only the samples the subset had not seen
    _same(sub.batch(torch.arange(len(sub))), first, "cached")
    assert len(calls) == len(s)
    other = store.TokenStore(tmp_path, max_per_variable=2, keep=KEEPS["late half"])
    _same(other.batch(torch.arange(len(other))), _ref_batch(other, np.arange(len(other))), "another view's keep")


def test_even_mask_is_even():
    rng = np.random.default_rng(0)
    for k in (1, 2, 3, 7, 65, 390):
        for c in [*range(0, 150), 389, 390, 391, 1000, 4321, 100_007]:
            want = np.ones(c, bool)
            if c > k:
                want[:] = False
                want[_ref_even(c, k)] = True
            assert np.array_equal(store._even_mask(np.array([c]), k), want), (c, k)
        counts = rng.integers(0, 3 * k + 2, 50)
        want = np.concatenate([store._even_mask(np.array([c]), k) for c in counts])
        assert np.array_equal(store._even_mask(counts, k), want)  # many groups at once
