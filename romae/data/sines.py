"""Noisy sums of sines for the frequency-retention experiment (App. B.4; `generators.md` section 5).

Each series lives on t = linspace(0, 1, T) (T = 100) and is

    x(t) = sum_k A_k sin(2 pi f_k t + phi_k) + eps,   eps ~ N(0, noise_std^2), noise_std = 0.1,

with one or two components (probability 1/2 each), integer frequencies f_k uniform in {0, ..., 24}
(distinct within a series), A_k ~ U(0.5, 1) and phi_k ~ U(0, 2 pi) (amplitude and phase: the authors'
code; the paper is silent). n_obs = 50 of the T points are observed, chosen uniformly without
replacement; the other 50 are to be interpolated.

Everything is drawn in one vectorised pass from a NumPy PCG64 generator seeded with `seed`, in a fixed
order (number of modes, frequencies, amplitudes, phases, noise, observed points), so a seed fixes the
whole set. The authors seeded NumPy's legacy generator per series instead; the distributions are the
same, the numbers are not.

Arrays returned (n series): t [T]; values, clean [n, T] float32; observed [n, T] bool (True = observed,
exactly n_obs per row); freqs [n, 2] int (-1 = no second component); amps, phases [n, 2] (0 where absent).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SineConfig:
    """How the series are generated. Defaults: App. B.4 (paper) and the authors' code where it is silent."""

    T: int = 100  # points per series on t in [0, 1] (App. B.4)
    n_obs: int = 50  # observed points; T - n_obs are interpolated (App. B.4: 50 / 50)
    f_max: int = 24  # integer frequencies in {0, ..., f_max} Hz (App. B.4)
    p_two_modes: float = 0.5  # one or two components "with equal probability" (App. B.4)
    amp_range: tuple[float, float] = (0.5, 1.0)  # A_k ~ U(0.5, 1) (authors' code)
    noise_std: float = 0.1  # N(0, 0.01) is a variance, so sigma = 0.1 (App. B.4, eq. for epsilon)

    def __post_init__(self):
        if not 0 < self.n_obs < self.T:
            raise ValueError(f"n_obs must lie in (0, T={self.T}), got {self.n_obs}")
        if self.f_max < 1:
            raise ValueError(f"f_max must be >= 1 (two distinct frequencies), got {self.f_max}")


def time_grid(cfg: SineConfig = SineConfig()) -> np.ndarray:
    """The sampling times t = linspace(0, 1, T): [T] float64 (dt = 1 / (T - 1))."""
    return np.linspace(0.0, 1.0, cfg.T)


def sine_series(n: int, seed: int, cfg: SineConfig = SineConfig(), freqs=None) -> dict[str, np.ndarray]:
    """Generate n series (see the module docstring for the arrays returned).

    freqs: None draws the number of modes and the frequencies as in App. B.4. Otherwise an int array
    [n] (one mode) or [n, 2] (two modes; -1 in the second column = one mode) fixes them, as the
    evaluation sets do; amplitudes, phases, noise and observed points are still drawn from `seed`.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    if freqs is None:
        two = rng.random(n) < cfg.p_two_modes
        f1 = rng.integers(0, cfg.f_max + 1, n)
        # a distinct second frequency: shift f1 by 1..f_max modulo f_max + 1 (uniform over the others)
        f2 = (f1 + rng.integers(1, cfg.f_max + 1, n)) % (cfg.f_max + 1)
        freqs = np.stack([f1, np.where(two, f2, -1)], axis=1)
    else:
        freqs = np.asarray(freqs, dtype=np.int64)
        if freqs.ndim == 1:
            freqs = np.stack([freqs, np.full_like(freqs, -1)], axis=1)
        if freqs.shape != (n, 2) or (freqs[:, 0] < 0).any():
            raise ValueError(f"freqs must be [n] or [n, 2] with a first frequency >= 0, got {freqs.shape}")
    present = freqs >= 0  # [n, 2]
    amps = rng.uniform(*cfg.amp_range, size=(n, 2)) * present
    phases = rng.uniform(0.0, 2 * np.pi, size=(n, 2)) * present
    t = time_grid(cfg)
    # [n, 2, T] components, summed over the (at most two) modes
    clean = (amps[..., None] * np.sin(2 * np.pi * freqs[..., None] * t + phases[..., None])).sum(1)
    values = clean + cfg.noise_std * rng.standard_normal((n, cfg.T))
    # n_obs observed points per series, uniform without replacement: the n_obs smallest of T uniforms
    rank = rng.random((n, cfg.T)).argsort(axis=1).argsort(axis=1)
    observed = rank < cfg.n_obs
    return dict(t=t, values=values.astype(np.float32), clean=clean.astype(np.float32), observed=observed,
                freqs=freqs, amps=amps, phases=phases)


def one_mode_freqs(test_freqs, n_per: int) -> np.ndarray:
    """Evaluation frequencies for single-mode series: each of test_freqs repeated n_per times -> [n]."""
    return np.repeat(np.asarray(test_freqs, dtype=np.int64), n_per)


def two_mode_freqs(test_freqs, n_per: int) -> np.ndarray:
    """Every pair f1 < f2 of test_freqs, each repeated n_per times -> [n_pairs * n_per, 2]."""
    f = np.asarray(test_freqs, dtype=np.int64)
    i, j = np.triu_indices(len(f), k=1)
    return np.repeat(np.stack([f[i], f[j]], axis=1), n_per, axis=0)


def snr(series: dict[str, np.ndarray], cfg: SineConfig = SineConfig()) -> float:
    """Mean signal-to-noise power ratio over the series, mean(clean^2) / noise_std^2 (App. B.4: 43.1)."""
    return float((series["clean"].astype(np.float64) ** 2).mean() / cfg.noise_std ** 2)
