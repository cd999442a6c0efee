"""Standard baselines to report beside RoMAE: 1-nearest-neighbour with DTW, MiniRocket (through aeon) on the kept
steps or on irregular series regridded by their times, the majority class, the training mean.

    from romae import baselines
    pred = baselines.nn1_dtw(train, test)        # TokenDatasets (from_sequences) or lists of arrays [T_i, C]
    pred = baselines.minirocket(train, test, seed=0)   # aeon's MiniRocket (pip install -e '.[baselines]')
    pred = baselines.regridded_minirocket(train, test) # irregular series: interpolated by time onto a regular grid
    acc = metrics.accuracy(test.tensors["labels"], pred)

`nn1_dtw` is the UCR/UEA archive's standard distance baseline: every test series takes the label of the
training series nearest to it under multivariate *dependent* dynamic time warping (DTW_D: one warping path
for all channels; the cost of matching step i of one series with step j of the other is the squared
Euclidean distance of their channel vectors; a path's cost is the sum of its cells' costs, no square root,
as aeon's `dtw_distance`) inside a Sakoe-Chiba band of `window` (default 10 %) of the longer series' length.

The series are taken as given, step after step: a TokenDataset's real tokens (padding removed; for
`from_sequences` the kept steps, partly missing steps filled) in their original units (the standardiser
undone: the archive's DTW baselines use the files' values; on BasicMotions, standardising the channels
first costs 1-NN DTW 12 points of accuracy), or arrays [T_i, C] whose all-NaN steps (dropped steps) are
left out. The warping runs over the order of the kept steps, not their times: an irregular series is
compared as the sequence of its observations. Lengths may differ: the band is tslearn's (radius r around
the diagonal through the start, around the one through the end, and between), so a path always exists. A
partly missing step in an array is refused (fill it first, e.g. with `from_sequences`).

`minirocket` compares irregular series as the sequences of their observations too (padded at their ends to one
length); `regridded_minirocket` uses their times: each series' kept steps linearly interpolated onto one regular grid
(`regular_grid`: for series with steps dropped, their own step), then the same MiniRocket.

The dynamic programme runs along the anti-diagonals of the band, vectorised over all pairs of a block of
series of similar lengths (numpy only); each diagonal's costs come from one batched matrix product.
BasicMotions after the 30 % drop (40 x 40 series of 70 steps x 6 channels) takes about 0.05 s on one core,
200 x 200 series of 128 steps about 1 s.
"""

from __future__ import annotations

import warnings

import numpy as np

BLOCK_BYTES = 64 * 2 ** 20  # the cost matrices of one block of pairs take at most about this much memory
CHUNK = 64  # series of b per block (sorted by length: a block of similar lengths has a narrower band)


def _steps(x, what: str, k: int) -> np.ndarray:
    """Series k of `what` as a float64 array [T, C] (a univariate one [T] -> [T, 1]); another shape is refused."""
    x = np.asarray(x, dtype=np.float64)
    x = x[:, None] if x.ndim == 1 else x
    if x.ndim != 2:
        raise ValueError(f"{what} {k}: expected an array [T, C], got shape {x.shape}")
    return x


def series_of(data, what: str = "series", standardized: bool = False) -> list[np.ndarray]:
    """The series of `data` as float64 arrays [n_i, C], in order: a TokenDataset's (or any object with
    `tensors` holding values [B, N, C] and pad_mask [B, N]) real tokens, or a list of arrays [T_i, C] (or [T_i])
    with their all-NaN steps left out. Refuses partly missing steps, infinite values and empty series.

    A TokenDataset's tokens are put back into their original units (its `standardizer` undone), as the archive's
    published DTW baselines use the files' values; `standardized=True` keeps them as the model sees them."""
    tensors = getattr(data, "tensors", None)
    if isinstance(tensors, dict) and "values" in tensors:
        values = tensors["values"]
        scaler = getattr(data, "standardizer", None)
        if scaler is not None and not standardized:
            variable = tensors["positions"][:, 1].long() if scaler.by == "variable" else None
            values = scaler.inverse_transform(values, variable)
        values = np.asarray(values, dtype=np.float64)
        pad = tensors.get("pad_mask")
        pad = np.zeros(values.shape[:2], bool) if pad is None else np.asarray(pad, dtype=bool)
        items = [v[~p] for v, p in zip(values, pad)]
    else:
        items = list(data)
    out = []
    for k, x in enumerate(items):
        x = _steps(x, what, k)
        if np.isinf(x).any():
            raise ValueError(f"{what} {k} holds an infinite value (step {int(np.argwhere(np.isinf(x))[0, 0])})")
        x = x[~np.isnan(x).all(1)]  # a dropped step: no observation
        if np.isnan(x).any():
            raise ValueError(f"{what} {k}: a step is partly missing (NaN in some channels only); fill it first, "
                             f"e.g. with romae.from_sequences, which interpolates it in time")
        if not len(x):
            raise ValueError(f"{what} {k} has no observed step")
        out.append(x)
    if not out:
        raise ValueError(f"no {what}: nothing to compare")
    if len({x.shape[1] for x in out}) > 1:
        raise ValueError(f"{what}: the series have different numbers of channels: {sorted({x.shape[1] for x in out})}")
    return out


def band(n, m, window: float | None) -> tuple[np.ndarray, np.ndarray]:
    """The Sakoe-Chiba band of each pair of lengths (n, m) as bounds (lo, hi) of d = i - j (step i of the first
    series against step j of the second): radius r = floor(window x max(n, m)) around the diagonal through (0, 0)
    and around the one through the end cell (n - 1, m - 1), and everything between (tslearn's
    `sakoe_chiba_mask`): lo = min(0, n - m) - r, hi = max(0, n - m) + r. `window=None`: no band."""
    n, m = np.asarray(n, dtype=np.int64), np.asarray(m, dtype=np.int64)
    if window is None:
        r = np.maximum(n, m)
    elif isinstance(window, bool) or not isinstance(window, (int, float)) or not 0 <= window <= 1:
        raise ValueError(f"window must be a share of the length in [0, 1] (or None: no band), got {window!r}")
    else:
        r = np.floor(window * np.maximum(n, m) + 1e-9).astype(np.int64)
    return np.minimum(0, n - m) - r, np.maximum(0, n - m) + r


def _pad(series: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """-> values [B, T, C] (0 beyond each length), lengths [B], squared norms [B, T] (inf beyond each length:
    a cell outside a series costs inf)."""
    lengths = np.array([len(x) for x in series])
    out = np.zeros((len(series), lengths.max(), series[0].shape[1]))
    for k, x in enumerate(series):
        out[k, : len(x)] = x
    norms = (out ** 2).sum(-1)
    norms[np.arange(out.shape[1])[None, :] >= lengths[:, None]] = np.inf
    return out, lengths, norms


def _block(A: list[np.ndarray], B: list[np.ndarray], window: float | None) -> np.ndarray:
    """DTW of every pair of A x B at once -> [len(A), len(B)].

    Cells are visited anti-diagonal by anti-diagonal (k = i + j) and indexed on each by d = i - j, so the three
    predecessors of (i, j) are d on diagonal k - 2 and d -+ 1 on diagonal k - 1. One array F[d, a, b] holds
    diagonal k - 1 at the d of its parity and diagonal k - 2 at the others, and is updated in place. The costs
    of one diagonal's band cells for all pairs come from one batched matrix product
    (|x - y|^2 = |x|^2 + |y|^2 - 2 x.y)."""
    Xa, na, sa = _pad(A)
    Xb, nb, sb = _pad(B)
    N, M = Xa.shape[1], Xb.shape[1]
    lo, hi = band(na[:, None], nb[None, :], window)  # [q, r]
    dlo, dhi = max(int(lo.min()), -(M - 1)), min(int(hi.max()), N - 1)
    F = np.full((dhi - dlo + 3, len(A), len(B)), np.inf)  # row d - dlo + 1; rows 0 and -1: inf sentinels
    out = np.full((len(A), len(B)), np.inf)
    ends = (na[:, None] + nb[None, :] - 2).ravel()  # the diagonal of each pair's end cell (n - 1, m - 1)
    order = np.argsort(ends, kind="stable")
    bounds = np.searchsorted(ends[order], np.arange(N + M))
    for k in range(N + M - 1):
        # the d of this diagonal's parity whose cell lies inside the padded arrays: 0 <= i < N, 0 <= j < M
        first, last = max(dlo, -k, k - 2 * (M - 1)), min(dhi, k, 2 * (N - 1) - k)
        first += (first - k) % 2
        last -= (last - k) % 2
        new = None
        if first <= last:
            d = np.arange(first, last + 1, 2)
            i, j = (k + d) // 2, (k - d) // 2
            cost = sa[:, i].T[:, :, None] + sb[:, j].T[:, None, :] \
                - 2 * np.matmul(Xa[:, i].transpose(1, 0, 2), Xb[:, j].transpose(1, 2, 0))  # [cells, q, r]
            np.maximum(cost, 0.0, out=cost)  # rounding; inf (outside a series) stays inf
            cost[(d[:, None, None] < lo[None]) | (d[:, None, None] > hi[None])] = np.inf  # outside the pair's band
            s = slice(first - dlo + 1, last - dlo + 2, 2)
            if k == 0:
                new = cost  # (0, 0): every path starts here
            else:
                new = cost + np.minimum(np.minimum(F[s], F[first - dlo: last - dlo + 1: 2]),
                                        F[first - dlo + 2: last - dlo + 3: 2])
        F[1 + (dlo - k) % 2: -1: 2] = np.inf  # this parity's rows: diagonal k (inf where it has no cell)
        if new is not None:
            F[s] = new
        done = order[bounds[k]: bounds[k + 1]]
        if len(done):
            p, q = np.divmod(done, len(B))
            out[p, q] = F[na[p] - nb[q] - dlo + 1, p, q]
    return out


def dtw_distances(a, b, window: float | None = 0.1, block_bytes: int = BLOCK_BYTES,
                  standardized: bool = False) -> np.ndarray:
    """Dependent multivariate DTW between every series of `a` and every series of `b` (TokenDatasets or lists of
    arrays [T_i, C]; see `series_of`) inside a Sakoe-Chiba band of radius `window` x the longer length (`band`)
    -> [len(a), len(b)] float64: the smallest sum of squared Euclidean step distances along a warping path.
    TokenDatasets are compared in their original units unless `standardized` (`series_of`). The pairs are
    computed in blocks of series of similar lengths, each taking about `block_bytes` of memory at most."""
    A, B = series_of(a, "series of a", standardized), series_of(b, "series of b", standardized)
    if A[0].shape[1] != B[0].shape[1]:
        raise ValueError(f"a has {A[0].shape[1]} channels, b {B[0].shape[1]}")
    band(1, 1, window)  # checks window
    la, lb = np.array([len(x) for x in A]), np.array([len(x) for x in B])
    oa, ob = np.argsort(la, kind="stable"), np.argsort(lb, kind="stable")
    out = np.empty((len(A), len(B)))

    def cells(qa, rb) -> int:  # memory of a block, in float64 cells: F and about four diagonals' temporaries
        lo, hi = band(la[qa].max(), lb[rb].min(), window)[1], band(la[qa].min(), lb[rb].max(), window)[0]
        return int(3 * (hi - lo + 3)) * len(qa) * len(rb)

    budget = max(1, block_bytes // 8)
    for b0 in range(0, len(B), CHUNK):
        chunk = ob[b0: b0 + CHUNK]
        step = len(chunk)
        while step > 1 and cells(oa[:1], chunk[:step]) > budget:  # very long series: fewer of b per block
            step //= 2
        for rb in (chunk[i: i + step] for i in range(0, len(chunk), step)):
            a0 = 0
            while a0 < len(A):
                a1 = a0 + 1  # grow the block of a by doubling while it fits
                while a1 < min(len(A), a0 + CHUNK) and cells(oa[a0: min(len(A), a0 + CHUNK, 2 * a1 - a0)], rb) <= budget:
                    a1 = min(len(A), a0 + CHUNK, 2 * a1 - a0)
                qa = oa[a0:a1]
                out[np.ix_(qa, rb)] = _block([A[i] for i in qa], [B[j] for j in rb], window)
                a0 = a1
    return out


def _labels(data, labels, what: str) -> np.ndarray:
    """The training labels: `labels` as given, else the dataset's; a dataset's regression targets standardised by its
    builder (`standardize_targets=True`: `target_standardizer`) are put back into their own units (y x std + mean, in
    float64), so a baseline fits, and predicts, the targets a user gave, as `romae.train.predict` returns them."""
    if labels is not None:
        return np.asarray(labels)
    tensors = getattr(data, "tensors", None)
    if not (isinstance(tensors, dict) and "labels" in tensors):
        raise ValueError(f"{what}: give the training labels (labels=...) or a dataset that holds them")
    scaler = getattr(data, "target_standardizer", None)
    if scaler is None:
        return np.asarray(tensors["labels"])
    return np.asarray(tensors["labels"], dtype=np.float64) * scaler.std + scaler.mean


def nn1_dtw(train, test, labels=None, window: float | None = 0.1, distances: np.ndarray | None = None,
            standardized: bool = False) -> np.ndarray:
    """1-nearest-neighbour classification under DTW (`dtw_distances`, band `window`): each test series gets the
    label of its nearest training series (the first of equally near ones). `labels`: the training labels (default:
    `train.tensors["labels"]`, class indices of a TokenDataset). `distances` [len(test), len(train)]: reuse ones
    already computed. TokenDatasets are compared in their original units unless `standardized` (`series_of`).
    -> the predicted labels, one per test series."""
    y = _labels(train, labels, "nn1_dtw")
    D = dtw_distances(test, train, window, standardized=standardized) if distances is None else np.asarray(distances)
    if D.shape[1] != len(y):
        raise ValueError(f"nn1_dtw: {len(y)} training labels for {D.shape[1]} training series")
    return y[np.argmin(D, axis=1)]


MINIROCKET_MIN_LENGTH = 9  # MiniRocket's kernels are 9 steps long: shorter series are padded to this


def padded_collection(series: list[np.ndarray], length: int) -> np.ndarray:
    """Series [n_i, C] as aeon's equal-length collection [n, C, length]: each padded at its end by repeating its last
    observed step (no jump to zero, which a convolution would read as a feature). MiniRocket takes no unequal lengths,
    so a series with dropped steps is compared as the sequence of its observations, as `nn1_dtw` does."""
    out = np.empty((len(series), series[0].shape[1], length))
    for k, x in enumerate(series):
        out[k] = np.concatenate([x, np.repeat(x[-1:], length - len(x), axis=0)]).T
    return out


def _quiet_numba_threads() -> None:
    """Have numba (aeon's kernels) run its parallel loops on its own 'workqueue' threads, not an OpenMP pool: on this
    project's CPU machines an OpenMP pool that numba started beside torch's made every later torch training about 12x
    slower once torch's thread count was changed (torch.set_num_threads, as tests and notebooks do); measured: a small
    fit 4 s -> 49 s. The user's own NUMBA_THREADING_LAYER is kept; a layer numba already launched cannot change."""
    import os
    import sys

    if "NUMBA_THREADING_LAYER" in os.environ:
        return
    os.environ["NUMBA_THREADING_LAYER"] = "workqueue"
    numba = sys.modules.get("numba")
    if numba is not None:  # imported already (numba reads the variable once): its config, unless a layer is running
        numba.config.THREADING_LAYER = "workqueue"


def _check_pair(what: str, y: np.ndarray, n_train: int, channels: tuple[int, int]) -> None:
    if len(y) != n_train:
        raise ValueError(f"{what}: {len(y)} training labels for {n_train} training series")
    if channels[0] != channels[1]:
        raise ValueError(f"{what}: training series have {channels[0]} channels, test series {channels[1]}")


def _fit_predict(a: np.ndarray, b: np.ndarray, y: np.ndarray, seed: int, n_kernels: int, n_jobs: int) -> np.ndarray:
    """aeon's MiniRocket fitted on the equal-length collection a [n, C, L] with labels y (a ridge classifier for class
    labels, a ridge regressor for float targets), then applied to b [m, C, L] -> its m predictions."""
    _quiet_numba_threads()
    try:
        from aeon.classification.convolution_based import MiniRocketClassifier
        from aeon.regression.convolution_based import MiniRocketRegressor
    except ImportError as e:  # pragma: no cover - the extra is part of `make venv`
        raise ImportError("MiniRocket needs aeon: pip install -e '.[baselines]' (make venv installs it)") from e
    regression = np.issubdtype(y.dtype, np.floating)
    if regression and y.ndim != 1:
        raise ValueError(f"MiniRocket regresses one target per series; these targets have shape {list(y.shape)}: "
                         "call it once per target (labels=y[:, k])")
    model = (MiniRocketRegressor if regression else MiniRocketClassifier)(n_kernels=n_kernels, random_state=seed,
                                                                       n_jobs=n_jobs)
    model.fit(a, y)
    return model.predict(b)


def minirocket(train, test, labels=None, seed: int = 0, n_kernels: int = 10_000, standardized: bool = False,
               n_jobs: int = 1) -> np.ndarray:
    """MiniRocket (Dempster et al. 2021), the field's fast strong baseline, through aeon (the `baselines` extra):
    random convolutional kernels, then a ridge classifier (class labels) or ridge regressor (float targets).
    `train`, `test`: TokenDatasets or lists of arrays [T_i, C] (`series_of`: padding removed, original units unless
    `standardized`); unequal lengths are padded (`padded_collection`) to the longest series of both sets: the kept
    steps are taken in order, their times ignored (`regridded_minirocket` uses them).
    `labels`: the training labels, as given (default: the dataset's; regression targets that the builder standardised,
    `standardize_targets=True`, are fitted and predicted in their own units); `seed`: the kernels' random state.
    -> the predictions, one per test series (labels as given, or float targets in the targets' units)."""
    y = _labels(train, labels, "minirocket")
    a, b = series_of(train, "training series", standardized), series_of(test, "test series", standardized)
    _check_pair("minirocket", y, len(a), (a[0].shape[1], b[0].shape[1]))
    length = max(MINIROCKET_MIN_LENGTH, max(len(x) for x in a + b))
    return _fit_predict(padded_collection(a, length), padded_collection(b, length), y, seed, n_kernels, n_jobs)


# ----------------------------------------------------------------------------- irregular series on a regular grid

REGRID_MAX_LENGTH = 4096  # the most points `regular_grid` chooses by itself (MiniRocket's time grows with the length)


def timed_series_of(data, times=None, what: str = "series", standardized: bool = False) -> list[tuple]:
    """The series of `data` with their true times -> [(times [n_i] float64, increasing; values [n_i, C])], in order.

    A TokenDataset of 1-D positions (`from_sequences`): each real token's position is its time (`times` must be None:
    the dataset carries them); values as `series_of` gives them. A list of arrays [T_i, C] (or [T_i]): `times` one
    array [T_i] per series (default: the step index 0..T_i-1, as `from_sequences` numbers steps); all-NaN steps are
    left out with their times. Steps are sorted by time. Refused, naming the series and the value: times of another
    length than their series, not real, not finite, or two kept steps at one time; and what `series_of` refuses."""
    tensors = getattr(data, "tensors", None)
    if isinstance(tensors, dict) and "values" in tensors:
        if times is not None:
            raise ValueError(f"{what}: a dataset carries its own times (its positions); pass times= only with arrays")
        pos = tensors.get("positions")
        if pos is None or pos.ndim != 3 or pos.shape[1] != 1:
            raise ValueError(f"{what}: regridding needs one time per token (positions [B, 1, N], as from_sequences "
                             f"builds); these positions have shape {None if pos is None else list(pos.shape)} "
                             "(from_long's are (time, variable): one series per variable is not what this regrids)")
        pad = tensors.get("pad_mask")
        pos = np.asarray(pos, dtype=np.float64)[:, 0]
        pad = np.zeros(pos.shape, bool) if pad is None else np.asarray(pad, dtype=bool)
        stamps = [t[~p] for t, p in zip(pos, pad)]
        values = series_of(data, what, standardized)
    else:
        items = list(data)
        if times is not None and len(times) != len(items):
            raise ValueError(f"{what}: {len(times)} arrays of times for {len(items)} series")
        stamps = []
        for k, x in enumerate(items):
            x = _steps(x, what, k)
            t = np.arange(len(x), dtype=np.float64) if times is None else np.asarray(times[k])
            if t.dtype.kind not in "iuf":
                raise TypeError(f"{what} {k}: times must be real numbers, got {t.dtype} ({t.ravel()[:3].tolist()}...)")
            if t.shape != (len(x),):
                raise ValueError(f"{what} {k}: times of shape {list(t.shape)} for {len(x)} steps")
            stamps.append(t.astype(np.float64)[~np.isnan(x).all(1)])  # a dropped step goes with its time
        values = series_of(items, what)
    out = []
    for k, (t, x) in enumerate(zip(stamps, values)):
        if not np.isfinite(t).all():
            j = int(np.flatnonzero(~np.isfinite(t))[0])
            raise ValueError(f"{what} {k}: the time of kept step {j} is {t[j]}, not finite")
        order = np.argsort(t, kind="stable")
        t, x = t[order], x[order]
        same = np.flatnonzero(np.diff(t) == 0)
        if len(same):
            raise ValueError(f"{what} {k}: two kept steps at time {t[same[0]]:g}; a grid takes one value per time "
                             "(average them, or keep one)")
        out.append((t, x))
    return out


def regular_grid(timed: list[tuple], length: int | None = None) -> np.ndarray:
    """One regular grid of times for all `timed` series (`timed_series_of`): from the earliest kept time of any series
    to the latest, spaced by the smallest gap between two consecutive kept times of any series, so series that were
    regular before steps were dropped come back on their own step (round(span / gap) + 1 points), at least
    MINIROCKET_MIN_LENGTH and at most REGRID_MAX_LENGTH (beyond it: that many points, evenly spaced, a coarser step).
    `length`: that many evenly spaced points instead (a whole number >= MINIROCKET_MIN_LENGTH). -> times [L]."""
    if length is not None and (isinstance(length, bool) or not isinstance(length, (int, np.integer))
                               or length < MINIROCKET_MIN_LENGTH):
        raise ValueError(f"length must be a whole number of grid points >= {MINIROCKET_MIN_LENGTH} (MiniRocket's "
                         f"kernels are {MINIROCKET_MIN_LENGTH} steps long), got {length!r}")
    first, last = min(t[0] for t, _ in timed), max(t[-1] for t, _ in timed)
    if length is None:
        gaps = [np.diff(t).min() for t, _ in timed if len(t) > 1]
        points = (last - first) / min(gaps) + 1 if gaps else 1  # only single-step series: a constant each
        if points > REGRID_MAX_LENGTH:
            warnings.warn(f"regridding: a regular grid at the smallest gap between kept steps ({min(gaps):.3g}) would "
                          f"have {points:.0f} points over {last - first:.3g}; {REGRID_MAX_LENGTH} evenly spaced points "
                          f"instead (a coarser step; `length=` sets the number)", stacklevel=3)
        length = int(round(min(max(points, MINIROCKET_MIN_LENGTH), REGRID_MAX_LENGTH)))
    return np.linspace(first, last, int(length))


def regridded_collection(timed: list[tuple], grid: np.ndarray) -> np.ndarray:
    """Timed series on one grid -> aeon's collection [n, C, len(grid)]: each channel linearly interpolated by time
    between its kept steps (`np.interp`), held at its first kept value before its first time and at its last after
    its last (a shorter series is padded as `padded_collection` pads); a series of one kept step is constant."""
    out = np.empty((len(timed), timed[0][1].shape[1], len(grid)))
    for k, (t, x) in enumerate(timed):
        for c in range(x.shape[1]):
            out[k, c] = np.interp(grid, t, x[:, c])
    return out


def regridded_minirocket(train, test, labels=None, *, train_times=None, test_times=None, length: int | None = None,
                         seed: int = 0, n_kernels: int = 10_000, standardized: bool = False,
                         n_jobs: int = 1) -> np.ndarray:
    """MiniRocket on irregular series put back on a regular grid, the baseline for series with dropped steps or real
    times: each series' kept steps, linearly interpolated by their true times onto one regular grid shared by the
    training and the test series and drawn from the training series alone (`regular_grid`: from their earliest kept
    time to their latest, spaced by the smallest gap between consecutive kept times, e.g. the file's own step for UEA
    series with steps dropped; `length` points instead if given; a test series beyond it is cut to it), then `minirocket`'s aeon MiniRocket (ridge classifier, or regressor for float targets).

    `train`, `test`: TokenDatasets of 1-D positions (`from_sequences`: the positions are the times) or lists of arrays
    [T_i, C] (NaN rows: dropped steps) with `train_times` / `test_times` (one array [T_i] per series; default the
    step index) (`timed_series_of`). Lengths may differ; a series of one kept step becomes constant; before its first
    and after its last kept time a series holds its end values (`regridded_collection`). Values in the file's units
    unless `standardized`. `labels`, `seed`, `n_kernels`, `n_jobs`: as `minirocket`.
    -> the predictions, one per test series (labels as given, or float targets in the targets' units)."""
    y = _labels(train, labels, "regridded_minirocket")
    a = timed_series_of(train, train_times, "training series", standardized)
    b = timed_series_of(test, test_times, "test series", standardized)
    _check_pair("regridded_minirocket", y, len(a), (a[0][1].shape[1], b[0][1].shape[1]))
    grid = regular_grid(a, length)  # the training series' grid: the test series do not shape the features
    return _fit_predict(regridded_collection(a, grid), regridded_collection(b, grid), y, seed, n_kernels, n_jobs)


def majority_class(train_labels, n: int) -> np.ndarray:
    """The trivial classifier: the most frequent training label (the smallest of equally frequent ones), n times."""
    values, counts = np.unique(np.asarray(train_labels), return_counts=True)
    if not len(values):
        raise ValueError("majority_class: no training labels")
    return np.repeat(values[np.argmax(counts)], n)


def training_mean(train_targets, n: int) -> np.ndarray:
    """The trivial regressor: the training targets' mean (per output), n times -> [n, *target shape]."""
    y = np.asarray(train_targets, dtype=np.float64)
    if not len(y) or not np.isfinite(y).all():
        raise ValueError("training_mean: the training targets must be finite and not empty")
    mean = y.mean(axis=0)
    return np.broadcast_to(mean, (n, *mean.shape)).copy()

