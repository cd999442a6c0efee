"""Tests of the frequency-retention experiment (App. B.4): the sine generator, the FFT-error helper and
a tiny end-to-end run into a temporary reports folder."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from romae.data.sines import SineConfig, one_mode_freqs, sine_series, snr, two_mode_freqs
from romae.experiments import frequency as F


def test_generator_is_deterministic_and_shaped():
    a, b, c = sine_series(300, 7), sine_series(300, 7), sine_series(300, 8)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(a["values"], c["values"])
    assert a["values"].shape == a["clean"].shape == a["observed"].shape == (300, 100)
    assert a["values"].dtype == np.float32 and a["observed"].dtype == bool
    np.testing.assert_allclose(a["t"], np.linspace(0, 1, 100))
    assert (a["observed"].sum(1) == 50).all()  # exactly 50 observed, 50 to interpolate per series


def test_generator_follows_the_paper_distribution():
    s = sine_series(4000, 0)
    f1, f2 = s["freqs"].T
    assert f1.min() == 0 and f1.max() == 24  # integer frequencies over all of {0, ..., 24}
    two = f2 >= 0
    assert 0.45 < two.mean() < 0.55  # one or two modes with probability 1/2
    assert (f1[two] != f2[two]).all() and (f2[two] <= 24).all()
    assert (s["amps"][~two, 1] == 0).all()
    present = s["amps"][s["freqs"] >= 0]
    assert present.min() >= 0.5 and present.max() <= 1.0
    assert abs((s["values"] - s["clean"]).std() - 0.1) < 0.003  # N(0, 0.01): sigma 0.1
    assert 40 < snr(s) < 48  # the paper quotes a mean SNR of 43.1; A ~ U(0.5, 1) gives ~43.8


def test_generator_with_given_frequencies():
    freqs = two_mode_freqs((1, 5, 12), 3)
    assert freqs.shape == (9, 2) and (freqs[:, 0] < freqs[:, 1]).all()
    s = sine_series(9, 3, freqs=freqs)
    np.testing.assert_array_equal(s["freqs"], freqs)
    one = sine_series(4, 3, freqs=one_mode_freqs((2, 9), 2))
    np.testing.assert_array_equal(one["freqs"], [[2, -1], [2, -1], [9, -1], [9, -1]])
    # a single 9 Hz sine: its clean spectrum peaks at the 9 Hz bin
    assert F.one_sided_spectrum(one["clean"][2].astype(float)).argmax() == 9
    with pytest.raises(ValueError):
        sine_series(3, 0, freqs=np.array([1, 2]))
    with pytest.raises(ValueError):
        SineConfig(n_obs=100)


def test_one_sided_spectrum_reads_amplitudes():
    N = 100
    t = np.arange(N) / N  # periodic grid: integer frequencies fall exactly on bins
    x = 0.3 + 0.7 * np.sin(2 * np.pi * 4 * t + 0.2) + 0.25 * np.cos(2 * np.pi * 17 * t)
    mag = F.one_sided_spectrum(x)
    assert mag.shape == (N // 2 + 1,)
    np.testing.assert_allclose(mag[[0, 4, 17]], [0.3, 0.7, 0.25], atol=1e-12)
    assert np.delete(mag, [0, 4, 17]).max() < 1e-12
    # the Nyquist bin is not doubled: (-1)^n has magnitude 1
    np.testing.assert_allclose(F.one_sided_spectrum(np.cos(np.pi * np.arange(N)))[-1], 1.0)
    # on the paper's grid linspace(0, 1, 100), f Hz sits in bin f for every f in 0..24
    np.testing.assert_array_equal(F.frequency_bin(np.arange(25), 100), np.arange(25))


def test_fft_errors_on_known_signals():
    s = sine_series(5, 0, freqs=np.array([[3, 11]] * 5))
    clean = s["clean"].astype(float)
    fft_mse, bin_mse = F.fft_errors(clean, clean, s["freqs"])
    assert np.all(fft_mse == 0) and np.all(bin_mse == 0)
    # an offset c (away from zero, same sign as the mean) changes only the DC magnitude, by c:
    # full-spectrum MSE c^2 / 51 bins, nothing at 3 or 11 Hz
    fft_mse, bin_mse = F.fft_errors(clean + 0.2 * np.sign(clean.mean(1, keepdims=True)), clean, s["freqs"])
    np.testing.assert_allclose(fft_mse, 0.04 / 51, rtol=1e-9)
    np.testing.assert_allclose(bin_mse, 0, atol=1e-20)
    # dropping the 11 Hz component of amplitude a: ~a^2 at its bin, ~0 at 3 Hz -> a mean near a^2 / 2
    partial = s["amps"][:, :1] * np.sin(2 * np.pi * 3 * s["t"] + s["phases"][:, :1])
    _, bin_mse = F.fft_errors(partial, clean, s["freqs"])
    a2 = s["amps"][:, 1] ** 2
    assert ((bin_mse > 0.3 * a2) & (bin_mse < 0.7 * a2)).all()


def test_unknown_profile_raises():
    with pytest.raises(ValueError, match="unknown profile"):
        F.config("fast")


def test_smoke_experiment_writes_reports(tmp_path, monkeypatch):
    tiny = dataclasses.replace(F.config("smoke"), n_train=16, test_freqs=(1, 24), n_test_one=2, n_test_two=1)
    monkeypatch.setitem(F.PROFILES, "smoke", tiny)
    reports, cache = tmp_path / "reports", tmp_path / "cache"
    res = F.run("smoke", reports_dir=reports, cache_dir=cache)
    assert res["steps"] == 2 and len(res["one"]) == 4 and len(res["two"]) == 1
    x = F.to_tensors(res["example"])
    assert x["values"].shape == (1, 100, 1) and int(x["mask"].sum()) == 50
    table = pd.read_csv(reports / "tables" / "table_b4_frequency_errors.csv")
    assert list(table.modes) == [1, 1, 2] and table.fft_mse.notna().all()
    results = pd.read_csv(reports / "results.csv")
    assert set(results.experiment) == {F.EXPERIMENT} and np.isfinite(results.ours).all()
    assert {"1 mode", "2 modes"} <= set(results.setting)
    # a second run is served from the cache: same numbers, no retraining
    again = F.run("smoke", reports_dir=reports, cache_dir=cache)
    pd.testing.assert_frame_equal(res["one"], again["one"])
    assert len(list(cache.glob("frequency_model-*.pt"))) == 1


def test_position_scale_and_control(tmp_path, monkeypatch):
    series = sine_series(2, 0)
    assert torch.allclose(F.to_tensors(series, 99.0)["positions"][0, 0, -1], torch.tensor(99.0))
    with pytest.raises(ValueError, match="position_scale"):
        F.to_tensors(series, 0.0)
    tiny = dataclasses.replace(F.config("smoke"), n_train=16, test_freqs=(1, 24), n_test_one=2, n_test_two=1,
                               position_scale=99.0, control=True)
    monkeypatch.setitem(F.PROFILES, "smoke", tiny)
    reports, cache = tmp_path / "reports", tmp_path / "cache"
    res = F.run("smoke", reports_dir=reports, cache_dir=cache)
    assert res["control"] is not None and res["control"]["config"].position_scale == 1.0
    assert len(list(cache.glob("frequency_model-*.pt"))) == 2  # scaled and raw-t models are kept apart
    table = pd.read_csv(reports / "tables" / "table_b4_frequency_errors.csv")
    assert set(table.positions) == {"t x 99", "t (raw, control)"}
    results = pd.read_csv(reports / "results.csv")
    assert {"1 mode", "1 mode, raw t (control)"} <= set(results.setting)
    # the scaled model really sees other positions: its predictions differ from the control's
    assert not np.allclose(res["one"].time_mse_noisy, res["control"]["one"].time_mse_noisy)
    F.plot_control(res)


def test_figure_4_check_is_recorded_against_the_higher_frequency(tmp_path):
    """Figure 4's check: the two-mode FFT-MSE's slope against each pair's higher frequency (>= 9 Hz)."""
    import pandas as pd

    from romae.experiments import frequency as F
    from romae.report import build_summary

    pairs = [(1, 9), (5, 12), (1, 18), (9, 24), (3, 5)]
    two = pd.DataFrame([dict(f1=a, f2=b, fft_mse=1e-4 * max(a, b), time_mse_noisy=0.1, time_mse_clean=0.1,
                             fft_bin_mse=0.1) for a, b in pairs])
    one = pd.DataFrame([dict(f1=f, f2=-1, fft_mse=1e-4 * f, time_mse_noisy=0.1, time_mse_clean=0.1,
                             fft_bin_mse=0.1) for f in (1, 9, 12, 18, 24)])
    F._record_variant(dict(one=one, two=two), "", "smoke", "test", tmp_path)
    rows = pd.read_csv(tmp_path / "results.csv").set_index(["experiment", "setting", "metric"]).ours
    assert rows[(F.FIG4, "2 modes, higher f >= 9 Hz", "fft_mse_slope_per_hz")] == pytest.approx(1e-4)
    summary = build_summary(tmp_path)
    assert summary[summary.experiment == F.FIG4].status.tolist() == ["claim holds"]
