"""Stand-in light curves, generated offline: multi-band, irregular, LSST-like. **Not ELAsTiCC.**

ELAsTiCC (tens of GB behind the DESC portal) cannot be shipped or downloaded here, so the ELAsTiCC
notebook trains offline on these. Every number computed on them must be labelled "stand-in, not
ELAsTiCC": they test the pipeline and the pre-training claim on data of the same *shape*, not the
paper's result.

    obs, meta = generate(n_per_class=500, seed=0)
    obs:  object_id, mjd, band (u g r i z Y), flux, flux_err, photflag  (one row per observation)
    meta: object_id, label (a class of CLASSES), and the drawn parameters

What is LSST-like (Ivezić et al. 2019, ApJ 873, 111; the numbers are rounded):
- six bands u g r i z Y, observed on different nights and at different times: a visit observes one or
  two bands; the bands' shares follow the Wide-Fast-Deep plan (u 7 %, g 10 %, r i 22 %, z Y 20 %);
- a one-year window with one seasonal gap (the field is observable ~200 of 365 nights) and a visit on
  ~30 % of the observable nights;
- heteroscedastic flux errors in FLUXCAL units (zero point 27.5, as SNANA's): a per-visit sky noise
  around each band's single-visit 5-sigma depth (u 23.9 ... Y 22.1 mag) that varies from visit to
  visit (seeing, moon), plus source and calibration terms; the reported error misestimates the true
  one by a few per cent; `photflag` 4096 marks detections (|flux| / error > 5: difference imaging
  detects negative changes too); like ELAsTiCC's alert-triggered objects, every light curve has at
  least one detection (brightness and noise are drawn again, then the whole light curve, until it has).

Classes (physically motivated, with overlapping parameters so the task is not trivial): rising and
declining transients of different time scales and colours (Ia-like, Ibc-like, plateau II-like, slow
SLSN/TDE-like, fast red KN-like), periodic variables (RR Lyrae / eclipsing-binary-like) and stochastic
variability (AGN-like damped random walk). Colours come from a black body whose temperature evolves.
Deterministic under `seed` (one numpy Generator, classes drawn in a fixed order).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

BANDS = ("u", "g", "r", "i", "z", "Y")
WAVELENGTH_NM = np.array([367.0, 482.0, 622.0, 754.0, 869.0, 971.0])  # LSST effective wavelengths
DEPTH_MAG = np.array([23.9, 25.0, 24.7, 24.0, 23.3, 22.1])  # single-visit 5-sigma depths (Ivezić et al.)
BAND_SHARE = np.array([0.065, 0.095, 0.22, 0.22, 0.20, 0.20])  # Wide-Fast-Deep visits per band
ZERO_POINT = 27.5  # SNANA's FLUXCAL: flux = 10 ** (-0.4 * (mag - 27.5))
DETECTION = 4096  # SNANA PHOTFLAG bit of a detection
HC_OVER_K = 1.4388e7  # nm K

CLASSES = ("Ia-like", "Ibc-like", "II-plateau-like", "slow-transient", "fast-transient", "periodic",
           "stochastic")
TRANSIENTS = CLASSES[:5]

WINDOW_DAYS = 365.0
SEASON_DAYS = 200.0
VISIT_PROB = 0.3  # share of the observable nights with a visit
MJD0 = 60000.0


def _sky_sigma() -> np.ndarray:
    """Per-band sky noise (FLUXCAL) of a visit at the nominal depth: the 5-sigma flux / 5."""
    return 10 ** (-0.4 * (DEPTH_MAG - ZERO_POINT)) / 5.0


def _cadence(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """One object's observations: (times in days from the window start [n], band index [n], season phase)."""
    phase = rng.uniform(0.0, WINDOW_DAYS)
    nights = np.arange(int(WINDOW_DAYS))
    observable = ((nights - phase) % WINDOW_DAYS) < SEASON_DAYS
    visits = nights[observable & (rng.random(len(nights)) < VISIT_PROB)]
    times, bands = [], []
    for night in visits:
        n_bands = 1 + (rng.random() < 0.5)
        b = rng.choice(6, size=n_bands, replace=False, p=BAND_SHARE)
        t = night + rng.uniform(0.05, 0.3) + np.arange(n_bands) * rng.uniform(0.015, 0.04)
        times.extend(t)
        bands.extend(b)
    return np.asarray(times), np.asarray(bands, dtype=np.int64), phase


def _season_time(rng: np.random.Generator, phase: float, margin: float = 20.0) -> float:
    """A time inside (or within `margin` days of) the observable season: transients that trigger."""
    start = phase % WINDOW_DAYS
    return float((start + rng.uniform(-margin, SEASON_DAYS + margin)) % WINDOW_DAYS)


def _planck_ratio(temperature: np.ndarray, band: np.ndarray) -> np.ndarray:
    """Black-body flux density in each observation's band relative to the r band, at `temperature` (K)."""
    def planck(lam, T):
        return lam ** -5.0 / np.expm1(HC_OVER_K / (lam * T))
    return planck(WAVELENGTH_NM[band], temperature) / planck(WAVELENGTH_NM[2], temperature)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _transient(name: str, t: np.ndarray, band: np.ndarray, rng, phase: float) -> tuple[np.ndarray, dict]:
    """Model flux (r-band peak ~ 1 before scaling) of a transient class at times t in bands `band`."""
    t0 = _season_time(rng, phase)
    dt = t - t0
    if name in ("Ia-like", "Ibc-like", "slow-transient", "fast-transient"):
        rise, fall, hot, cool, cooling = {
            "Ia-like": ((1.5, 4.0), (15.0, 35.0), (10000, 13000), (5000, 7000), (10.0, 25.0)),
            "Ibc-like": ((2.0, 6.0), (10.0, 25.0), (8000, 10500), (4500, 6000), (8.0, 20.0)),
            "slow-transient": ((10.0, 30.0), (40.0, 120.0), (11000, 25000), (9000, 20000), (50.0, 150.0)),
            "fast-transient": ((0.3, 1.5), (1.0, 6.0), (5000, 8000), (2500, 4000), (2.0, 6.0)),
        }[name]
        tr, tf = rng.uniform(*rise), rng.uniform(*fall)
        shape = np.exp(-np.clip(dt / tf, -50, 50)) * _sigmoid(dt / tr)
        params = dict(t0=t0, rise=tr, fall=tf)
    else:  # II-plateau-like: fast rise, a slowly declining plateau, a drop, a radioactive tail
        tr, plateau, drop, slope = rng.uniform(1.0, 5.0), rng.uniform(60.0, 120.0), rng.uniform(3.0, 8.0), rng.uniform(150.0, 400.0)
        shape = _sigmoid(dt / tr) * (np.exp(-np.clip(dt, 0, None) / slope) * _sigmoid(-(dt - plateau) / drop)
                                     + 0.08 * np.exp(-np.clip(dt - plateau, 0, None) / 100.0))
        hot, cool, cooling = (9000, 12000), (4500, 5500), (15.0, 35.0)
        params = dict(t0=t0, rise=tr, plateau=plateau)
    t_hot, t_cool, tau = rng.uniform(*hot), rng.uniform(*cool), rng.uniform(*cooling)
    temperature = t_cool + (t_hot - t_cool) * np.exp(-np.clip(dt, 0, None) / tau)
    return shape * _planck_ratio(temperature, band), params


def _variable(name: str, t: np.ndarray, band: np.ndarray, rng) -> tuple[np.ndarray, dict]:
    """Difference flux (amplitude ~ 1) of a variable star or AGN at times t in bands `band`."""
    blue = np.array([1.4, 1.2, 1.0, 0.85, 0.8, 0.75]) ** rng.uniform(0.5, 1.5)  # larger amplitude in blue
    if name == "periodic":
        period = float(np.exp(rng.uniform(np.log(0.3), np.log(20.0))))
        harmonics = rng.uniform(0, 1, 3) * np.array([1.0, 0.5, 0.25])
        phases = rng.uniform(0, 2 * np.pi, 3)
        k = np.arange(1, 4)[:, None]
        wave = (harmonics[:, None] * np.sin(2 * np.pi * k * t[None] / period + phases[:, None])).sum(0)
        return wave / max(harmonics.sum(), 1e-3) * blue[band], dict(period=period)
    tau = float(np.exp(rng.uniform(np.log(30.0), np.log(500.0))))  # damped random walk, exact on any grid
    order = np.argsort(t, kind="stable")
    x = np.empty(len(t))
    state = rng.normal()
    last = t[order[0]] if len(t) else 0.0
    for i in order:
        a = np.exp(-(t[i] - last) / tau)
        state = a * state + np.sqrt(1 - a * a) * rng.normal()
        x[i], last = state, t[i]
    return (x * 0.5 + rng.normal(0, 0.2)) * blue[band], dict(tau=tau)


def generate(n_per_class: int = 500, seed: int = 0, classes=CLASSES,
             peak_mag: tuple[float, float] = (19.5, 24.5), truth: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Balanced stand-in light curves -> (obs, meta).

    n_per_class objects of every class in `classes` (a subset of CLASSES, in that order); r-band peak
    (transients) or amplitude (variables) brightness uniform in `peak_mag` magnitudes, so the faint end
    sits near the detection limit. truth=True adds the noiseless flux as a column `flux_true`.
    object_id runs 0..n-1 (classes interleaved in a seeded order, so ids carry no class).
    """
    if not isinstance(n_per_class, (int, np.integer)) or n_per_class < 1:
        raise ValueError(f"n_per_class must be a positive integer, got {n_per_class!r}")
    unknown = [c for c in classes if c not in CLASSES]
    if unknown or not len(classes):
        raise ValueError(f"classes must be a non-empty subset of {CLASSES}, got {list(classes)!r}")
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.asarray(classes, dtype=object), n_per_class)
    labels = labels[rng.permutation(len(labels))]
    sky = _sky_sigma()
    parts, meta = [], []
    for oid, name in enumerate(labels):
        detected = False
        while not detected:  # alert-triggered, like ELAsTiCC's objects: at least one detection
            t, band, phase = _cadence(rng)
            if len(t) < 6:  # an almost empty season: draw again (deterministic under the seed)
                continue
            if name in TRANSIENTS:
                shape, params = _transient(name, t, band, rng, phase)
            else:
                shape, params = _variable(name, t, band, rng)
            for _ in range(20):  # brightness and noise again; then, if still nothing, a new light curve
                mag = rng.uniform(*peak_mag)
                true = shape * 10 ** (-0.4 * (mag - ZERO_POINT))
                sigma = np.sqrt((sky[band] * rng.lognormal(0.0, 0.25, len(t))) ** 2 + 0.01 * np.abs(true)
                                + (0.005 * true) ** 2)
                flux = true + rng.normal(0.0, sigma)
                err = sigma * rng.lognormal(0.0, 0.05, len(t))
                detected = bool((np.abs(flux) / err > 5).any())
                if detected:
                    break
        order = np.argsort(t, kind="stable")
        part = dict(object_id=np.full(len(t), oid), mjd=MJD0 + t[order], band=np.asarray(BANDS)[band[order]],
                    flux=flux[order].astype(np.float32), flux_err=err[order].astype(np.float32),
                    photflag=np.where(np.abs(flux[order]) / err[order] > 5, DETECTION, 0).astype(np.int32))
        if truth:
            part["flux_true"] = true[order]
        parts.append(pd.DataFrame(part))
        meta.append(dict(object_id=oid, label=name, peak_mag=mag, **params))
    return pd.concat(parts, ignore_index=True), pd.DataFrame(meta)


__all__ = ["BANDS", "CLASSES", "generate"]
