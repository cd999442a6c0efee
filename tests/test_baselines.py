"""romae.baselines: the vectorised banded DTW equals the textbook double loop; 1-NN DTW classifies an easy set;
MiniRocket predicts regression targets in their own units; the regridded MiniRocket interpolates by time (worked by
hand), reads times that the order of steps hides, and refuses what it cannot regrid, naming the value."""

import math
import time

import numpy as np
import pytest

from romae import baselines, from_sequences


def reference_dtw(x: np.ndarray, y: np.ndarray, window) -> float:
    """The textbook O(n m) recurrence, cell by cell: squared Euclidean step costs, cells within the Sakoe-Chiba
    radius r = floor(window * max(n, m)) of the diagonal through the start or the one through the end, or between
    (tslearn's `sakoe_chiba_mask`; window None: no band)."""
    n, m = len(x), len(y)
    r = max(n, m) if window is None else math.floor(window * max(n, m) + 1e-9)
    D = np.full((n + 1, m + 1), math.inf)
    D[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if min(0, n - m) - r <= i - j <= max(0, n - m) + r:
                D[i, j] = float(((x[i - 1] - y[j - 1]) ** 2).sum()) + min(D[i - 1, j - 1], D[i - 1, j], D[i, j - 1])
    return float(D[n, m])


@pytest.mark.parametrize("window", [0.1, 0.0, 0.3, None])
def test_banded_dtw_equals_the_double_loop_on_unequal_lengths(window):
    rng = np.random.default_rng(0)
    a = [rng.normal(size=(int(rng.integers(1, 14)), 3)) for _ in range(5)]
    b = [rng.normal(size=(int(rng.integers(1, 14)), 3)) for _ in range(4)]
    D = baselines.dtw_distances(a, b, window)
    want = np.array([[reference_dtw(x, y, window) for y in b] for x in a])
    np.testing.assert_allclose(D, want, rtol=1e-9, atol=1e-9)
    # small blocks: the same numbers
    np.testing.assert_allclose(baselines.dtw_distances(a, b, window, block_bytes=1), want, rtol=1e-9, atol=1e-9)


def test_blocks_of_sorted_lengths_give_the_same_numbers(monkeypatch):
    rng = np.random.default_rng(5)
    a = [rng.normal(size=(int(rng.integers(15, 61)), 2)) for _ in range(7)]
    b = [rng.normal(size=(int(rng.integers(15, 61)), 2)) for _ in range(5)]
    want = np.array([[reference_dtw(x, y, 0.1) for y in b] for x in a])
    np.testing.assert_allclose(baselines.dtw_distances(a, b), want, rtol=1e-9)
    monkeypatch.setattr(baselines, "CHUNK", 2)  # many blocks, each of similar lengths
    np.testing.assert_allclose(baselines.dtw_distances(a, b), want, rtol=1e-9)


def test_equal_lengths_with_no_band_width_is_the_euclidean_distance():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(3, 9, 2)), rng.normal(size=(2, 9, 2))
    D = baselines.dtw_distances(list(a), list(b), window=0.0)
    np.testing.assert_allclose(D, ((a[:, None] - b[None]) ** 2).sum((2, 3)))


def test_dropped_steps_are_left_out_and_partly_missing_ones_refused():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(12, 2)), rng.normal(size=(10, 2))
    gappy = x.copy()
    gappy[[1, 5, 6]] = np.nan  # dropped steps: all channels missing
    kept = x[np.setdiff1d(np.arange(12), [1, 5, 6])]
    assert baselines.dtw_distances([gappy], [y])[0, 0] == pytest.approx(reference_dtw(kept, y, 0.1))
    gappy[2, 0] = np.nan
    with pytest.raises(ValueError, match="series of a 0: a step is partly missing"):
        baselines.dtw_distances([gappy], [y])
    with pytest.raises(ValueError, match="window must be"):
        baselines.dtw_distances([x], [y], window=2)


def test_token_datasets_give_their_real_tokens():
    rng = np.random.default_rng(3)
    series = [rng.normal(size=(t, 2)) for t in (8, 5, 11)]
    for standardize in (False, True):  # in the original units: the standardiser is undone
        data = from_sequences(series, labels=["a", "b", "a"], standardize=standardize)
        for g, s in zip(baselines.series_of(data), series):
            np.testing.assert_allclose(g, s, rtol=1e-5, atol=1e-5)  # float32 tokens, padding removed
    seen = baselines.series_of(data, standardized=True)  # as the model sees them
    np.testing.assert_allclose(seen[1], data.tensors["values"][1, :5].numpy())


def _toy(n_per_class: int, seed: int):
    """Three shapes (sine, square wave, ramp), random lengths 20-40, noise, 30 % of the steps dropped."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for label, f in enumerate((np.sin, lambda t: np.sign(np.sin(t)), lambda t: (t % 6.28) / 3.14 - 1)):
        for _ in range(n_per_class):
            T = int(rng.integers(20, 41))
            t = np.linspace(0, 6.28, T) + rng.normal(0, 0.1)
            x = np.stack([f(t), -f(t)], 1) + rng.normal(0, 0.2, size=(T, 2))
            x[rng.choice(T, int(0.3 * T), replace=False)] = np.nan
            xs.append(x)
            ys.append(label)
    return xs, np.array(ys)


def test_one_nearest_neighbour_classifies_a_separable_toy_set():
    xtr, ytr = _toy(5, 0)
    xte, yte = _toy(10, 1)
    pred = baselines.nn1_dtw(xtr, xte, labels=ytr)
    assert (pred == yte).mean() >= 0.95
    # through TokenDatasets: the same test series, labels from the training dataset (class indices)
    train = from_sequences(xtr, labels=ytr)
    test = from_sequences(xte, labels=yte, like=train)
    assert (baselines.nn1_dtw(train, test) == test.tensors["labels"].numpy()).mean() >= 0.95
    with pytest.raises(ValueError, match="training labels"):
        baselines.nn1_dtw(xtr, xte)


def test_basicmotions_sized_problem_takes_seconds():
    rng = np.random.default_rng(4)
    a, b = list(rng.normal(size=(40, 70, 6))), list(rng.normal(size=(40, 70, 6)))
    t0 = time.perf_counter()
    D = baselines.dtw_distances(a, b)
    assert time.perf_counter() - t0 < 10 and D.shape == (40, 40) and np.isfinite(D).all()
    assert D[3, 7] == pytest.approx(reference_dtw(a[3], b[7], 0.1))


def test_trivial_predictors():
    assert list(baselines.majority_class(["b", "a", "b", "a", "c"], 3)) == ["a", "a", "a"]  # ties: the smallest
    np.testing.assert_allclose(baselines.training_mean([[1.0, 2.0], [3.0, 6.0]], 2), [[2.0, 4.0], [2.0, 4.0]])
    with pytest.raises(ValueError):
        baselines.training_mean([1.0, np.nan], 2)


# ----------------------------------------------------------------------------- MiniRocket (aeon, the baselines extra)

def _waves(n: int, seed: int, lengths=(30, 50)):
    """Two classes of noisy series of unequal lengths: a sine (class 0) or a square wave (class 1), 2 channels."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for i in range(n):
        t = np.arange(rng.integers(*lengths)) / 4.0
        wave = np.sin(t) if i % 2 == 0 else np.sign(np.sin(t))
        xs.append(np.stack([wave, -wave], 1) + 0.1 * rng.standard_normal((len(t), 2)))
        ys.append(i % 2)
    return xs, np.array(ys)


def test_minirocket_classifies_unequal_lengths_and_is_seeded():
    pytest.importorskip("aeon")
    (a, ya), (b, yb) = _waves(20, 0), _waves(20, 1, lengths=(40, 70))  # test series longer than any training one
    pred = baselines.minirocket(a, b, labels=ya, seed=0, n_kernels=84 * 4)
    assert (pred == yb).mean() >= 0.9
    assert np.array_equal(pred, baselines.minirocket(a, b, labels=ya, seed=0, n_kernels=84 * 4))


def test_minirocket_pads_with_the_last_step_and_refuses_mismatched_channels():
    pytest.importorskip("aeon")
    out = baselines.padded_collection([np.arange(6.0).reshape(3, 2)], 5)
    assert out.shape == (1, 2, 5) and out[0, 0].tolist() == [0, 2, 4, 4, 4]
    a, ya = _waves(6, 0)
    with pytest.raises(ValueError, match="2 channels, test series 1"):
        baselines.minirocket(a, [x[:, :1] for x in a], labels=ya)


def test_minirocket_regresses_float_targets():
    pytest.importorskip("aeon")
    a, _ = _waves(30, 2)
    y = np.array([x[:, 0].std() * 10 for x in a])  # amplitude spread: a sine's std < a square wave's
    pred = baselines.minirocket(a, a, labels=y, seed=0, n_kernels=84 * 4)
    assert pred.dtype.kind == "f" and np.corrcoef(pred, y)[0, 1] > 0.9


def test_minirocket_leaves_no_openmp_pool_beside_torchs():
    """numba's OpenMP pool beside torch's made later trainings ~12x slower once torch's thread count changed: aeon's
    kernels run on numba's workqueue threads instead (checked in a fresh process, as numba picks its layer once)."""
    pytest.importorskip("aeon")
    import subprocess
    import sys

    code = ("import numpy as np, numba\nfrom romae import baselines\n"
            "a = [np.random.default_rng(i).standard_normal((20, 2)) for i in range(6)]\n"
            "baselines.minirocket(a, a, labels=np.arange(6) % 2, n_kernels=84)\nprint(numba.threading_layer())")
    env = {k: v for k, v in __import__("os").environ.items() if k != "NUMBA_THREADING_LAYER"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "workqueue"


# ----------------------------------------------------------------------------- targets in their own units

@pytest.mark.parametrize("method", ["minirocket", "regridded_minirocket"])
def test_minirocket_predicts_standardised_targets_in_their_own_units(method):
    """The same series built with and without standardize_targets=True: the same predictions, in the targets' units
    (issue 53: they came back standardised, an RMSE 10x too large on Covid3Month)."""
    pytest.importorskip("aeon")
    a, _ = _waves(30, 2)
    b, _ = _waves(10, 3)
    y = np.array([1000.0 + 50 * x[:, 0].std() for x in a])  # far from 0 and 1: standardised units cannot pass
    fn = getattr(baselines, method)
    raw = from_sequences(a, labels=y)
    scaled = from_sequences(a, labels=y, standardize_targets=True)
    assert abs(float(scaled.tensors["labels"].mean())) < 1e-4  # the dataset holds standardised targets
    test_raw, test_scaled = from_sequences(b, like=raw), from_sequences(b, like=scaled)
    want = fn(raw, test_raw, seed=0, n_kernels=84 * 4)
    got = fn(scaled, test_scaled, seed=0, n_kernels=84 * 4)
    assert 1000 < want.mean() < 1100
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-3 * y.std())
    # labels given explicitly are taken as given: the standardised ones give standardised predictions
    z = scaled.tensors["labels"].numpy().astype(np.float64)
    assert abs(fn(scaled, test_scaled, labels=z, seed=0, n_kernels=84 * 4).mean()) < 5


def test_nearest_neighbour_returns_standardised_targets_in_their_own_units():
    a, _ = _waves(12, 2)
    y = np.linspace(100.0, 200.0, 12)
    got = baselines.nn1_dtw(from_sequences(a, labels=y, standardize_targets=True), a[:4])
    np.testing.assert_allclose(got, y[:4], rtol=1e-5)  # each series is its own nearest neighbour


def test_minirocket_refuses_several_targets_per_series_clearly():
    pytest.importorskip("aeon")
    a, _ = _waves(6, 2)
    with pytest.raises(ValueError, match=r"one target per series; these targets have shape \[6, 2\]"):
        baselines.minirocket(a, a, labels=np.ones((6, 2)), n_kernels=84)


# ----------------------------------------------------------------------------- regridded MiniRocket

def test_regridding_puts_dropped_steps_back_on_their_step_by_their_times():
    """Kept steps at times 0, 2, 5 (of a series of step 1) and 1, 3: one grid 0..5 of step 1 (the smallest gap),
    values linearly interpolated by time (worked by hand), the ends held; several channels; one single-step series."""
    timed = baselines.timed_series_of(
        [np.array([[0.0, 1.0], [np.nan, np.nan], [4.0, 1.0], [np.nan, np.nan], [np.nan, np.nan], [10.0, -2.0]]),
         np.array([[7.0, 0.0], [9.0, 2.0]]), np.array([[3.0, 3.0]])],
        times=[np.arange(6), [1.0, 3.0], [4.0]])
    grid = baselines.regular_grid(timed)
    assert grid.tolist() == [0.0, 0.625, 1.25, 1.875, 2.5, 3.125, 3.75, 4.375, 5.0]  # at least 9 points (MiniRocket)
    grid = baselines.regular_grid(timed, length=11)
    assert grid.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0]
    out = baselines.regridded_collection(timed, grid)
    assert out.shape == (3, 2, 11)
    assert out[0, 0].tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]  # 0 at t=0, 4 at t=2, 10 at t=5
    assert out[0, 1].tolist() == [1, 1, 1, 1, 1, 0.5, 0, -0.5, -1, -1.5, -2]
    assert out[1, 0].tolist() == [7, 7, 7, 7.5, 8, 8.5, 9, 9, 9, 9, 9]  # held before t=1 and after t=3
    assert (out[2] == 3.0).all()  # one kept step: constant


def test_regridding_finds_the_step_of_series_with_steps_dropped():
    rng = np.random.default_rng(6)
    series = [rng.normal(size=(40, 3)) for _ in range(5)]
    for x in series:
        x[0] = x[-1] = 1.0  # the ends kept: the grid spans 0..39
    dropped = [x.copy() for x in series]
    for x in dropped:
        x[1 + rng.choice(38, 20, replace=False)] = np.nan
    times = [np.arange(40) * 0.5] * 5
    timed = baselines.timed_series_of(from_sequences(dropped, times=times))  # a dataset's positions are its times
    grid = baselines.regular_grid(timed)
    np.testing.assert_allclose(grid, np.arange(40) * 0.5)  # the series' own step, 0.5
    back = baselines.regridded_collection(timed, grid)
    same = baselines.regridded_collection(baselines.timed_series_of(dropped, times=times), grid)  # arrays and times
    np.testing.assert_allclose(back, same, rtol=1e-5, atol=1e-5)  # the dataset's float32 values, in the file's units
    kept = [np.flatnonzero(~np.isnan(x).all(1)) for x in dropped]
    for k in range(5):  # at the kept steps the regridded series is the series itself
        np.testing.assert_allclose(back[k][:, kept[k]], series[k][kept[k]].T, rtol=1e-5, atol=1e-5)
    with pytest.warns(UserWarning, match="4096 evenly spaced points"):  # said, not silent
        grid = baselines.regular_grid([(np.array([0.0, 1e-9, 1.0]), np.zeros((3, 1)))])
    assert len(grid) == baselines.REGRID_MAX_LENGTH


def test_regridded_minirocket_equals_minirocket_on_regular_equal_length_series():
    pytest.importorskip("aeon")
    (a, ya), (b, _) = _waves(12, 0, lengths=(30, 31)), _waves(8, 1, lengths=(30, 31))
    got = baselines.regridded_minirocket(a, b, labels=ya, seed=3, n_kernels=84 * 4)
    assert np.array_equal(got, baselines.minirocket(a, b, labels=ya, seed=3, n_kernels=84 * 4))


def test_regridded_minirocket_reads_times_that_the_order_of_steps_hides():
    """Two classes of a sine, 3 cycles per unit of time over [0, 1] or 4.5 over [0, 2/3], each series observed at 25-34
    random times of its own: in step order both show 3 cycles (MiniRocket on the kept steps: 0.35 here, chance), by
    their times they differ. Steps given out of time order are sorted; lengths differ; one series has 1 kept step."""
    pytest.importorskip("aeon")
    rng = np.random.default_rng(7)

    def make(n):
        xs, ts = [], []
        for i in range(n):
            f, span = ((3.0, 1.0), (4.5, 2 / 3))[i % 2]
            t = np.sort(rng.uniform(0, span, int(rng.integers(25, 35))))
            xs.append(np.stack([np.sin(2 * np.pi * f * t), np.cos(2 * np.pi * f * t)], 1))
            ts.append(t)
        return xs, ts, np.arange(n) % 2

    (a, ta, ya), (b, tb, yb) = make(30), make(20)
    assert (baselines.minirocket(a, b, labels=ya, seed=0, n_kernels=84 * 4) == yb).mean() <= 0.7  # the order hides it
    a[2], ta[2] = a[2][:1], ta[2][:1]  # a single kept step
    shuffle = rng.permutation(len(a[1]))
    a[1], ta[1] = a[1][shuffle], ta[1][shuffle]  # out of time order
    with pytest.warns(UserWarning, match="regridding"):  # random times: the smallest gap asks for a fine grid
        pred = baselines.regridded_minirocket(a, b, labels=ya, train_times=ta, test_times=tb, seed=0,
                                              n_kernels=84 * 4)
    assert (pred == yb).mean() >= 0.9


def test_regridded_minirocket_refuses_what_it_cannot_regrid():
    import pandas as pd

    from romae import from_long

    x, y = [np.zeros((5, 2)), np.ones((4, 2))], np.array([0, 1])
    fn = baselines.regridded_minirocket
    cases = [
        (dict(train_times=[np.arange(5)]), r"training series: 1 arrays of times for 2 series"),
        (dict(train_times=[np.arange(4), np.arange(4)]), r"training series 0: times of shape \[4\] for 5 steps"),
        (dict(train_times=[np.arange(5.0), np.array([0, np.nan, 2, 3])]),
         r"training series 1: the time of kept step 1 is nan, not finite"),
        (dict(train_times=[np.arange(5), np.array([0, 1, 1, 3])]), r"training series 1: two kept steps at time 1"),
        (dict(train_times=[np.arange(5), np.array(list("abcd"))]), r"training series 1: times must be real numbers"),
        (dict(train_times=[np.arange(5), np.arange(4) + 0j]), r"training series 1: times must be real numbers"),
        (dict(length=3), r"length must be a whole number of grid points >= 9 .* got 3"),
        (dict(length=True), r"length must be .* got True"),
        (dict(length=12.5), r"length must be .* got 12.5"),
        (dict(labels=np.array([0, 1, 0])), r"regridded_minirocket: 3 training labels for 2 training series"),
    ]
    for kwargs, message in cases:
        kwargs = dict(labels=y) | kwargs
        with pytest.raises((ValueError, TypeError), match=message):
            fn(x, x, **kwargs)
    with pytest.raises(ValueError, match="training series have 2 channels, test series 1"):
        fn(x, [z[:, :1] for z in x], labels=y)
    with pytest.raises(ValueError, match="test series 1: a step is partly missing"):
        fn(x, [x[0], np.array([[1.0, np.nan], [2.0, 3.0]])], labels=y)
    with pytest.raises(ValueError, match="training series 1 has no observed step"):
        fn([x[0], np.full((3, 2), np.nan)], x, labels=y)
    with pytest.raises(ValueError, match="training series 0 holds an infinite value"):
        fn([np.array([[np.inf, 0.0]] * 3), x[1]], x, labels=y)
    with pytest.raises(ValueError, match="no training series"):
        fn([], x, labels=np.array([]))
    data = from_sequences(x, labels=["a", "b"])
    with pytest.raises(ValueError, match="a dataset carries its own times"):
        fn(data, x, train_times=[np.arange(5), np.arange(4)])
    long = pd.DataFrame(dict(id=[0, 0, 1, 1], t=[0.0, 1.0, 0.0, 2.0], v=["p", "q", "p", "q"], x=[1.0, 2.0, 3.0, 4.0],
                             y=["a", "a", "b", "b"]))
    table = from_long(long, id="id", time="t", variable="v", value="x", label="y")  # positions (time, variable)
    with pytest.raises(ValueError, match=r"needs one time per token .* shape \[2, 2, 2\] .*from_long"):
        fn(table, table)
