"""Noisy Archimedean spirals for 2-D interpolation (App. D.7; `generators.md` section 2).

ContiFormer's prescription, as RoMAE used it: a time grid t = linspace(0, 6 pi, 150); per spiral
a = 0.02 z1 and b = 0.3 + 0.02 z2 (z ~ N(0, 1)); with probability 1/2

* counter-clockwise: r = a + b t, (x, y) = (r cos t + 5, r sin t);
* clockwise: z = 6 pi + 1 - t, r = a + 50 b / z, (x, y) = (r cos z - 5, r sin z), reversed in time;

then only the first half (75 points, t in [0, 9.36]) is kept and Gaussian noise (sigma = 0.1, App. D.7)
is added to each coordinate. Coordinates are raw (roughly -10 to 13), as in the authors' code
(ContiFormer min-max normalised them). Per spiral, `n_obs` = 30 of the 75 points are observed and
45 are hidden and interpolated.

Deviation from the authors' code (documented in notebook 15): the authors generated train and test
spirals from the same seeds, so their 100 test spirals shared a-values and directions with training
spirals. Here every set is drawn from its own PCG64 stream: `train_seed` for the 200 training spirals,
`test_seed` for the 100 test spirals, and `trial_seed(k)` for the noise and observed points of
evaluation trial k (the clean test curves stay fixed across trials).

Arrays returned (n spirals): t [75]; clean, values [n, 75, 2] float32; observed [n, 75] bool (True =
observed, exactly n_obs per row); clockwise [n] bool; a, b [n].

ContiFormer's own protocol (`ContiFormerConfig`, `contiformer_spirals`, `contiformer_scores`; generators.md 2.2),
for a row that compares like for like with ContiFormer's published Spiral number: the same geometry over all 150
points, noise sigma 0.05 on the raw coordinates, then each coordinate min-max normalised to [0, 1] with the min and
max of ALL clean trajectories (train and test, 300 x 150 points), applied to clean and noisy alike; 50 of the FIRST
75 points observed (test: one set for every test spiral; training: a fresh set per batch), all 150 clean points
predicted and scored (interpolation in the first half, extrapolation in the second).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SpiralConfig:
    """How the spirals are generated. Defaults: App. D.7 and ContiFormer's `spiral.py`."""

    n_train: int = 200  # App. D.7: 300 spirals, 200 train / 100 test
    n_test: int = 100
    n_grid: int = 150  # full spiral: 150 points on [0, 6 pi] (ContiFormer)
    n_points: int = 75  # first half only (App. D.7: "discretized into 75 evenly spaced time steps")
    n_obs: int = 30  # observed points; the other 45 are masked (App. D.7, Figure 7)
    spread: float = 0.02  # a ~ N(0, 0.02), b ~ N(0.3, 0.02), as standard deviations (App. D.7)
    b_mean: float = 0.3
    noise_std: float = 0.1  # beta = 0.1 (App. D.7)
    train_seed: int = 0
    test_seed: int = 1  # disjoint from training (the authors' test set reused the training seeds)

    def __post_init__(self):
        if not 0 < self.n_points <= self.n_grid:
            raise ValueError(f"n_points must lie in (0, n_grid={self.n_grid}], got {self.n_points}")
        if not 0 < self.n_obs < self.n_points:
            raise ValueError(f"n_obs must lie in (0, n_points={self.n_points}), got {self.n_obs}")
        if self.train_seed == self.test_seed:
            raise ValueError("train_seed and test_seed must differ (disjoint train and test spirals)")

    def trial_seed(self, k: int) -> int:
        """Seed of evaluation trial k (noise and observed points), distinct from the set seeds."""
        return 1000 + self.test_seed * 100 + k


def time_grid(cfg: SpiralConfig = SpiralConfig()) -> np.ndarray:
    """The positions: the first n_points of linspace(0, 6 pi, n_grid) -> [n_points] float64."""
    return np.linspace(0.0, 6 * np.pi, cfg.n_grid)[: cfg.n_points]


def clean_spirals(n: int, seed: int, cfg: SpiralConfig = SpiralConfig()) -> dict[str, np.ndarray]:
    """n clean spirals (first n_points of each): clean [n, n_points, 2], clockwise [n], a [n], b [n]."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    a = cfg.spread * rng.standard_normal(n)
    b = cfg.b_mean + cfg.spread * rng.standard_normal(n)
    clockwise = rng.random(n) < 0.5
    t = np.linspace(0.0, 6 * np.pi, cfg.n_grid)
    ccw = np.stack([(a[:, None] + b[:, None] * t) * np.cos(t) + 5,
                    (a[:, None] + b[:, None] * t) * np.sin(t)], axis=-1)
    z = 6 * np.pi + 1 - t
    r = a[:, None] + 50 * b[:, None] / z
    cw = np.stack([r * np.cos(z) - 5, r * np.sin(z)], axis=-1)[:, ::-1]  # reversed in time
    clean = np.where(clockwise[:, None, None], cw, ccw)[:, : cfg.n_points]
    return dict(t=t[: cfg.n_points], clean=clean.astype(np.float32), clockwise=clockwise, a=a, b=b)


def observe(clean: np.ndarray, seed: int, cfg: SpiralConfig = SpiralConfig()) -> dict[str, np.ndarray]:
    """Noisy values and observed points for clean curves [n, P, 2]: values [n, P, 2], observed [n, P]."""
    rng = np.random.default_rng(seed)
    n, P, _ = clean.shape
    values = clean + cfg.noise_std * rng.standard_normal(clean.shape)
    rank = rng.random((n, P)).argsort(axis=1).argsort(axis=1)
    return dict(values=values.astype(np.float32), observed=rank < cfg.n_obs)


def spirals(split: str, cfg: SpiralConfig = SpiralConfig(), trial: int = 0) -> dict[str, np.ndarray]:
    """The 'train' or 'test' set. Test trial k re-draws the noise and observed points of the fixed
    test curves (App. D.7: "10 trials with randomly seeded batches of 100 test spirals")."""
    if split == "train":
        out = clean_spirals(cfg.n_train, cfg.train_seed, cfg)
        return {**out, **observe(out["clean"], cfg.train_seed + 10_000, cfg)}
    if split == "test":
        out = clean_spirals(cfg.n_test, cfg.test_seed, cfg)
        return {**out, **observe(out["clean"], cfg.trial_seed(trial), cfg)}
    raise ValueError(f"split must be 'train' or 'test', got {split!r}")


def rmse(pred: np.ndarray, target: np.ndarray, hidden: np.ndarray) -> float:
    """ContiFormer's RMSE at the hidden points: sqrt(mean over points of the sum over (x, y) of the
    squared error). pred, target [n, P, 2]; hidden [n, P] bool."""
    err = ((pred - target) ** 2).sum(-1)
    return float(np.sqrt(err[hidden].mean()))


def _design(t: np.ndarray, clockwise: bool, cfg: SpiralConfig) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of a spiral at the grid's first points are linear in (a, b): coefficients [P, 2, 2] and offset
    [P, 2] with (x, y) = coef @ (a, b) + offset, for one direction (`clean_spirals`' formulas)."""
    full = np.linspace(0.0, 6 * np.pi, cfg.n_grid)
    if not clockwise:
        c, s_ = np.cos(full), np.sin(full)
        coef = np.stack([np.stack([c, full * c], -1), np.stack([s_, full * s_], -1)], 1)  # [G, 2, 2]
        offset = np.stack([np.full_like(full, 5.0), np.zeros_like(full)], -1)
    else:
        z = 6 * np.pi + 1 - full
        c, s_ = np.cos(z), np.sin(z)
        coef = np.stack([np.stack([c, 50 * c / z], -1), np.stack([s_, 50 * s_ / z], -1)], 1)
        offset = np.stack([np.full_like(full, -5.0), np.zeros_like(full)], -1)
        coef, offset = coef[::-1], offset[::-1]  # reversed in time
    return coef[: cfg.n_points], offset[: cfg.n_points]


def oracle(values: np.ndarray, observed: np.ndarray, cfg: SpiralConfig = SpiralConfig()) -> np.ndarray:
    """A reference that knows how the spirals are made: per spiral, the least-squares (a, b) of each direction
    from its observed noisy points (the curve is linear in a and b), the direction that fits better, and that
    curve at every point -> [n, P, 2]. Not a bound on the interpolation error: it ignores the generator's prior
    on a and b, which a trained model can learn (the paper's 0.0183 lies below it per coordinate)."""
    out = np.empty(values.shape, dtype=np.float64)
    designs = [_design(None, cw, cfg) for cw in (False, True)]
    for i in range(len(values)):
        obs = observed[i]
        best = None
        for coef, offset in designs:
            A = coef[obs].reshape(-1, 2)  # [2 * n_obs, 2]
            y = (values[i][obs] - offset[obs]).reshape(-1)
            ab, *_ = np.linalg.lstsq(A, y, rcond=None)
            resid = float(((A @ ab - y) ** 2).sum())
            if best is None or resid < best[0]:
                best = (resid, coef @ ab + offset)
        out[i] = best[1]
    return out


def linear_interpolation(t: np.ndarray, values: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Each coordinate linearly interpolated between a spiral's observed points (held at the ends) -> [n, P, 2]."""
    out = np.empty(values.shape, dtype=np.float64)
    for i in range(len(values)):
        obs = observed[i]
        for j in range(values.shape[-1]):
            out[i, :, j] = np.interp(t, t[obs], values[i, obs, j])
    return out



# ----------------------------------------------------------------------------- ContiFormer's own protocol

@dataclass(frozen=True)
class ContiFormerConfig:
    """ContiFormer's Spiral protocol: microsoft/SeqML `ContiFormer/spiral.py` run as its README says
    (`--noise_a 0.02 --cc 2`, `--noise_std` left at its default); generators.md section 2.2.

    Deviations (ours, kept from `SpiralConfig`): every set is drawn from its own PCG64 stream (ContiFormer draws all
    300 spirals from one NumPy legacy stream seeded 27, 42 or 1024 and splits them 200 / 100); with the default seeds
    the curves are those of `spirals`' training and test sets, continued to 150 points. The test noise and the test
    observed set are drawn per evaluation trial (`trial_seed`), the clean test curves stay fixed (ContiFormer: one
    draw of each)."""

    n_train: int = 200  # spiral.py: ntrain = 200, the first 200 of nspiral = 300
    n_test: int = 100  # ntest = 100, the last 100
    n_grid: int = 150  # ntotal = 150 points on linspace(0, 6 pi); every one is predicted and scored
    n_window: int = 75  # observed points are drawn among the first int(ntotal * 0.5) = 75
    n_obs: int = 50  # nsample = 50 observed; the other 100 (25 of the first half, all 75 of the second) hidden
    spread: float = 0.02  # a ~ 0.02 z1, b ~ 0.3 + 0.02 z2 (README: --noise_a 0.02)
    b_mean: float = 0.3  # spiral.py: b = .3
    noise_std: float = 0.05  # spiral.py's default --noise_std .05, added to the raw coordinates
    train_target: str = "clean"  # what the hidden tokens are trained towards: spiral.py's loss is against the clean
    # trajectories (train_target = orig_trajs[:ntrain]); "noisy" would be RoMAE's own recipe
    train_seed: int = 0
    test_seed: int = 1  # disjoint from training

    def __post_init__(self):
        if not 0 < self.n_window <= self.n_grid:
            raise ValueError(f"n_window must lie in (0, n_grid={self.n_grid}], got {self.n_window}")
        if not 0 < self.n_obs <= self.n_window:
            raise ValueError(f"n_obs must lie in (0, n_window={self.n_window}], got {self.n_obs}")
        if self.train_target not in ("clean", "noisy"):
            raise ValueError(f"train_target must be 'clean' or 'noisy', got {self.train_target!r}")
        if self.train_seed == self.test_seed:
            raise ValueError("train_seed and test_seed must differ (disjoint train and test spirals)")

    @property
    def n_points(self) -> int:
        """Points kept per spiral (`clean_spirals`): all of the grid."""
        return self.n_grid

    def trial_seed(self, k: int) -> int:
        """Seed of evaluation trial k (test noise, then the observed set), distinct from `SpiralConfig`'s."""
        return 2000 + self.test_seed * 100 + k


def contiformer_range(cfg: ContiFormerConfig = ContiFormerConfig()) -> tuple[np.ndarray, np.ndarray]:
    """Per coordinate min and max [2] over ALL clean trajectories, train and test (spiral.py's normalisation)."""
    both = np.concatenate([clean_spirals(cfg.n_train, cfg.train_seed, cfg)["clean"],
                           clean_spirals(cfg.n_test, cfg.test_seed, cfg)["clean"]]).astype(np.float64)
    return both.min(axis=(0, 1)), both.max(axis=(0, 1))


def window_observed(rng: np.random.Generator, cfg: ContiFormerConfig = ContiFormerConfig()) -> np.ndarray:
    """One observed set: n_obs of the first n_window grid points, without replacement -> [n_grid] bool."""
    row = np.zeros(cfg.n_grid, dtype=bool)
    row[rng.choice(cfg.n_window, cfg.n_obs, replace=False)] = True
    return row


def contiformer_spirals(split: str, cfg: ContiFormerConfig = ContiFormerConfig(), trial: int = 0) -> dict:
    """The 'train' or 'test' set in ContiFormer's protocol, normalised: t [150]; clean, values [n, 150, 2] float32
    (noise added to the raw coordinates, then both min-max normalised by `contiformer_range`); clockwise, a, b [n];
    for 'test' also observed [n, 150] bool, one set shared by every spiral of the trial. 'train' has no observed
    set: training draws a fresh one per batch. Train noise is drawn once (spiral.py too); test trial k re-draws the
    noise and the observed set of the fixed test curves (`trial_seed`)."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    n, seed = (cfg.n_train, cfg.train_seed) if split == "train" else (cfg.n_test, cfg.test_seed)
    out = clean_spirals(n, seed, cfg)
    rng = np.random.default_rng(cfg.train_seed + 20_000 if split == "train" else cfg.trial_seed(trial))
    raw = out["clean"].astype(np.float64)
    noisy = raw + cfg.noise_std * rng.standard_normal(raw.shape)
    lo, hi = contiformer_range(cfg)
    out.update(clean=((raw - lo) / (hi - lo)).astype(np.float32), values=((noisy - lo) / (hi - lo)).astype(np.float32))
    if split == "test":
        out["observed"] = np.broadcast_to(window_observed(rng, cfg), (n, cfg.n_grid)).copy()
    return out


def mae(pred: np.ndarray, target: np.ndarray, where: np.ndarray) -> float:
    """ContiFormer's MAE at the points `where` [n, P]: mean over points of the sum over (x, y) of |error|."""
    return float(np.abs(pred - target).sum(-1)[where].mean())


def contiformer_scores(pred: np.ndarray, target: np.ndarray, observed: np.ndarray, n_window: int) -> dict[str, float]:
    """spiral.py's test metrics over every point (rmse = sqrt(mean over spirals and points of the summed squared
    error over (x, y)), mae likewise with |error|), the RMSE at the unobserved points alone, and both metrics split
    as ContiFormer's figures split a spiral: `rmse_interpolation` / `mae_interpolation` over every point of the
    first `n_window` (the window the observed points come from, observed ones included) and `rmse_extrapolation` /
    `mae_extrapolation` over the rest. pred, target [n, P, 2]; observed [n, P] bool."""
    n, P = observed.shape
    if not 0 < n_window < P:
        raise ValueError(f"n_window must lie in (0, {P}) to split {P} points into interpolation and "
                         f"extrapolation, got {n_window}")
    every = np.ones(observed.shape, dtype=bool)
    first = np.zeros(observed.shape, dtype=bool)
    first[:, :n_window] = True
    return dict(rmse=rmse(pred, target, every), mae=mae(pred, target, every),
                rmse_unobserved=rmse(pred, target, ~observed),
                rmse_interpolation=rmse(pred, target, first), mae_interpolation=mae(pred, target, first),
                rmse_extrapolation=rmse(pred, target, ~first), mae_extrapolation=mae(pred, target, ~first))
