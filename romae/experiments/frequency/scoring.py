"""Scoring reconstructions: spectra, FFT errors, the trivial reconstruction, per-case trends."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import torch

from ...compendium import report
from ... import runtime
from ...compendium.cache import cached
from ...data.sines import one_mode_freqs, sine_series, snr, two_mode_freqs
from ...model import RoMAEForPreTraining

from .profiles import FrequencyConfig
from .training import to_tensors, load_model


# ----------------------------------------------------------------------------- metrics

def one_sided_spectrum(x: np.ndarray) -> np.ndarray:
    """One-sided FFT magnitude along the last axis: |rfft(x)| / N with every bin but DC (and, for even
    N, the Nyquist bin) doubled, so a sine of amplitude A on a bin reads A. x: [..., N] -> [..., N//2 + 1]."""
    N = x.shape[-1]
    mag = np.abs(np.fft.rfft(x, axis=-1)) / N
    last = mag.shape[-1] - 1 if N % 2 == 0 else mag.shape[-1]  # the Nyquist bin has no mirror image
    mag[..., 1:last] *= 2
    return mag


def frequency_bin(f, T: int) -> np.ndarray:
    """Bin of frequency f (Hz) in the rfft of T samples on t = linspace(0, 1, T): f * T * dt, dt = 1/(T-1)."""
    return np.rint(np.asarray(f) * T / (T - 1)).astype(np.int64)


def fft_errors(recon: np.ndarray, clean: np.ndarray, freqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spectral errors of reconstructions recon [n, T] against clean signals [n, T].

    Returns (fft_mse [n]: mean over all one-sided bins of the squared magnitude difference,
    bin_mse [n]: the squared magnitude difference at the bins of the series' frequencies freqs [n, K]
    (-1 = absent), averaged over the present ones).
    """
    a, b = one_sided_spectrum(recon.astype(np.float64)), one_sided_spectrum(clean.astype(np.float64))
    sq = (a - b) ** 2  # [n, bins]
    freqs = np.atleast_2d(np.asarray(freqs).T).T  # [n] -> [n, 1]
    present = freqs >= 0
    bins = frequency_bin(np.where(present, freqs, 0), recon.shape[-1])
    at = np.take_along_axis(sq, bins, axis=1)
    return sq.mean(axis=1), (at * present).sum(1) / present.sum(1)


@torch.no_grad()
def evaluate(model: RoMAEForPreTraining, series: dict[str, np.ndarray], batch: int = 256,
             position_scale: float = 1.0):
    """Interpolate every series -> (per-series metrics DataFrame, reconstructions [n, T])."""
    x = to_tensors(series, position_scale)
    dev = next(model.parameters()).device
    recon = torch.cat([model.reconstruct(x["values"][i:i + batch].to(dev), x["positions"][i:i + batch].to(dev),
                                         x["mask"][i:i + batch].to(dev)).cpu()
                       for i in range(0, len(x["values"]), batch)]).squeeze(-1).numpy()
    return series_metrics(recon, series), recon


def series_metrics(recon: np.ndarray, series: dict[str, np.ndarray]) -> pd.DataFrame:
    """Per-series errors of reconstructions recon [n, T] (observed points + predictions) of `series`:
    time-domain MSE on the hidden points against the noisy values (the training loss) and the clean signal,
    and the FFT errors (`fft_errors`)."""
    hidden = ~series["observed"]
    n_hidden = hidden.sum(1)
    fft_mse, bin_mse = fft_errors(recon, series["clean"], series["freqs"])
    return pd.DataFrame(dict(
        f1=series["freqs"][:, 0], f2=series["freqs"][:, 1],
        time_mse_noisy=((recon - series["values"]) ** 2 * hidden).sum(1) / n_hidden,  # the training loss
        time_mse_clean=((recon - series["clean"]) ** 2 * hidden).sum(1) / n_hidden,
        fft_mse=fft_mse, fft_bin_mse=bin_mse))


# The trivial interpolators a model must beat before the figures' claims count (`trivial`): the observed
# points kept, every hidden point filled with a constant.
TRIVIAL = {"zero": "predicting 0 at every hidden point",
           "mean": "each series' observed mean at every hidden point"}


def trivial_reconstruction(series: dict[str, np.ndarray], how: str) -> np.ndarray:
    """The series [n, T] with every hidden point replaced by 0 (`how` = "zero") or by the mean of that series'
    observed points ("mean")."""
    obs, values = series["observed"], series["values"].astype(np.float64)
    if how == "zero":
        fill = np.zeros((len(values), 1))
    elif how == "mean":
        fill = (values * obs).sum(1, keepdims=True) / obs.sum(1, keepdims=True)
    else:
        raise ValueError(f"unknown trivial predictor {how!r}; choose among {', '.join(TRIVIAL)}")
    return np.where(obs, values, fill)


METRICS = ("time_mse_noisy", "time_mse_clean", "fft_mse", "fft_bin_mse")


def per_case(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and std of every metric per frequency (one mode) or pair (two modes)."""
    g = frame.groupby(["f1", "f2"])[list(METRICS)]
    out = pd.concat([g.mean(), g.std(ddof=0).add_suffix("_std"), g.size().rename("n")], axis=1).reset_index()
    out.insert(0, "modes", np.where(out.f2 >= 0, 2, 1))
    return out[["modes", "f1", "f2", "n"] + [c for m in METRICS for c in (m, m + "_std")]]


def trend_fit(one: pd.DataFrame, metric: str, f_min: int = 9) -> dict | None:
    """The least-squares line of the per-frequency mean `metric` for f >= f_min (one mode), with the slope's 95 %
    t interval (`report.slope`: n - 2 degrees of freedom over the frequencies); None with fewer than 3."""
    m = one[one.f1 >= f_min].groupby("f1")[metric].mean()
    if len(m) < 3:
        return None
    return report.slope(m.index.values, m.values)


def linear_trend(one: pd.DataFrame, metric: str, f_min: int = 9) -> tuple[float, float]:
    """Least-squares slope (per Hz) and R^2 of the per-frequency mean `metric` for f >= f_min (one mode)."""
    fit = trend_fit(one, metric, f_min)
    return (float("nan"), float("nan")) if fit is None else (fit["slope"], fit["r2"])


def high_pair_preference(two: pd.DataFrame, metric: str = "fft_mse", f_min: int = 9) -> dict:
    """Figure 4's remark, measured: the mean `metric` of the two-mode series whose frequencies are both >= f_min
    ('both high') against those with one below and one at or above it ('one low, one high'), with their counts."""
    lo, hi = two[["f1", "f2"]].min(axis=1), two[["f1", "f2"]].max(axis=1)
    both, mixed = two[lo >= f_min][metric], two[(lo < f_min) & (hi >= f_min)][metric]
    return dict(metric=metric, f_min=f_min, both_high=float(both.mean()) if len(both) else float("nan"),
                n_both_high=int(len(both)), one_low_one_high=float(mixed.mean()) if len(mixed) else float("nan"),
                n_one_low_one_high=int(len(mixed)))


def trend_table(one: pd.DataFrame, f_min: int = 9) -> pd.DataFrame:
    """Does the error grow with frequency (one mode)? Per metric: the rank correlation of the per-frequency
    mean with f (Spearman; +1 = monotonic growth) and the straight-line slope and R^2 for f >= f_min."""
    rows = []
    for metric in METRICS:
        m = one.groupby("f1")[metric].mean()
        f = m.index.to_series()
        slope, r2 = linear_trend(one, metric, f_min)
        rows.append(dict(metric=metric, spearman_vs_f=m.rank().corr(f.rank()),
                         **{f"slope_per_hz_f>={f_min}": slope, f"r2_line_f>={f_min}": r2}))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- the experiment

def test_series(cfg: FrequencyConfig) -> dict[str, dict]:
    """The evaluation series of `cfg`: one mode (n_test_one per test frequency), two modes (n_test_two per pair
    of test frequencies) and Figure 5's example -> {one, two, example} (a dry run: a few of each)."""
    n_one, n_two = runtime.dry_count(cfg.n_test_one, 2), runtime.dry_count(cfg.n_test_two, 1)  # dry run: a few
    return dict(one=sine_series(len(cfg.test_freqs) * n_one, cfg.test_seed, cfg.sines,
                                freqs=one_mode_freqs(cfg.test_freqs, n_one)),
                two=sine_series(len(cfg.test_freqs) * (len(cfg.test_freqs) - 1) // 2 * n_two,
                                cfg.test_seed + 1, cfg.sines, freqs=two_mode_freqs(cfg.test_freqs, n_two)),
                example=sine_series(1, cfg.test_seed + 2, cfg.sines, freqs=np.array([cfg.example_freqs])))


def trivial(cfg: FrequencyConfig) -> dict:
    """The trivial predictor of `cfg`'s test series, scored as the model is: of TRIVIAL's two, the one with
    the lower mean time-domain MSE (hidden points vs noisy values) over the one- and two-mode series.
    -> {name (its description), how, one, two (per-series frames as `evaluate`'s)}."""
    series = test_series(cfg)
    frames = {how: {k: series_metrics(trivial_reconstruction(series[k], how), series[k]) for k in ("one", "two")}
              for how in TRIVIAL}
    how = min(TRIVIAL, key=lambda h: sum(frames[h][k].time_mse_noisy.mean() for k in ("one", "two")))
    return dict(name=TRIVIAL[how], how=how, **frames[how])


def evaluate_config(cfg: FrequencyConfig, trained: dict, cache_dir=None, refresh: bool = False) -> dict:
    """Evaluate a trained model on the one-mode, two-mode and example series (cached) -> dict of frames."""
    def compute_eval():
        model = load_model(cfg, trained)
        series = test_series(cfg)
        one_s, two_s, ex = series["one"], series["two"], series["example"]
        one, _ = evaluate(model, one_s, cfg.eval_batch, cfg.position_scale)
        two, _ = evaluate(model, two_s, cfg.eval_batch, cfg.position_scale)
        ex_frame, ex_recon = evaluate(model, ex, cfg.eval_batch, cfg.position_scale)
        example = {**ex, "recon": ex_recon, "metrics": ex_frame.iloc[0].to_dict()}
        train_snr = snr(sine_series(cfg.n_train, cfg.train_seed, cfg.sines), cfg.sines)
        return dict(one=one.to_dict("list"), two=two.to_dict("list"), example=example, snr=train_snr)

    key = dataclasses.asdict(cfg) | {"trained": trained["steps"]}
    key.pop("control"), key.pop("progress")
    ev = cached("frequency_eval", key, compute_eval, cache_dir=cache_dir, refresh=refresh)
    return dict(one=pd.DataFrame(ev["one"]), two=pd.DataFrame(ev["two"]), example=ev["example"], snr=ev["snr"])
