"""Table 6 experiment: the 30 % drop really drops, datasets are found or listed, any UEA dataset runs."""

from __future__ import annotations

import json
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
    baseline = rows[rows.setting.str.endswith("(baseline)")]
    assert set(baseline.setting) == {f"Toy, {labels}{model} (baseline)"
                                     for model in ("1-NN DTW", "MiniRocket", "regridded MiniRocket")
                                     for labels in ("", "2 labelled per class, ")}
    assert baseline.note.str.contains("same 12 test series as RoMAE").all()
    rows = rows[~rows.setting.str.endswith("(baseline)")]
    assert set(rows.setting) == {"Toy", "Toy, from scratch", "Toy, 2 labelled per class, pre-trained",
                                 "Toy, 2 labelled per class, from scratch"}
    assert set(rows.metric) == {"accuracy", "macro_f1"}
    few = res["per_seed"][res["per_seed"].variant.str.contains("labelled")]
    assert (few.n_labelled == 6).all()  # 2 series of each of the 3 classes
    assert rows.ours.between(0, 1).all() and rows.note.str.contains("DEFAULT_FINETUNE").all()
    assert rows.note.str.contains("drop-path 0.1 as lambda*l/(N-1)", regex=False).all()  # a listed deviation
    table = res["table"].set_index("model")
    assert list(table.columns) == ["Toy"]  # only the dataset that ran: no all-NaN published columns
    assert table.notna().all().all()  # and no published row without a value for it
    assert "1-NN DTW (ours, baseline)" in table.index and "majority class (ours, baseline)" in table.index
    b = res["baselines"]
    assert table.loc["1-NN DTW (ours, baseline)", "Toy"] == b[(b.model == "1-NN DTW") & (b.labels == "all labels")].accuracy.iloc[0]
    regridded = b[(b.model == "regridded MiniRocket") & (b.labels == "all labels")].accuracy
    assert table.loc["regridded MiniRocket (ours, baseline, mean of 1 seeds)", "Toy"] == regridded.mean()
    assert f"regridded MiniRocket {U.spread(regridded)}" in U.reading(res)[0]
    # every row carries its facts; the pair's rows carry the verdict of the paired difference
    for r in rows.itertuples():
        fields = json.loads(r.scale)
        assert {"epochs", "seeds", "data", "model", "resolution"} <= set(fields) and fields["seeds"] == [1, 3]
        assert fields["epochs"][0].startswith("fine-tuning" if "from scratch" in r.setting else "pre-training")
        assert "pre-trained minus from scratch (accuracy, paired by seed)" in r.note
        assert json.loads(r.learned)["predictor"] == U.TRIVIAL
    diffs = U.pretraining_differences(res)
    assert list(diffs.labels) == ["all labels", "2 labelled per class"] and (diffs.margin == 1 / 12).all()
    assert diffs.verdict.str.contains("1 seed").all()  # one seed cannot resolve anything
    for plot in (lambda r: U.plot_accuracy(r), lambda r: U.plot_learning_curves(r, "Toy")):
        fig = plot(res)
        assert any("(smoke profile, fewer seeds, reduced)" in a.get_title() for a in fig.axes)  # 1 of 3 seeds


def test_protocol_parameters_are_checked_and_named():
    cfg = U.config("quick", ["BasicMotions"], drop=0.0, encoder="small", labels_per_class="2,5", dropout_at="paper")
    assert (cfg.drop, cfg.encoder, cfg.label_budgets, cfg.dropout_at) == (0.0, "small", (2, 5), "paper")
    assert U.config("quick", ["BasicMotions"], labels_per_class=[]).label_budgets == ()  # no label-scarce pair
    assert U.config("quick", ["BasicMotions"], labels_per_class=["3"]).label_budgets == (3,)  # as --param passes it
    smoke = U.config("smoke", ["BasicMotions"], encoder="", dropout_at="")  # empty: the profile's
    assert (smoke.encoder, smoke.dropout_at) == ("tiny-shallow", "authors")
    for bad, match in ((dict(drop=1.0), "drop: 1.0"), (dict(drop=-0.1), "drop: -0.1"), (dict(drop="x"), "drop: 'x'"),
                       (dict(encoder="huge"), "encoder: unknown model size 'huge'"),
                       (dict(labels_per_class="two"), "labels_per_class: 'two'"),
                       (dict(labels_per_class=[0]), "labels_per_class: 0"),
                       (dict(dropout_at="head"), "dropout_at: 'head'")):
        with pytest.raises(ValueError, match=match):
            U.config("quick", ["BasicMotions"], **bad)
        with pytest.raises(ValueError, match=match):  # before a kernel starts (romae.runner.reproduce's data check)
            U.data_needs("quick", ["BasicMotions"], "", reports_dir="", **bad)


def test_protocol_says_which_one_a_dataset_gets_and_why():
    cfg = U.config("quick", ["BasicMotions", "JapaneseVowels"])
    table6 = U.protocol("BasicMotions", cfg)
    assert table6.startswith("BasicMotions is in Table 6") and "Table 12's fine-tuning" in table6
    assert "30 % of each series' steps dropped; RoMAE-tiny;" in table6
    other = U.protocol("JapaneseVowels", U.config("quick", ["JapaneseVowels"], drop=0.1, labels_per_class=[]))
    assert "JapaneseVowels is not in Table 6" in other and "DEFAULT_FINETUNE" in other
    assert "10 % of each series' steps dropped (Table 6: 30 %)" in other and "no label-scarce pair" in other
    assert "drop, encoder, labels_per_class and dropout_at" in other


def test_a_spread_over_one_seed_is_not_zero():
    assert U.spread([0.6]) == "0.6000 ± n/a over 1 seed"
    assert U.spread([0.5, 0.7]) == "0.6000 ± 0.1414 over 2 seeds"


def test_each_seed_has_its_own_colour_in_the_figures():
    rows = [dict(dataset="Toy", variant=v, seed=seed, accuracy=a, n_labelled=9)
            for v in ("pre-trained", "from scratch") for seed, a in ((69, 0.5), (84, 0.5), (1066, 0.75))]
    hist = {(v, seed): dict(pretrain=[dict(step=1, loss=1.0), dict(step=2, loss=0.5)] if v == "pre-trained" else None,
                            finetune=[dict(step=1, loss=2.0), dict(step=2, loss=1.0)])
            for v in ("pre-trained", "from scratch") for seed in (69, 84, 1066)}
    res = dict(profile="quick", results={"Toy": dict(per_seed=pd.DataFrame(rows), histories=hist,
                                                     scales={"pre-trained": {}, "from scratch": {}})})
    ax = U.plot_accuracy(res).axes[0]
    colours = {tuple(l.get_color()) for l in ax.lines if l.get_marker() == "o"}
    assert len(colours) == 3  # one per seed, not one per variant
    fine = U.plot_learning_curves(res, "Toy").axes[1]
    by_seed = {}
    for line in fine.lines:
        by_seed.setdefault(line.get_label().rsplit("seed ", 1)[1], set()).add(tuple(line.get_color()))
    assert len(by_seed) == 3 and all(len(c) == 1 for c in by_seed.values())
    assert len({next(iter(c)) for c in by_seed.values()}) == 3


def test_fine_tuning_tick_labels_never_overprint():
    """Over three decades of cross-entropy the log axis labels decades only (labelled minor ticks overprinted each
    other in the committed BasicMotions figure); under a decade it labels the minor ticks."""
    import numpy as np

    def labels_overlap(span):
        steps = np.arange(1, 51)
        losses = np.geomspace(2.0, 2.0 / span, len(steps))
        hist = {("pre-trained", 69): dict(pretrain=[dict(step=1, loss=1.0), dict(step=2, loss=0.5)],
                                          finetune=[dict(step=int(s), loss=float(v)) for s, v in zip(steps, losses)])}
        res = dict(profile="quick", results={"Toy": dict(histories=hist, scales={"pre-trained": {}, "from scratch": {}})})
        fig = U.plot_learning_curves(res, "Toy")
        fig.canvas.draw()
        ax = fig.axes[1]
        r = fig.canvas.get_renderer()
        boxes = [t.get_window_extent(r) for t in ax.get_yticklabels(minor=False) + ax.get_yticklabels(minor=True)
                 if t.get_visible() and t.get_text() and ax.get_ylim()[0] <= t.get_position()[1] <= ax.get_ylim()[1]]
        return len(boxes), any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])

    n, overlap = labels_overlap(3000.0)
    assert n >= 2 and not overlap
    n, overlap = labels_overlap(3.0)
    assert n >= 2 and not overlap


def test_rows_are_reduced_only_when_their_facts_differ():
    from romae.compendium import report

    st = U.PAPER_STATS["BasicMotions"]
    r = dict(name="BasicMotions", config=U.config("quick", ["BasicMotions"]), stats=st, full_stats=st,
             data=dict(generated=False))
    full = U.scale_of(r, "pre-trained", 40, 3)  # quick BasicMotions = Tables 12-13 as printed, 3 seeds
    assert full["epochs"] == ["pre-training 400 + fine-tuning 50"] * 2
    assert report.qualifiers(full, "quick") == []
    assert report.qualifiers(U.scale_of(r, "pre-trained", 40, 2), "quick") == ["fewer seeds"]  # 2 of 3 seeds
    scarce = U.scale_of(r, "from scratch, 2 labelled per class", 8, 3)
    assert scarce["data"] == [8, 8] and report.qualifiers(scarce, "quick") == []  # the design, not a reduction
    big = dict(U.PAPER_STATS["LSST"])
    r = dict(name="LSST", config=U.config("quick", ["LSST"]), stats=big, full_stats=big, data=dict(generated=False))
    capped = U.scale_of(r, "pre-trained", big["n_train"], 3)  # quick caps each training at 1,500 steps
    assert capped["epochs"][0] != capped["epochs"][1] and report.qualifiers(capped, "quick") == ["reduced"]
    gen = dict(r, data=dict(generated=True))
    assert "stand-in" in report.qualifiers(U.scale_of(gen, "pre-trained", big["n_train"], 3), "paper")


def test_differences_say_resolved_or_equal():
    rows = [dict(dataset="Toy", variant=v, seed=seed, accuracy=a, n_labelled=40)
            for seed in (69, 84, 1066) for v, a in (("pre-trained", 1.0), ("from scratch", 1.0))]
    test = type("T", (), {"__len__": lambda self: 40})()
    r = dict(name="Toy", per_seed=pd.DataFrame(rows), data=dict(test=test))
    d = U.differences(r).iloc[0]
    assert d.verdict == "equal within +-0.025" and d["flagged"] == ""
    rows = [dict(row, accuracy=row["accuracy"] - (0.2 + 0.01 * i) * (row["variant"] == "from scratch"))
            for i, row in enumerate(rows)]
    d = U.differences(dict(r, per_seed=pd.DataFrame(rows), flags={"from scratch": "loss spikes"})).iloc[0]
    assert d.verdict == "resolved: pre-trained > from scratch" and "loss spikes" in d["flagged"]


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


def test_basicmotions_baselines_on_the_dropped_test_series(data_root):
    d = U.build("BasicMotions", U.config("paper"), data_root)
    base = U.baseline_scores(d, U.config("paper"))
    every = base[base.labels == "all labels"].set_index("model").accuracy
    assert every["1-NN DTW"] == 0.85  # 34 of the 40 test series
    assert every["majority class"] == 0.25  # four balanced classes
    scarce = base[(base.labels == "2 labelled per class") & (base.model == "1-NN DTW")]
    assert list(scarce.seed) == [69, 84, 1066] and (scarce.n_labelled == 8).all()
    for model in ("MiniRocket", "regridded MiniRocket"):  # one run per seed (its kernels), all labels and label-scarce
        rocket = base[base.model == model]
        assert list(rocket.seed) == [69, 84, 1066] * 2 and (rocket.accuracy > 0.25).all(), model


def test_the_reading_says_plainly_where_a_baseline_beats_romae_with_the_same_labels():
    from romae.experiments.uea.tables import _scarce_losses

    per_seed = pd.DataFrame(dict(variant=["pre-trained", "pre-trained, 2 labelled per class"] * 2,
                                 accuracy=[1.0, 0.9, 1.0, 0.95]))
    base = pd.DataFrame(dict(model=["MiniRocket", "1-NN DTW", "majority class"], labels=["2 labelled per class"] * 3,
                             accuracy=[1.0, 0.8, 0.25]))
    text = _scarce_losses(per_seed, base)
    assert "With 2 labelled per class, RoMAE's mean is below MiniRocket's (0.9250 < 1.0000)" in text
    assert _scarce_losses(per_seed.assign(accuracy=1.0), base) == ""
