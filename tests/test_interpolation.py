"""Spiral and Synthetic generators, the padding of variable observed counts, and the smoke experiment."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import torch

from romae.data import spiral as S
from romae.data import synthetic as Y
from romae.experiments import interpolation as I
from romae.masking import pad_observed
from romae.model import RoMAEForPreTraining


def test_spirals_follow_the_prescription():
    d = S.spirals("train")
    assert d["values"].shape == (200, 75, 2) and d["t"].shape == (75,)
    assert np.isclose(d["t"][-1], 74 * 6 * np.pi / 149)
    assert (d["observed"].sum(1) == 30).all()
    # noise sigma 0.1 per coordinate; a, b spreads 0.02 around 0 and 0.3
    assert abs((d["values"] - d["clean"]).std() - 0.1) < 0.005
    assert abs(d["a"].std() - 0.02) < 0.005 and abs(d["b"].mean() - 0.3) < 0.005
    assert 0.35 < d["clockwise"].mean() < 0.65
    # counter-clockwise spirals start at (a + 5, 0) and wind outwards around (5, 0) ...
    ccw = ~d["clockwise"]
    np.testing.assert_allclose(d["clean"][ccw, 0, 0], d["a"][ccw] + 5, atol=1e-5)
    xy = d["clean"][ccw][:, 10:] - np.array([5.0, 0.0])
    cross = xy[:, :-1, 0] * xy[:, 1:, 1] - xy[:, :-1, 1] * xy[:, 1:, 0]
    assert (cross > 0).all() and (np.diff(np.hypot(*xy.transpose(2, 0, 1)), axis=1) > 0).all()
    # ... the "clockwise" ones (mirror chirality, reversed in time) wind inwards around (-5, 0)
    xy = d["clean"][d["clockwise"]] - np.array([-5.0, 0.0])
    assert (np.diff(np.hypot(*xy.transpose(2, 0, 1)), axis=1) < 0).all()


def test_spiral_train_and_test_are_disjoint_and_trials_differ():
    train, test = S.spirals("train"), S.spirals("test")
    assert not np.isin(test["a"], train["a"]).any()  # the authors' test set reused training draws
    t1 = S.spirals("test", trial=1)
    np.testing.assert_array_equal(test["clean"], t1["clean"])  # same curves ...
    assert not np.array_equal(test["values"], t1["values"])  # ... re-drawn noise and observed points
    assert not np.array_equal(test["observed"], t1["observed"])
    np.testing.assert_array_equal(S.spirals("test")["values"], test["values"])  # deterministic
    with pytest.raises(ValueError, match="differ"):
        S.SpiralConfig(test_seed=0)
    with pytest.raises(ValueError, match="split"):
        S.spirals("valid")


def test_spiral_rmse():
    target = np.zeros((2, 3, 2))
    pred = target.copy()
    pred[0, 1] = [3.0, 4.0]  # error 5 on one hidden point
    hidden = np.array([[True, True, False], [False, False, False]])
    assert S.rmse(pred, target, hidden) == pytest.approx(np.sqrt(25 / 2))


def test_contiformer_spirals_follow_its_protocol():
    """ContiFormer's spiral.py: 150 points on [0, 6 pi], noise 0.05 on the raw coordinates, min-max normalised over
    all 300 clean trajectories; 50 of the first 75 points observed, one set shared by the test spirals."""
    cfg = S.ContiFormerConfig()
    train, test = S.contiformer_spirals("train"), S.contiformer_spirals("test")
    assert train["values"].shape == (200, 150, 2) and test["values"].shape == (100, 150, 2)
    assert train["t"].shape == (150,) and np.isclose(train["t"][-1], 6 * np.pi)
    # each coordinate's min and max over ALL clean points (train and test) are 0 and 1; clean and noisy share the map
    both = np.concatenate([train["clean"], test["clean"]])
    np.testing.assert_allclose(both.min(axis=(0, 1)), 0, atol=1e-6)
    np.testing.assert_allclose(both.max(axis=(0, 1)), 1, atol=1e-6)
    lo, hi = S.contiformer_range(cfg)
    raw_noise = (train["values"] - train["clean"]) * (hi - lo)  # back in raw units
    assert abs(raw_noise.std() - 0.05) < 0.002 and abs(raw_noise.mean()) < 0.002
    # the same curves as `spirals`' sets, continued from 75 to 150 points (same seeds, same geometry)
    np.testing.assert_allclose(train["clean"][:, :75] * (hi - lo) + lo, S.spirals("train")["clean"], atol=1e-4)
    assert not np.isin(test["a"], train["a"]).any()  # disjoint streams
    # 50 of the first 75 observed, one set for every test spiral; training draws its own sets per batch
    obs = test["observed"]
    assert obs.shape == (100, 150) and (obs.sum(1) == 50).all() and not obs[:, 75:].any()
    assert (obs == obs[0]).all() and "observed" not in train
    t1 = S.contiformer_spirals("test", trial=1)  # a trial re-draws the noise and the observed set, not the curves
    np.testing.assert_array_equal(t1["clean"], test["clean"])
    assert not np.array_equal(t1["observed"], obs) and not np.array_equal(t1["values"], test["values"])
    np.testing.assert_array_equal(S.contiformer_spirals("test")["values"], test["values"])  # deterministic
    for bad in (dict(n_obs=76), dict(test_seed=0), dict(train_target="both")):
        with pytest.raises(ValueError):
            S.ContiFormerConfig(**bad)


def test_contiformer_scores_by_hand():
    """spiral.py's formulas: RMSE = sqrt(mean over spirals and points of the squared error summed over (x, y)), MAE
    likewise with |error|, over every point; and the RMSE at the unobserved points alone."""
    target = np.zeros((2, 3, 2))
    pred = target.copy()
    pred[0, 1] = [3.0, 4.0]  # squared error 25, absolute 7 (unobserved)
    pred[1, 2] = [0.0, 1.0]  # squared error 1, absolute 1 (observed)
    observed = np.array([[True, False, False], [False, False, True]])
    got = S.contiformer_scores(pred, target, observed, n_window=2)
    assert got["rmse"] == pytest.approx(np.sqrt(26 / 6)) and got["mae"] == pytest.approx(8 / 6)
    assert got["rmse_unobserved"] == pytest.approx(np.sqrt(25 / 4))
    # interpolation: the first 2 points of each spiral (observed ones included); extrapolation: the third
    assert got["rmse_interpolation"] == pytest.approx(np.sqrt(25 / 4)) and got["mae_interpolation"] == pytest.approx(7 / 4)
    assert got["rmse_extrapolation"] == pytest.approx(np.sqrt(1 / 2)) and got["mae_extrapolation"] == pytest.approx(1 / 2)
    for bad in (0, 3, -1):
        with pytest.raises(ValueError, match=f"n_window .*got {bad}"):
            S.contiformer_scores(pred, target, observed, n_window=bad)
    p, t = torch.as_tensor(pred), torch.as_tensor(target)  # spiral.py's own lines, in torch
    assert got["rmse"] == pytest.approx(float(torch.sqrt(((p - t) ** 2).sum(dim=-1).mean())))
    assert got["mae"] == pytest.approx(float(torch.abs(p - t).sum(dim=-1).mean()))


def test_contiformer_training_mask():
    """One observed set per batch, 50 of the first 75; the hidden tokens hold the clean targets, the visible ones the
    noisy values."""
    cfg = S.ContiFormerConfig()
    d = S.contiformer_spirals("train", cfg)
    batch = dict(values=torch.as_tensor(d["values"][:8]), target=torch.as_tensor(d["clean"][:8]),
                 positions=torch.as_tensor(d["t"], dtype=torch.float32).expand(8, 1, 150))
    transform = I.window_mask(cfg)
    torch.manual_seed(0)
    out, again = transform(batch), transform(batch)
    assert set(out) == {"values", "positions", "mask"}
    mask = out["mask"]
    assert (mask == mask[0]).all() and (~mask).sum(1).eq(50).all() and mask[:, 75:].all()
    torch.testing.assert_close(out["values"][mask], batch["target"][mask])
    torch.testing.assert_close(out["values"][~mask], batch["values"][~mask])
    assert not torch.equal(again["mask"], mask)  # a fresh set per batch
    model = RoMAEForPreTraining(I.model_config(I.RunConfig(encoder="tiny-shallow"), 2, 100 / 150))
    pred, loss = model(**out)  # the model takes the batch as it is: 100 hidden tokens per spiral
    assert pred.shape == (8, 100, 2) and torch.isfinite(loss)
    model.eval()  # the clean targets at the hidden tokens reach the loss only, never the predictions
    other = torch.where(out["mask"][..., None], torch.randn_like(out["values"]), out["values"])
    torch.testing.assert_close(model(other, out["positions"], mask=out["mask"])[0], model(**out)[0])


def test_synthetic_generator():
    cfg = Y.SyntheticConfig()
    assert cfg.sizes() == dict(train=1600, valid=200, test=200)
    d = Y.curves(cfg)
    assert np.isclose(d["t"][0], 0.02) and np.isclose(d["t"][-1], 1.0)
    # the RBF smoother is a convex combination of the latent values, noise sigma 0.1
    assert (d["clean"] <= d["z"].max(1, keepdims=True) + 1e-5).all()
    assert abs((d["values"] - d["clean"]).std() - 0.1) < 0.003
    tr = Y.split("train", cfg)
    assert set(np.unique(tr["n_obs"])) == set(range(3, 11))  # drawn per series
    assert (tr["observed"].sum(1) == tr["n_obs"]).all()
    te3 = Y.split("test", cfg, n_obs=3)
    assert (te3["n_obs"] == 3).all()
    assert not {r.tobytes() for r in te3["values"]} & {r.tobytes() for r in tr["values"]}  # different series
    with pytest.raises(ValueError):
        Y.SyntheticConfig(obs_min=0)
    with pytest.raises(ValueError, match="n_obs"):
        Y.observe(4, 50, 50, 0)


def test_pad_observed_gives_equal_counts_and_same_predictions():
    torch.manual_seed(0)
    B, N = 4, 12
    observed = torch.zeros(B, N, dtype=torch.bool)
    for i, k in enumerate([3, 5, 7, 3]):
        observed[i, torch.randperm(N)[:k]] = True
    values, positions = torch.randn(B, N, 1), torch.rand(B, 1, N) * 10
    x = pad_observed(values, positions, observed, 3, 7)
    assert x["values"].shape == (B, N + 4, 1)
    assert (x["mask"].sum(1) == N - 3).all() and (x["pad_mask"].sum(1) == 4).all()
    assert (~x["mask"][:, :N] == observed).all()
    cfg = I.model_config(I.RunConfig(encoder="tiny-shallow"), token_dim=1)
    model = RoMAEForPreTraining(cfg).eval()
    recon = model.reconstruct(x["values"], x["positions"], x["mask"], x["pad_mask"])[:, :N]
    # padding changes nothing: row 1 (5 observed) alone, without padding, gives the same predictions
    alone = model.reconstruct(values[1:2], positions[1:2], ~observed[1:2])
    torch.testing.assert_close(recon[1:2], alone, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="observed counts"):
        pad_observed(values, positions, observed, 4, 7)


def test_smoke_experiment_writes_reports(tmp_path, monkeypatch):
    smoke = I.config("smoke")
    tiny = dataclasses.replace(smoke, synthetic_data=Y.SyntheticConfig(n=100), n_trials=2)
    monkeypatch.setitem(I.PROFILES, "smoke", tiny)
    reports, cache = tmp_path / "reports", tmp_path / "cache"
    res = I.run("smoke", reports_dir=reports, cache_dir=cache)
    trials = res["spiral"]["runs"][0]["trials"]
    assert len(trials) == 2 and (trials.rmse_clean > 0).all()
    results = pd.read_csv(reports / "results.csv")
    assert {"Spiral", "Synthetic, 3-10 observed", "Synthetic, 20 observed"} <= set(results.setting)
    assert np.isfinite(results.ours).all()
    table = pd.read_csv(reports / "tables" / f"{I.EXPERIMENT}.csv")
    assert {"ContiFormer", "HeTVAE", "RoMAE-tiny (ours)"} <= set(table.model)
    again = I.run("smoke", reports_dir=reports, cache_dir=cache)  # from the cache, same numbers
    pd.testing.assert_frame_equal(trials, again["spiral"]["runs"][0]["trials"])
    assert len(list(cache.glob("spiral_model-*.pt"))) == 1
    # Spiral in ContiFormer's protocol: its own kept training and rows, right under ContiFormer's published row
    assert len(list(cache.glob("spiral_contiformer_model-*.pt"))) == 1
    cf = results[results.setting == I.CONTIFORMER].set_index("metric")
    assert set(cf.index) == set(I.CONTIFORMER_METRICS) and np.isfinite(cf.ours).all()
    assert {"rmse_interpolation", "rmse_extrapolation"} <= set(cf.index)
    assert (cf.experiment == I.EXPERIMENT).all() and "noisy observed values are scored" in cf.note["rmse"]
    assert json.loads(cf.learned["rmse"])["predictor"] == I.TRIVIAL["spiral_contiformer"]
    cf_trials = pd.concat([r["trials"] for r in res["spiral_contiformer"]["runs"]])
    assert cf.ours["rmse"] == pytest.approx(cf_trials.rmse.mean()) and len(cf_trials) == 2
    order = list(zip(table.benchmark, table.model))
    at = order.index(("Spiral", "ContiFormer"))
    assert order[at + 1: at + 4] == [(I.CONTIFORMER, "RoMAE-tiny (ours)")] * 3
    assert set(res["flags"]) == {"Spiral", "Synthetic", I.CONTIFORMER}
    pd.testing.assert_frame_equal(cf_trials, pd.concat([r["trials"] for r in again["spiral_contiformer"]["runs"]]))
    from romae.experiments import interpolation_figures as F

    for plot in (F.plot_fig7, F.plot_fig8, F.plot_learning_curves, F.plot_contiformer):
        fig = plot(res)
        text = " ".join([fig._suptitle.get_text() if fig._suptitle else ""] + [a.get_title() for a in fig.axes])
        assert "smoke profile" in text and "reduced)" in text  # Synthetic's also says "fewer seeds"
    # the facts behind each row, and the trivial-predictor check where the paper's value is
    for r in results.itertuples():
        assert set(json.loads(r.scale)) == {"epochs", "seeds", "data", "model", "positions"}
    learned = results.set_index(["setting", "metric"]).learned
    assert not json.loads(learned["Synthetic, 3-10 observed", "mse_noisy"])["ok"]  # one epoch: not learned
    assert json.loads(learned["Spiral", "rmse_clean"])["predictor"] == I.TRIVIAL["spiral"]
    # the Spiral diagnostics: every reading of the model's error, the predictors without training, the paper's
    diag = I.spiral_diagnostics(res).set_index("predictor").rmse
    assert len(diag) == len(I.SPIRAL_READINGS) + 6 and np.isfinite(diag).all()
    assert diag[I.SPIRAL_READINGS["rmse_clean_per_coordinate"]] == pytest.approx(
        diag[I.SPIRAL_READINGS["rmse_clean"]] / np.sqrt(2))
    # notebook 15's figures mark what they compare with: the floor from the diagnostics, the peers' stds, the seeds
    fig = F.plot_table7(res, I.spiral_diagnostics(res))
    labels = " ".join(t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts())
    labels = labels.replace("\n", " ")  # long labels are wrapped
    # the legends below the panels never squeeze them, and the Synthetic protocols' tick labels never overprint
    fig.canvas.draw()
    assert all(ax.get_position().width > 0.25 for ax in fig.axes[:2]), [ax.get_position().width for ax in fig.axes]
    ticks = [t.get_window_extent() for t in fig.axes[1].get_xticklabels() if t.get_text()]
    assert len(ticks) >= 2 and all(u.x1 < v.x0 for u, v in zip(ticks, ticks[1:]))
    assert f"{diag[F.FLOOR]:.4f}" in labels and "HeTVAE (peer, protocol not stated): 0.223 +- 0.07" in labels
    assert "noise variance" in labels and "not a bound" in labels
    # ContiFormer's number is another protocol's: named in the legend, no point on the panel's axis
    assert "ContiFormer (peer) 0.49: another protocol" in labels
    assert not any(0.3 < y < 0.7 for line in fig.axes[0].get_lines() for y in line.get_ydata())
    assert "one seed (seed 0)" in fig.axes[0].get_title() and fig.axes[0].get_xlabel()
    assert "ours in ContiFormer's protocol" in labels
    fig = F.plot_contiformer(res)
    assert "ContiFormer's protocol" in fig._suptitle.get_text() and "RMSE" in fig.axes[0].get_title()
    assert all(ax.get_ylabel() for ax in F.plot_fig8_marked(res).axes[::3])
    curves = F.plot_training_curves(res)
    assert all(any(line.get_linestyle() == ":" for line in ax.get_lines()) for ax in curves.axes)
    curves.canvas.draw()  # the legends sit under the panels, off the curves
    assert all(ax.get_legend().get_window_extent().y1 <= ax.get_window_extent().y0 for ax in curves.axes)
    per_protocol = F.synthetic_protocols(res)
    n = len(res["synthetic"]["runs"])
    assert per_protocol.loc["3-10", f"mse_noisy, mean of {n} seeds"] == pytest.approx(
        results.set_index(["setting", "metric"]).ours["Synthetic, 3-10 observed", "mse_noisy"])
    # the decoder-depth variant: the notebook's own Spiral read from res, the 12-block one trained beside it
    from romae.experiments import spiral_decoder

    with pytest.raises(ValueError, match="notebook's own Spiral decoder"):
        spiral_decoder.decoder_depth(res, smoke.spiral.decoder, cache_dir=cache)
    with pytest.raises(ValueError, match="unknown model size 'huge'"):
        spiral_decoder.decoder_depth(res, "huge", cache_dir=cache)
    table = spiral_decoder.decoder_depth(res, "tiny", cache_dir=cache)
    assert list(table.decoder) == [smoke.spiral.decoder, "tiny"] and list(table.decoder_blocks) == [2, 12]
    assert table.rmse_clean.iloc[0] == pytest.approx(trials.rmse_clean.mean())  # read, not retrained
    assert len(list(cache.glob("spiral_model-*.pt"))) == 2 and np.isfinite(table.rmse_clean).all()
    text = spiral_decoder.reading(table, tiny.spiral_data.noise_std)
    assert "tiny decoder (12 blocks)" in text and "above the noise floor 0.01" in text


def test_the_spiral_oracle_knows_the_generator_and_sets_a_floor():
    """Least squares in the generator's own family: exact from clean points; from noisy ones well under the noise
    and under linear interpolation (the floor the notebook puts beside the paper's 0.0183)."""
    d = S.spirals("test", trial=0)
    hidden = ~d["observed"]
    assert S.rmse(S.oracle(d["clean"], d["observed"]), d["clean"], hidden) < 1e-4
    floor = S.rmse(S.oracle(d["values"], d["observed"]), d["clean"], hidden)
    noise = S.rmse(d["values"], d["clean"], hidden)
    assert floor < noise / 3 and floor < S.rmse(S.linear_interpolation(d["t"], d["values"], d["observed"]),
                                                d["clean"], hidden)
    t = S.time_grid()
    lin = S.linear_interpolation(t, d["clean"], np.ones_like(d["observed"]))
    assert np.allclose(lin, d["clean"], atol=1e-6)  # every point observed: the data itself


def test_quick_rows_are_reduced_from_their_facts():
    """Spiral (400 of 500 epochs, 1 of 3 seeds) and Synthetic (10 of 50 epochs, 2 of 5 seeds, positions t x 50)."""
    from romae.compendium import report

    quick = I.config("quick")
    spiral, synthetic = I.scale_of("spiral", quick, 1), I.scale_of("synthetic", quick, 2)
    assert spiral["epochs"] == [400, 500] and spiral["seeds"] == [1, 3]
    assert report.qualifiers(spiral, "quick") == ["fewer seeds", "reduced"]
    assert synthetic["epochs"] == [10, 50] and synthetic["seeds"] == [2, 5]
    assert synthetic["positions"] == ["t x 50", "t x 1"]
    assert report.qualifiers(synthetic, "quick") == ["fewer seeds", "positions rescaled", "reduced"]
    paper = I.config("paper")
    assert report.qualifiers(I.scale_of("synthetic", paper, 5), "paper") == []
    assert report.qualifiers(I.scale_of("spiral", paper, 3), "paper") == [] and paper.spiral.seeds == (0, 1, 2)


def test_trivial_predictors_are_the_constants():
    prof = dataclasses.replace(I.config("smoke"), synthetic_data=Y.SyntheticConfig(n=100), n_trials=1)
    t = I.trivial_errors(prof)
    # the series are N(0, 1) latent values smoothed: a constant scores about their variance (~0.5), plus noise
    assert 0.3 < t["Synthetic, 3-10", "mse_noisy"] < 0.8
    assert t["Synthetic, 3-10", "mse_noisy"] > t["Synthetic, 3-10", "mse_clean"]
    assert t["Spiral"] > 1.0  # a spiral's mean is far from its points (radius several units)
    cf = I.trivial_contiformer(prof)  # in [0, 1] coordinates: a constant is far off, the observed values are not
    assert 0.1 < cf["rmse"] < cf["rmse_unobserved"] < 1.0 and cf["mae"] > 0.1
    # the first half holds every observed point (scored by its noisy value), the second none
    assert cf["rmse_interpolation"] < cf["rmse"] < cf["rmse_extrapolation"]


def test_position_scale_reaches_the_model_inputs():
    d = Y.split("test", Y.SyntheticConfig(n=100), n_obs=5)
    x = I.synthetic_tensors(d, 50.0)
    torch.testing.assert_close(x["positions"][0, 0], torch.arange(1, 51, dtype=torch.float32))
    assert "pad_mask" not in x and (x["mask"].sum(1) == 45).all()  # equal counts need no padding
    assert I.config("quick").synthetic.position_scale == 50.0 and I.config("paper").synthetic.position_scale == 1.0


def test_a_spiral_row_over_seeds_replicates_the_seed():
    """Several trained seeds: the row is the mean and std over the seeds of each seed's mean over its trials (the t
    interval then has n_seeds - 1 degrees of freedom); one seed: the mean and std over its trials."""
    runs = [dict(trials=pd.DataFrame(dict(rmse_clean=v))) for v in ([1.0, 3.0], [2.0, 2.0], [6.0, 4.0])]
    m, s = I._over_seeds(runs, "rmse_clean")
    assert m == pytest.approx(3.0) and s == pytest.approx(np.std([2.0, 2.0, 5.0], ddof=1))
    assert I._over_seeds(runs[:1], "rmse_clean") == (pytest.approx(2.0), pytest.approx(np.sqrt(2.0)))
    assert "3 trained seeds" in I._spread(runs) and "one trained model" in I._spread(runs[:1])
