"""Pendulum image sequences (S5 / CRU regression benchmark; paper App. D.4; `generators.md` section 1).

Our own implementation from the description in `generators.md` §1 (the reference generator is AGPL-3.0
and is not used). Per sequence:

1. Physics (§1.1): theta_0 ~ U(0, 2 pi), omega_0 = 0; each of the T - 1 = 99 observed steps (dt = 0.01) is
   100 semi-implicit Euler steps of sim_dt = 1e-4, omega <- omega + sim_dt (c sin theta - 0.1 omega),
   theta <- theta + sim_dt omega, c = g l m / I = 29.43 (I = m l^2 / 3); then omega += N(0, 0.1^2) and
   theta <- theta mod 2 pi. Finally theta -= pi, so theta = 0 hangs straight down and theta in [-pi, pi).
2. Targets (§1.2): (sin theta, cos theta) of the noise-free angle. The image shows the noisy angle
   theta + N(0, (1e-5)^2): a line of width 8 and value 1 from the centre (64, 64) of a 128 x 128 canvas
   to (64 + 55 sin theta, 64 + 55 cos theta) (x right, y down), Lanczos-resized to 24 x 24, clipped to
   [0, 1], times 255, truncated to uint8. Pillow's `ImageDraw.line` fills an 8-pixel-wide polygon around
   the segment (no round caps) after truncating the end point to whole pixels and rounding the corners;
   we light the pixels whose centre (integer coordinates, as in Pillow's drawing) lies in the exact
   rectangle (a better match than "distance to the segment <= 4", which adds round caps). After the
   resize this is within ~0.9 grey levels of Pillow on average; single rod-edge pixels can differ by
   tens of levels (tested). The resize is Pillow's separable Lanczos exactly (`lanczos_matrix`).
3. Correlated image noise (§1.3): a clipped random-walk factor f per sequence and frame, stretched by
   per-sequence thresholds, f = 1 on the first 5 frames; frame <- uint8(f img + (1 - f) u), u ~ U(0, 255).
4. Splits (§1.4): NumPy legacy RandomState(42) draws train then, continuing, test; RandomState(43) draws
   validation; within a split we follow §1.4's call order (theta_0, 99 transition noises, observation
   noise, then the image noise), so the stream is call-order faithful.
5. Irregular subsampling (§1.5): 50 of the 100 frames per sequence, `default_rng(seed).choice(100, 50,
   replace=False)` sorted, seed = subsample_seed + i (+ 1000 validation, + 2000 train: the split sizes).
   The kept frame numbers are the time stamps. The S5 loader then divides pixels by 255 and lays frames
   out as (N, 50, 1, 24, 24); we return uint8 [N, 50, 24, 24] and leave scaling to the consumer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..storage import memo

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class PendulumConfig:
    """How the data set is generated. Defaults: `generators.md` §1 (the S5 / CRU pendulum procedure)."""

    n_train: int = 2000  # sequences per split (§1.4)
    n_valid: int = 1000
    n_test: int = 1000
    T: int = 100  # observed steps per episode (§1.1)
    img_size: int = 24  # stored image side (§1.2)
    canvas: int = 128  # drawing canvas side (§1.2)
    line_width: int = 8  # §1.2
    line_length: float = 55.0  # pixels on the canvas (§1.2)
    friction: float = 0.1  # §1.1
    dt: float = 0.01  # time per observed step (§1.1)
    sim_dt: float = 1e-4  # inner semi-implicit Euler step: dt / sim_dt = 100 inner steps (§1.1)
    transition_noise_std: float = 0.1  # N(0, 0.1^2) on omega after each observed step (§1.1)
    obs_noise_std: float = 1e-5  # on (theta, omega); the image shows the noisy angle (§1.2)
    r: float = 0.2  # random-walk step of the image-noise factor (§1.3)
    t_ll: float = 0.0  # lower threshold t1 ~ U(t_ll, t_lu) (§1.3)
    t_lu: float = 0.25
    t_ul: float = 0.75  # upper threshold t2 ~ U(t_ul, t_uu) (§1.3)
    t_uu: float = 1.0
    first_clean: int = 5  # frames 0..4 carry no image noise (§1.3)
    sample_rate: float = 0.5  # fraction of frames kept by the loader (§1.5)
    train_seed: int = 42  # NumPy legacy seed for train, continued for test (§1.4)
    valid_seed: int = 43  # NumPy legacy seed for validation (§1.4)
    subsample_seed: int = 0  # base of the per-sequence subsampling seeds (§1.5)

    def __post_init__(self):
        steps = self.dt / self.sim_dt if self.sim_dt > 0 else 0.0
        for ok, msg in [
            (min(self.n_train, self.n_valid, self.n_test) >= 1, "n_train, n_valid and n_test must be >= 1"),
            (self.T >= 2, "T must be >= 2 observed steps"),
            (1 <= self.img_size <= self.canvas, "need 1 <= img_size <= canvas"),
            (self.line_width >= 1 and self.line_length > 0, "need line_width >= 1 and line_length > 0"),
            (steps >= 1 and math.isclose(steps, round(steps)), "dt must be a positive whole multiple of sim_dt"),
            (min(self.friction, self.transition_noise_std, self.obs_noise_std, self.r) >= 0,
             "friction, transition_noise_std, obs_noise_std and r must be >= 0"),
            (0 <= self.t_ll <= self.t_lu < self.t_ul <= self.t_uu <= 1,
             "image-noise thresholds need 0 <= t_ll <= t_lu < t_ul <= t_uu <= 1"),
            (0 <= self.first_clean <= self.T, "first_clean must lie in [0, T]"),
            (1 <= int(self.sample_rate * self.T) <= self.T, "sample_rate must keep between 1 and T frames"),
        ]:
            if not ok:
                raise ValueError(f"PendulumConfig: {msg}; got {self}")

    @property
    def c(self) -> float:
        """g l m / I with m = l = 1, g = 9.81, I = m l^2 / 3 (§1.1): 29.43."""
        g, m, l = 9.81, 1.0, 1.0
        return g * l * m / (m * l ** 2 / 3)


def simulate(n: int, rng: np.random.RandomState, cfg: PendulumConfig = PendulumConfig()) -> dict:
    """n episodes, vectorised over sequences (§1.1, call order §1.4): theta (shifted to [-pi, pi)),
    omega and noisy_theta (the angle the image shows), each [n, T] float64."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    theta = np.empty((n, cfg.T))
    omega = np.zeros((n, cfg.T))
    th, om = rng.uniform(0.0, 2 * np.pi, (n, 1))[:, 0], np.zeros(n)
    theta[:, 0] = th
    for k in range(1, cfg.T):
        for _ in range(round(cfg.dt / cfg.sim_dt)):
            om = om + cfg.sim_dt * (cfg.c * np.sin(th) - cfg.friction * om)
            th = th + cfg.sim_dt * om  # semi-implicit: uses the new omega
        om = om + rng.normal(0.0, cfg.transition_noise_std, n)
        th = np.mod(th, 2 * np.pi)
        theta[:, k], omega[:, k] = th, om
    theta -= np.pi
    obs = rng.normal(0.0, cfg.obs_noise_std, (n, cfg.T, 2))  # on (theta, omega); only theta is drawn
    return dict(theta=theta, omega=omega, noisy_theta=theta + obs[..., 0])


def lanczos_matrix(n_in: int, n_out: int, a: int = 3) -> np.ndarray:
    """[n_out, n_in] row-normalised Lanczos weights as Pillow's resize builds them (support a * scale)."""
    scale = n_in / n_out
    fs = max(scale, 1.0)
    W = np.zeros((n_out, n_in))
    for i in range(n_out):
        centre = (i + 0.5) * scale
        lo, hi = max(int(centre - a * fs + 0.5), 0), min(int(centre + a * fs + 0.5), n_in)
        x = (np.arange(lo, hi) - centre + 0.5) / fs
        W[i, lo:hi] = np.where(np.abs(x) < a, np.sinc(x) * np.sinc(x / a), 0.0)
    return W / W.sum(1, keepdims=True)


def _interval(a, p, q):
    """The x with p <= a x <= q (arrays broadcast) as (lo, hi); lo > hi when empty, +-inf when a = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = np.where(a > 0, p / a, q / a), np.where(a > 0, q / a, p / a)
    inside = (p <= 0) & (q >= 0)
    return (np.where(a == 0, np.where(inside, -np.inf, np.inf), lo),
            np.where(a == 0, np.where(inside, np.inf, -np.inf), hi))


def render(angles, cfg: PendulumConfig = PendulumConfig(), chunk: int = 2048) -> np.ndarray:
    """Images of the pendulum at `angles` (any shape): uint8 [..., img_size, img_size] (§1.2).

    Pixel (row i, column j) of the canvas has centre (x, y) = (j - 64, i - 64) about the pivot and is lit
    when |x cos - y sin| <= width / 2 and 0 <= x sin + y cos <= length. The rectangle meets each row in
    a column interval [lo, hi), so the horizontal Lanczos pass of a row is Wc[hi] - Wc[lo] with Wc the
    cumulative weights: exactly W @ line @ W.T without building the 128 x 128 canvas.
    """
    angles = np.asarray(angles, dtype=np.float64)
    flat, n, S, half = angles.reshape(-1), angles.size, cfg.img_size, cfg.canvas / 2
    W = lanczos_matrix(cfg.canvas, S)
    Wc = np.concatenate([np.zeros((1, S)), np.cumsum(W.T, 0)])  # [canvas + 1, S]: Wc[k] = sum_{j<k} W[:, j]
    y = np.arange(cfg.canvas) - half  # row centres
    out = np.empty((n, S, S), np.uint8)
    for s in range(0, n, chunk):
        sin, cos = np.sin(flat[s:s + chunk])[:, None], np.cos(flat[s:s + chunk])[:, None]
        lo1, hi1 = _interval(cos, y * sin - cfg.line_width / 2, y * sin + cfg.line_width / 2)  # width
        lo2, hi2 = _interval(sin, -y * cos, cfg.line_length - y * cos)  # from the pivot to the tip
        lo = np.clip(np.ceil(np.maximum(lo1, lo2)) + half, 0, cfg.canvas)
        hi = np.clip(np.floor(np.minimum(hi1, hi2)) + half + 1, lo, cfg.canvas)  # [m, canvas] columns
        small = W @ (Wc[hi.astype(int)] - Wc[lo.astype(int)])  # [m, S, S]
        out[s:s + chunk] = (np.clip(small, 0, 1) * 255).astype(np.uint8)  # truncation toward zero
    return out.reshape(angles.shape + (S, S))


def add_image_noise(images: np.ndarray, rng: np.random.RandomState, cfg: PendulumConfig = PendulumConfig(),
                    chunk: int = 128) -> np.ndarray:
    """Correlated image noise (§1.3) on uint8 [n, T, S, S], drawn in §1.4's order; returns a new array."""
    n, T = images.shape[:2]
    f = np.empty((n, T))
    f[:, 0] = rng.uniform(0.0, 1.0, n)
    for i in range(T - 1):
        f[:, i + 1] = np.clip(f[:, i] + rng.uniform(-cfg.r, cfg.r, n), 0.0, 1.0)
    t1, t2 = rng.uniform(cfg.t_ll, cfg.t_lu, (n, 1)), rng.uniform(cfg.t_ul, cfg.t_uu, (n, 1))
    f = np.clip((f - t1) / (t2 - t1), 0.0, 1.0)
    f[:, :cfg.first_clean] = 1.0
    out = np.empty_like(images)
    for s in range(0, n, chunk):  # one draw per chunk = the per-sequence draws in order (legacy stream)
        img = images[s:s + chunk]
        u = rng.uniform(0.0, 255.0, img.shape)
        fs = f[s:s + chunk, :, None, None]
        out[s:s + chunk] = (fs * img + (1.0 - fs) * u).astype(np.uint8)
    return out


def _split(n: int, rng: np.random.RandomState, cfg: PendulumConfig) -> dict:
    sim = simulate(n, rng, cfg)
    images = add_image_noise(render(sim["noisy_theta"], cfg), rng, cfg)
    targets = np.stack([np.sin(sim["theta"]), np.cos(sim["theta"])], -1).astype(np.float32)
    return dict(images=images, targets=targets, theta=sim["theta"])


def generate(cfg: PendulumConfig = PendulumConfig(), cache_dir=None, refresh: bool = False) -> dict:
    """{'train', 'valid', 'test'} -> images uint8 [n, T, S, S], targets float32 [n, T, 2] (sin, cos of the
    noise-free angle), theta float64 [n, T]; cached under `cache_dir` keyed by cfg (§1.4)."""
    def compute():
        rng = np.random.RandomState(cfg.train_seed)
        train = _split(cfg.n_train, rng, cfg)
        test = _split(cfg.n_test, rng, cfg)  # continues the train generator
        valid = _split(cfg.n_valid, np.random.RandomState(cfg.valid_seed), cfg)
        return dict(train=train, valid=valid, test=test)
    return memo("pendulum_data", cfg, compute, sources=(__file__,), folder=cache_dir, refresh=refresh)


def subsample(split_arrays: dict, split: str, cfg: PendulumConfig = PendulumConfig()) -> dict:
    """Keep int(sample_rate T) sorted distinct frames per sequence (§1.5): images uint8 [n, K, S, S],
    targets [n, K, 2] and times float32 [n, K] (the kept frame numbers)."""
    offsets = dict(test=0, valid=cfg.n_valid, train=cfg.n_train)  # §1.5: + the split's size
    if split not in offsets:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    n, K = len(split_arrays["images"]), int(cfg.sample_rate * cfg.T)
    idx = np.stack([np.sort(np.random.default_rng(cfg.subsample_seed + i + offsets[split])
                            .choice(cfg.T, K, replace=False)) for i in range(n)])
    rows = np.arange(n)[:, None]
    return dict(images=split_arrays["images"][rows, idx], targets=split_arrays["targets"][rows, idx],
                times=idx.astype(np.float32))


def load(cfg: PendulumConfig = PendulumConfig(), cache_dir=None) -> dict:
    """Generated (or cached) data, subsampled per split: {split: subsample(...)}."""
    data = generate(cfg, cache_dir=cache_dir)
    return {s: subsample(data[s], s, cfg) for s in SPLITS}


def angle_from_image(img, cfg: PendulumConfig = PendulumConfig()) -> np.ndarray:
    """Angle of a clean image [..., S, S]: atan2 of the intensity centroid about the pivot (render's
    convention: the rod points along (sin, cos) in (x, y)). The pivot, pixel 64 of the canvas, sits at
    (64.5 / 128) * S - 0.5 in output pixel indices."""
    w = np.asarray(img, dtype=np.float64)
    S = w.shape[-1]
    p = np.arange(S) - ((cfg.canvas / 2 + 0.5) * S / cfg.canvas - 0.5)
    mass = w.sum((-2, -1))
    return np.arctan2((w * p).sum((-2, -1)) / mass, (w * p[:, None]).sum((-2, -1)) / mass)
