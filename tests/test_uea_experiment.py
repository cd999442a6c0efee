"""Table 6 experiment: the 30 % drop really drops, datasets are found or listed, any UEA dataset runs."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from romae.experiments import uea as U


def test_drop_steps_removes_thirty_percent_of_each_series_deterministically():
    series = [np.arange(100 * 3, dtype=float).reshape(100, 3), np.ones((7, 3)), np.ones((29, 3))]
    a, b = U.drop_steps(series, 0.3), U.drop_steps(series, 0.3)
    for x, d in zip(series, a):
        gone = np.isnan(d).all(1)
        assert gone.sum() == int(len(x) * 0.3)  # 30, 2, 8
        assert not np.isnan(d[~gone]).any() and np.array_equal(d[~gone], x[~gone])
    assert all(np.array_equal(np.isnan(x), np.isnan(y)) for x, y in zip(a, b))  # fixed seed
    assert not np.isnan(series[0]).any()  # the input is not modified
    other = U.drop_steps(series, 0.3, seed=1)
    assert not np.array_equal(np.isnan(other[0]), np.isnan(a[0]))


def test_config_validates_profile_and_datasets():
    assert U.config("quick", ["BasicMotions"]).datasets == ("BasicMotions",)
    with pytest.raises(ValueError, match="unknown profile"):
        U.config("fast")
    assert U.config("smoke", "BasicMotions,Epilepsy").datasets == ("BasicMotions", "Epilepsy")  # papermill's -p
    assert U.config("smoke", '["BasicMotions"]').datasets == ("BasicMotions",)  # a list written as text
    with pytest.raises(ValueError, match="bad UEA data set name"):
        U.config("smoke", ["../etc"])
    with pytest.raises(ValueError, match="datasets must be a list of names"):
        U.config("smoke", 5)
    assert U.config("paper").finetune("Epilepsy").epochs == 150  # Table 12
    assert U.config("paper").finetune("JapaneseVowels") == U.DEFAULT_FINETUNE
    ft = U.config("paper").finetune_config("BasicMotions", 40)
    assert (ft.optimizer, ft.lr, ft.batch_size, ft.epochs, ft.grad_clip, ft.warmup_fraction) == ("sgd", 1e-2, 8, 50, 1.0, 0.1)
    # quick caps a large dataset's training at 1,500 steps, not BasicMotions'
    assert U.config("quick").pretrain_config(40).epochs == 400
    assert U.config("quick").pretrain_config(2459).epochs == 1500 // 39


def test_labelled_subset_takes_k_per_class():
    from romae import from_sequences

    train = from_sequences([np.ones((4, 1)) * i for i in range(9)], labels=list("aaabbbccc"))
    sub = U.labelled_subset(train, 2, seed=0)
    assert sorted(sub.tensors["labels"].tolist()) == [0, 0, 1, 1, 2, 2]
    assert U.labelled_subset(train, 2, seed=0).ids == sub.ids != U.labelled_subset(train, 2, seed=5).ids
    assert len(U.labelled_subset(train, 5, seed=0)) == 9  # a class with fewer than k: all of it


def test_missing_datasets_are_listed_with_the_way_to_get_them(tmp_path, monkeypatch):
    from romae.data.files import DEFAULT_ROOT, DataMissing

    found, missing, msg = U.find(["Nope"], tmp_path)
    assert found == [] and missing == ["Nope"]
    assert "make data NAMES=uea:Nope" in msg and "aeon-toolkit/<Name>.zip" in msg and str(tmp_path / "uea") in msg
    monkeypatch.delenv("ROMAE_DATA", raising=False)
    found, missing, msg = U.find(["NoSuchSet"])
    assert missing == ["NoSuchSet"] and str(DEFAULT_ROOT / "uea") in msg
    with pytest.raises(DataMissing, match="make data NAMES=uea:Nope"):
        U.run("smoke", ["Nope"], data_root=tmp_path, reports_dir=tmp_path / "reports")
    assert not (tmp_path / "reports" / "results.csv").exists()


def _write_ts(path: Path, cases, labels, classes):
    lines = ["@problemName Toy", "@timeStamps false", "@missing true", "@univariate false", "@dimensions 2",
             "@equalLength false", f"@classLabel true {' '.join(classes)}", "@data"]
    for x, y in zip(cases, labels):
        dims = [",".join("?" if np.isnan(v) else f"{v:.4f}" for v in x[:, c]) for c in range(x.shape[1])]
        lines.append(":".join(dims) + f":{y}")
    path.write_text("\n".join(lines) + "\n")


def test_runs_unchanged_on_an_unseen_unequal_length_dataset(tmp_path):
    """A dataset outside Table 12, unequal lengths and missing values: smoke runs it end to end."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "uea" / "Toy"
    folder.mkdir(parents=True)
    for split, n in (("TRAIN", 18), ("TEST", 12)):
        labels = [("a", "b", "c")[i % 3] for i in range(n)]
        cases = []
        for y in labels:
            T = int(rng.integers(6, 30))
            t = np.arange(T)
            f = {"a": 0.3, "b": 0.9, "c": 1.7}[y]
            x = np.stack([np.sin(f * t), np.cos(f * t)], 1) + 0.1 * rng.normal(size=(T, 2))
            x[rng.integers(T), 1] = np.nan  # a partly missing step
            cases.append(x)
        _write_ts(folder / f"Toy_{split}.ts", cases, labels, ["a", "b", "c"])
    res = U.run("smoke", ["Toy", "Missing"], data_root=tmp_path, reports_dir=tmp_path / "reports",
                cache_dir=tmp_path / "cache")
    assert res["found"] == ["Toy"] and res["missing"] == ["Missing"]
    data = res["results"]["Toy"]["data"]
    lengths = (~data["train"].tensors["pad_mask"]).sum(1)
    assert lengths.min() < lengths.max()  # unequal after the drop
    rows = pd.read_csv(tmp_path / "reports" / "results.csv")
    assert set(rows.setting) == {"Toy", "Toy, from scratch", "Toy, 2 labelled per class, pre-trained",
                                 "Toy, 2 labelled per class, from scratch"}
    assert set(rows.metric) == {"accuracy", "macro_f1"}
    few = res["per_seed"][res["per_seed"].variant.str.contains("labelled")]
    assert (few.n_labelled == 6).all()  # 2 series of each of the 3 classes
    assert rows.ours.between(0, 1).all() and rows.note.str.contains("DEFAULT_FINETUNE").all()
    assert rows.note.str.contains("drop-path 0.1 as lambda*l/(N-1)", regex=False).all()  # a listed deviation
    assert "Toy" in res["table"].columns


@pytest.fixture
def data_root():
    from romae.data import catalog, files

    if why := catalog.unavailable("uea:BasicMotions"):
        pytest.skip(why)
    return files.data_root()


def test_basicmotions_positions_are_the_kept_time_indices(data_root):
    d = U.build("BasicMotions", U.config("paper"), data_root)
    for split in ("train", "test"):
        ds = d[split]
        pad, pos = ds.tensors["pad_mask"], ds.tensors["positions"][:, 0]
        assert (~pad).sum(1).tolist() == [70] * len(ds)  # 100 - 30 steps per series
        series, dropped = d[f"{split}_raw"]
        kept = np.flatnonzero(~np.isnan(dropped[0]).all(1))
        assert pos[0, :70].tolist() == kept.tolist()  # the true indices of the steps that remain
    assert d["train"].classes == ["Standing", "Running", "Walking", "Badminton"]
    # train and test were dropped with different generators: not the same pattern
    assert not np.array_equal(np.isnan(d["train_raw"][1][0]), np.isnan(d["test_raw"][1][0]))
