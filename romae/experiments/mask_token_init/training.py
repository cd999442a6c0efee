"""Training the pieces (Spiral, Synthetic, the control) and their metrics."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...data.sines import sine_series
from .. import frequency, interpolation

from .settings import CONTROL, interpolation_profile, control_config


# ----------------------------------------------------------------------------- the runs

def _spiral_metrics(sp: dict) -> dict:
    trials = pd.concat([r["trials"] for r in sp["runs"]])
    return {("Spiral", m): float(trials[m].mean()) for m in ("rmse_clean", "rmse_noisy", "authors_formula_noisy")}


def _synthetic_metrics(sy: dict, protocols) -> tuple[dict, dict]:
    """-> (mean over seeds, {seed: per-seed}) of {(setting, metric): value}, as interpolation.run."""
    per_seed = {}
    for r in sy["runs"]:
        s = r["series"]
        per_seed[r["seed"]] = {(f"Synthetic, {p} observed", m): float(s.loc[s.protocol == p, m].mean())
                               for p in protocols for m in ("mse_noisy", "mse_clean")}
    keys = next(iter(per_seed.values())).keys()
    return {k: float(np.mean([v[k] for v in per_seed.values()])) for k in keys}, per_seed


def _control_metrics(ev: dict) -> dict:
    """As frequency._record_variant, for the control's suffix."""
    out = {}
    for setting, frame in (("1 mode", ev["one"]), ("2 modes", ev["two"])):
        for metric, col in (("time_mse_hidden_mean", "time_mse_noisy"), ("time_mse_hidden_clean_mean", "time_mse_clean"),
                            ("fft_mse_mean", "fft_mse"), ("fft_bin_mse_mean", "fft_bin_mse")):
            out[(setting + CONTROL, metric)] = float(frame[col].mean())
    slope, _ = frequency.linear_trend(ev["one"], "fft_mse")
    if np.isfinite(slope):
        out[("1 mode, f >= 9 Hz" + CONTROL, "fft_mse_slope_per_hz")] = float(slope)
    return out


def predict_zero_mse(cfg: frequency.FrequencyConfig) -> dict:
    """The time-domain MSE of predicting 0 at every hidden point (vs noisy values) on the control's test
    series: the level at which a model that has not learned sits."""
    out = {}
    n_one, pairs = len(cfg.test_freqs) * cfg.n_test_one, len(cfg.test_freqs) * (len(cfg.test_freqs) - 1) // 2
    for setting, series in (
            ("1 mode", sine_series(n_one, cfg.test_seed, cfg.sines,
                                   freqs=frequency.one_mode_freqs(cfg.test_freqs, cfg.n_test_one))),
            ("2 modes", sine_series(pairs * cfg.n_test_two, cfg.test_seed + 1, cfg.sines,
                                    freqs=frequency.two_mode_freqs(cfg.test_freqs, cfg.n_test_two)))):
        hidden = ~series["observed"]
        out[(setting + CONTROL, "time_mse_hidden_mean")] = float(
            ((series["values"] ** 2 * hidden).sum(1) / hidden.sum(1)).mean())
    return out


def train_pieces(profile: str, init: str, cache_dir=None, checkpoints: bool = False, synthetic_seeds=None,
                 pieces=("spiral", "synthetic", "control")) -> dict:
    """Train (cached) and evaluate the chosen pieces with `init` -> {metrics, per_seed, histories, seconds,
    models (the model configs trained)}.

    `synthetic_seeds` replaces the Synthetic seeds (quick: (CHECK_SEED,) for the zeros check); the
    per-seed training keys are unchanged by it.
    """
    prof = interpolation_profile(profile, init)
    if synthetic_seeds is not None:
        prof = dataclasses.replace(prof, synthetic=dataclasses.replace(prof.synthetic, seeds=tuple(synthetic_seeds)))
    metrics, per_seed, histories, seconds, models = {}, {}, {}, {}, {}
    if "spiral" in pieces:
        sp = interpolation.run_spiral(prof, cache_dir, checkpoints=checkpoints, profile=profile)
        metrics.update(_spiral_metrics(sp))
        histories["Spiral"], models["Spiral"] = [r["history"] for r in sp["runs"]], sp["model"]
        seconds["Spiral"] = sum(r["seconds"] for r in sp["runs"])
    if "synthetic" in pieces:
        sy = interpolation.run_synthetic(prof, cache_dir, checkpoints=checkpoints, profile=profile)
        mean, per_seed = _synthetic_metrics(sy, ("3-10",) + tuple(str(k) for k in prof.eval_n_obs))
        metrics.update(mean)
        histories["Synthetic"], models["Synthetic"] = [r["history"] for r in sy["runs"]], sy["model"]
        seconds["Synthetic"] = sum(r["seconds"] for r in sy["runs"])
    if "control" in pieces:
        c = control_config(profile, init)
        trained = frequency.train_model(c, cache_dir=cache_dir, checkpoints=checkpoints, profile=profile)
        ev = frequency.evaluate_config(c, trained, cache_dir=cache_dir)
        metrics.update(_control_metrics(ev))
        histories["raw-t control"], models["raw-t control"] = [pd.DataFrame(trained["history"])], c.model_config()
        seconds["raw-t control"] = trained["seconds"]
    return dict(metrics=metrics, per_seed=per_seed, histories=histories, seconds=seconds, models=models)
