"""The Pendulum experiment (Table 5) end to end on a tiny smoke configuration."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import torch

from romae.compendium import report
from romae.data import pendulum as P
from romae.experiments import pendulum as PE


def titles(fig) -> str:
    """Every title of a figure (its suptitle and its panels'), for checking what they say."""
    sup = fig._suptitle.get_text() if fig._suptitle is not None else ""
    return " | ".join([sup] + [a.get_title() for a in fig.axes])


def _tiny(**kw):
    return dataclasses.replace(PE.config("smoke"), epochs=1, data=P.PendulumConfig(n_train=32, n_valid=16, n_test=16),
                               **kw)


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="head"):
        PE.PendulumRun(head="mean")
    with pytest.raises(ValueError, match="pixel_norm"):
        PE.PendulumRun(pixel_norm="imagenet")


def test_smoke_run_reports_both_metric_conventions(tmp_path, monkeypatch):
    monkeypatch.setitem(PE.PROFILES, "smoke", _tiny(authors_variant=True))
    reports, cache = tmp_path / "reports", tmp_path / "cache"
    res = PE.run("smoke", reports_dir=reports, cache_dir=cache)
    assert list(res["per_seed"].variant) == ["ours", "authors' configuration"]
    assert res["variants"]["authors' configuration"]["config"].head == "cls"
    row = res["per_seed"].iloc[0]
    # per-sequence sum over 50 x 2 outputs = 100 x the per-element MSE (which is quoted x 1e-3)
    assert row.test_authors_logged == pytest.approx(100 * row["test_mse_x1e-3"] / 1e3, rel=1e-5)
    mean, std = res["pixel_stats"]
    assert 0.05 < mean < 0.6 and 0.05 < std < 0.6  # standardised with real statistics, not the authors' 0.002
    results = pd.read_csv(reports / "results.csv")
    assert set(results.setting) == {"test MSE, per element", "test, authors' logged metric",
                                    "authors' configuration: test MSE, per element",
                                    "authors' configuration: test, authors' logged metric"}
    # every row carries the run's facts beside the paper profile's (20 seeds, 50 epochs, 2,000 sequences)
    for r in results.itertuples():
        fields = json.loads(r.scale)
        assert fields["seeds"] == [1, 20] and fields["epochs"] == [1, 50] and fields["data"] == [32, 2000]
        assert report.qualifiers(r.scale, "quick") == ["fewer seeds", "reduced"]
        assert json.loads(r.learned)["predictor"] == PE.TRIVIAL
    table = pd.read_csv(reports / "tables" / "table5_pendulum.csv")
    assert {"S5", "RoMAE (paper)", "RoMAE (ours)"} <= set(table.model)
    # like with like: the paper's 3.32 is in the logged unit, ours per element are compared with S5
    paper = table[table.model == "RoMAE (paper)"].iloc[0]
    assert paper.metric == "sum_per_sequence" and paper.value == 3.32
    assert table[(table.model == "RoMAE (ours)") & (table.metric == "mse_x1e-3")].compare_with.iloc[0].startswith("S5")
    out = PE.unit_outcome(res)
    assert out["outcome"] in ("logged sum", "per element", "neither", "withheld")
    assert ("Outcome" in out["text"]) != (out["outcome"] == "withheld")
    again = PE.run("smoke", reports_dir=reports, cache_dir=cache)  # cached: no retraining, same numbers
    pd.testing.assert_frame_equal(res["per_seed"], again["per_seed"])
    assert len(list(cache.glob("pendulum_model-*.pt"))) == 2  # ours and the authors' configuration
    for plot in (PE.plot_predictions, PE.plot_learning_curves, PE.plot_comparison):
        assert "(smoke profile, fewer seeds, reduced)" in titles(plot(res))


def _fake(per_element: float, logged: float, flags: str = "", authors: bool = True, trivial: float = 400.0) -> dict:
    f = pd.DataFrame({"test_mse_x1e-3": [per_element] * 3, "test_authors_logged": [logged] * 3})
    variants = {"ours": dict(per_seed=f, flags="")}
    if authors:
        variants[PE.AUTHORS] = dict(per_seed=f, flags=flags, trivial={"test_mse_x1e-3": trivial})
    return dict(profile="quick", variants=variants)


def test_unit_outcome_is_computed_from_the_numbers():
    assert PE.unit_outcome(_fake(31.0, 3.10))["outcome"] == "logged sum"
    assert PE.unit_outcome(_fake(3.30, 0.033))["outcome"] == "per element"
    assert PE.unit_outcome(_fake(10.0, 1.0))["outcome"] == "neither"
    assert PE.unit_outcome(_fake(31.0, 3.10, flags="loss spikes"))["outcome"] == "withheld"
    assert PE.unit_outcome(_fake(31.0, 3.10, trivial=35.0))["outcome"] == "withheld"  # 0.89x the constant: not learned
    assert PE.unit_outcome(_fake(31.0, 3.10, trivial=40.0))["outcome"] == "logged sum"  # 0.78x: learned (the one gate, 0.8x)
    assert PE.unit_outcome(_fake(31.0, 3.10, authors=False))["outcome"] == "not run"
    assert "3 of 20 seeds" in PE.unit_outcome(_fake(31.0, 3.10))["text"]


def test_like_for_like_references():
    refs = PE.references()
    assert refs["per element"]["reference"] == "S5" and refs["per element"]["paper"] == 3.41
    assert refs["logged sum"]["reference"] == "paper" and refs["logged sum"]["paper"] == 3.32


def test_authors_cls_head_predicts_every_frame(tmp_path):
    run = _tiny(head="cls", pixel_norm="authors")
    model = PE.RoMAEForPrediction(run.model_config())
    splits = P.load(run.data, cache_dir=tmp_path)
    data = PE.tensors(splits["test"], *PE.pixel_stats(run, splits["train"]["images"]))
    assert data["values"].shape == (16, 50, 576) and data["values"].abs().max() > 100  # the authors' ~476x scale
    pred = PE.predict(model, data)
    assert pred.shape == (16, 50, 2) and torch.isfinite(pred).all()
    assert np.isfinite(model(data["values"], data["positions"], data["labels"])[1].item())
