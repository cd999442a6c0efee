"""romae.baselines: the vectorised banded DTW equals the textbook double loop; 1-NN DTW classifies an easy set."""

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
