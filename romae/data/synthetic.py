"""HeTVAE's synthetic interpolation data (App. D.8; `generators.md` section 3).

Each series lives on the authors' grid t_i = 0.02 i, i = 1..50 (50 points in (0, 1]; HeTVAE used 51
points on [0, 1]). Ten latent values z_k ~ N(0, 1) sit at r_k = 0.1 k (k = 1..10) and an RBF smoother
with bandwidth alpha = 120 spreads them over the grid:

    clean(t) = sum_k w_k(t) z_k,   w_k(t) = exp(-alpha (t - r_k)^2) / sum_j exp(-alpha (t - r_j)^2),

and N(0, 0.01) noise (sigma = 0.1) is added. A series observes n_obs of its points (uniform without
replacement); the others are hidden and interpolated, scored by the MSE against the noisy values.

Deviations from the authors' code (documented in notebook 15): every split has its own seed and
n_obs is drawn per series (uniform in {3, ..., 10}) for training and validation, where the authors
fixed one count per data-loader worker and drew validation from the training stream. The 2,000 curves
come from one PCG64 stream (`seed`) and are split 80 / 10 / 10 in order (they are i.i.d., so an
in-order split is a random split); the observed points of each split come from their own stream.

Arrays: t [50]; clean, values [n, 50] float32; observed [n, 50] bool (True = observed); n_obs [n].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class SyntheticConfig:
    """How the series are generated. Defaults: App. D.8 and the authors' `Interpolation_synthetic`."""

    n: int = 2_000  # series (App. D.8)
    n_points: int = 50  # grid t_i = i / n_points, i = 1..n_points (authors; App. D.8: 50 points)
    n_ref: int = 10  # latent values at r_k = k / n_ref, k = 1..n_ref (App. D.8)
    alpha: float = 120.0  # RBF bandwidth (App. D.8)
    noise_std: float = 0.1  # N(0, 0.01) is a variance (App. D.8)
    obs_min: int = 3  # observed points per series, uniform in {obs_min, ..., obs_max} (App. D.8)
    obs_max: int = 10
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)  # train / valid / test (App. D.8)
    seed: int = 0  # the curves
    obs_seed: int = 100  # observed points: split s uses obs_seed + its index, evaluation protocols more

    def __post_init__(self):
        if not 1 <= self.obs_min <= self.obs_max < self.n_points:
            raise ValueError(f"need 1 <= obs_min <= obs_max < n_points, got {self.obs_min}, {self.obs_max}, "
                             f"{self.n_points}")
        if abs(sum(self.fractions) - 1) > 1e-9 or min(self.fractions) <= 0:
            raise ValueError(f"fractions must be positive and sum to 1, got {self.fractions}")

    def sizes(self) -> dict[str, int]:
        n_train, n_valid = int(round(self.n * self.fractions[0])), int(round(self.n * self.fractions[1]))
        return dict(train=n_train, valid=n_valid, test=self.n - n_train - n_valid)


def time_grid(cfg: SyntheticConfig = SyntheticConfig()) -> np.ndarray:
    """t_i = i / n_points for i = 1..n_points -> [n_points] float64 (the authors' (0, 1] grid)."""
    return np.arange(1, cfg.n_points + 1) / cfg.n_points


def curves(cfg: SyntheticConfig = SyntheticConfig()) -> dict[str, np.ndarray]:
    """All n series: t [P], clean [n, P], values [n, P] (noisy), z [n, n_ref]."""
    rng = np.random.default_rng(cfg.seed)
    t, r = time_grid(cfg), np.arange(1, cfg.n_ref + 1) / cfg.n_ref
    w = np.exp(-cfg.alpha * (t[:, None] - r[None, :]) ** 2)
    w /= w.sum(1, keepdims=True)  # [P, n_ref], rows sum to 1
    z = rng.standard_normal((cfg.n, cfg.n_ref))
    clean = z @ w.T
    values = clean + cfg.noise_std * rng.standard_normal(clean.shape)
    return dict(t=t, clean=clean.astype(np.float32), values=values.astype(np.float32), z=z)


def observe(n: int, n_points: int, n_obs, seed: int) -> np.ndarray:
    """observed [n, n_points] bool with n_obs[i] observed points in row i (uniform without replacement).
    n_obs: an int (every row) or an int array [n]."""
    n_obs = np.broadcast_to(np.asarray(n_obs, dtype=np.int64), (n,))
    if (n_obs < 1).any() or (n_obs >= n_points).any():
        raise ValueError(f"n_obs must lie in [1, {n_points}), got {sorted(set(n_obs.tolist()))}")
    rng = np.random.default_rng(seed)
    rank = rng.random((n, n_points)).argsort(axis=1).argsort(axis=1)
    return rank < n_obs[:, None]


def split(name: str, cfg: SyntheticConfig = SyntheticConfig(), n_obs=None, obs_seed: int | None = None):
    """One split with its observed points. n_obs None: per series uniform in {obs_min..obs_max};
    an int: exactly that many (Figure 8's 3, 10, 20). obs_seed defaults to cfg.obs_seed + split index."""
    if name not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
    sizes, all_ = cfg.sizes(), curves(cfg)
    start = sum(sizes[s] for s in SPLITS[: SPLITS.index(name)])
    sl = slice(start, start + sizes[name])
    n = sizes[name]
    seed = cfg.obs_seed + SPLITS.index(name) if obs_seed is None else obs_seed
    if n_obs is None:
        n_obs = np.random.default_rng([seed, 1]).integers(cfg.obs_min, cfg.obs_max + 1, n)
    observed = observe(n, cfg.n_points, n_obs, seed)
    return dict(t=all_["t"], clean=all_["clean"][sl], values=all_["values"][sl], observed=observed,
                n_obs=observed.sum(1))
