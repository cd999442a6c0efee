"""The paper profile's dry run (ROMAE_MAX_STEPS, `romae.runtime`): every distinct training once, at the paper's
model and sequence length, for a few steps, on capped evaluation sets, every row labelled a dry run."""

import pandas as pd
import pytest

from romae import runtime


@pytest.fixture
def dry(monkeypatch):
    monkeypatch.setenv("ROMAE_MAX_STEPS", "2")
    monkeypatch.setenv("ROMAE_DEVICE", "cpu")
    assert runtime.dry_run()


def _notes(reports) -> pd.Series:
    return pd.read_csv(reports / "results.csv").note


def test_pendulum_paper_dry_run_trains_each_variant_once(dry, tmp_path):
    from romae.experiments import pendulum

    cfg = pendulum.config("paper")
    assert len(cfg.seeds) == 20 and cfg.authors_variant  # what the dry run cuts down
    res = pendulum.run("paper", reports_dir=tmp_path, cache_dir=tmp_path / "cache")
    per_seed = res["per_seed"]
    assert sorted(per_seed.variant) == ["authors' configuration", "ours"]  # both trainings, one seed each
    assert set(per_seed.seed) == {cfg.seeds[0]} and set(per_seed.steps) == {2}
    test = res["test"]  # a few generated sequences of the paper's shapes: 50 kept frames of 24 x 24
    assert test["images"].shape[0] == runtime.DRY_EVAL and test["images"].shape[1:] == (50, 24, 24)
    notes = _notes(tmp_path)
    assert len(notes) and notes.str.startswith("DRY RUN").all()
    assert not (tmp_path / "cache").exists()  # nothing cached


def test_frequency_paper_dry_run_evaluates_every_frequency_on_few_series(dry, tmp_path):
    from romae.experiments import frequency

    cfg = frequency.config("paper")
    res = frequency.run("paper", reports_dir=tmp_path, cache_dir=tmp_path / "cache", checkpoints=False)
    assert res["steps"] == 2
    one, two = res["one"], res["two"]
    assert set(one.f1) == set(cfg.test_freqs) and len(one) == 2 * len(cfg.test_freqs)  # paper: 200 per frequency
    pairs = len(cfg.test_freqs) * (len(cfg.test_freqs) - 1) // 2
    assert len(two) == pairs  # paper: 200 per pair
    assert _notes(tmp_path).str.startswith("DRY RUN").all()


def _labelled_dry(reports) -> None:
    notes = _notes(reports)
    assert len(notes) and notes.str.startswith("DRY RUN").all() and notes.str.contains(runtime.DRY_LABEL).all()


def test_uea_paper_dry_run_generates_table6_shapes_without_data(dry, tmp_path):
    from romae.experiments import uea

    cfg = uea.config("paper")
    for name, st in uea.PAPER_STATS.items():  # the UEA archive's sizes, 30 % of each series' steps dropped
        d = uea.build(name, cfg, raw=uea.dry_raw(name, cfg))
        assert (len(d["train"]), len(d["test"])) == (min(st["n_train"], runtime.DRY_EVAL),
                                                      min(st["n_test"], runtime.DRY_EVAL))
        assert d["train"].token_dim == st["channels"] and len(d["classes"]) == st["classes"] and d["generated"]
        lengths = (~d["train"].tensors["pad_mask"]).sum(1)  # kept steps per series: the archive's extremes
        assert (int(lengths.min()), int(lengths.max())) == (st["min_len"], st["max_len"])
    res = uea.run("paper", ["LSST"], data_root=tmp_path, reports_dir=tmp_path, cache_dir=tmp_path / "cache")
    f = res["per_seed"]  # pre-trained and from scratch, all labels and 2 per class, one seed, 2 steps each
    assert len(f) == 4 and set(f.seed) == {cfg.seeds[0]} and set(f.finetune_steps) == {2}
    assert set(f.pretrain_steps.dropna()) == {2}
    assert res["found"] == ["LSST"] and not res["missing"]
    assert f"LSST ({runtime.DRY_LABEL})" in res["table"].columns  # not in the published LSST column
    _labelled_dry(tmp_path)
    assert not (tmp_path / "cache").exists()


def test_elasticc_paper_dry_run_generates_atat_shapes_not_the_snana_sample(dry, tmp_path):
    from romae import store
    from romae.data import elasticc
    from romae.experiments import elasticc as X

    obs, meta = elasticc.generate(2)
    assert sorted(meta.label.unique()) == sorted(elasticc.CLASSES) and set(obs.band) == set(elasticc.BANDS)
    folder, _ = X._generated_store("dry-elasticc", elasticc, 2, 0)
    lengths = store.TokenStore(folder, max_per_variable=elasticc.MAX_PER_BAND).lengths
    assert int(lengths.max()) == elasticc.MAX_PER_BAND * len(elasticc.BANDS)  # 390 tokens, ATAT's cap
    sample = tmp_path / "elasticc" / elasticc.SAMPLE  # a one-class SNANA sample is not ELAsTiCC
    sample.mkdir(parents=True)
    for part in ("HEAD", "PHOT"):
        (sample / f"X-0010_{part}.FITS.gz").write_bytes(b"")
    cfg = X.config("paper")
    assert X.dry_generated(cfg, tmp_path) and not X.dry_generated(X.config("smoke"), tmp_path)
    res = X.run("paper", data_root=tmp_path, reports_dir=tmp_path, cache_dir=tmp_path / "cache", progress=False)
    d, f = res["data"], res["per_seed"]
    assert d["generated"] and not d["stand_in"] and d["classes"] == list(elasticc.CLASSES)
    assert len(d["test"]) == len(elasticc.CLASSES) and len(d["train"]) <= runtime.DRY_EVAL
    assert len(f) == 2 * len(cfg.encoders) and set(f.finetune_steps) == {2}  # per encoder: pre-trained, scratch
    assert f.setting.str.endswith(", generated (dry run)").all()
    history = pd.DataFrame(next(iter(res["results"].values()))["finetune_history"])
    assert list(history.dropna(subset=["loss"]).step) == [1, 2] and history.val_loss.notna().sum() == 2  # curves
    _labelled_dry(tmp_path)


def test_physionet_paper_dry_run_generates_records_of_the_benchmark_shape(dry, tmp_path):
    from romae.data import physionet as P
    from romae.experiments import physionet as E

    df = E.dry_records()
    sizes = df.groupby("record_id").size()
    assert df.variable.nunique() == len(P.VARIABLES) == 41 and df.time.between(0, 48).all()
    assert int(sizes.max()) == E.PAPER_MAX_TOKENS and not df.duplicated(["record_id", "time", "variable"]).any()
    assert (df[df.variable < len(P.DESCRIPTORS)].time == 0).all()
    res = E.run("paper", data_root=tmp_path, reports_dir=tmp_path, cache_dir=tmp_path / "cache")
    d = res["data"]
    assert d["source"] == runtime.DRY_LABEL
    assert int(d["train"].groupby("record_id").size().max()) == E.PAPER_MAX_TOKENS  # the paper's padded length
    assert d["train"].record_id.nunique() <= runtime.DRY_EVAL and d["test"].record_id.nunique() <= 8
    assert set(res["trained"]) == {"RoMAE", "RoMAE, raw time"}
    assert all(t["steps"] == 2 for t in res["trained"].values())
    assert set(res["eval"]["mse"].draw) == {0, 1}
    _labelled_dry(tmp_path)


def test_compute_paper_dry_run_times_a_couple_of_steps_per_setting(monkeypatch):
    from romae.experiments import compute

    monkeypatch.setenv("ROMAE_DEVICE", "cpu")
    full = compute.profile_config("paper")
    assert full.device == "cpu" and (full.rounds, full.steps) == (3, 20)  # ROMAE_DEVICE picks the device
    monkeypatch.setenv("ROMAE_MAX_STEPS", "2")
    dry = compute.profile_config("paper")
    assert (dry.rounds, dry.steps, dry.sweep_steps, dry.roofline_steps, dry.roofline_min_seconds) == (1, 2, 1, 1, 0)
    assert dry.roofline_workloads == full.roofline_workloads  # every setting still timed
    assert dry.sweep_lengths == tuple(n for n in full.sweep_lengths if n <= compute.DRY_LENGTH)
    assert compute.PROFILES["paper"].steps == 20  # the profile itself is unchanged


def _fake_pretrain_finetune(calls):
    """A stand-in for `recipe.pretrain_finetune` that records its arguments (RoMAE-small at the paper's 196-512
    tokens takes minutes on 2 cores even for 2 steps: `make reproduce ... MAX_STEPS=2 --only 10 11` trains)."""
    import torch

    def fake(name, train, test, model, **kw):
        calls.append(dict(name=name, train=train, test=test, model=model, **kw))
        return dict(metrics=dict(accuracy=0.0, macro_f1=0.0), outputs=torch.zeros(len(test), kw["n_outputs"]),
                    pretrained_state=None, pretrain_history=[], finetune_history=[],
                    steps=dict(pretrain=2 if kw["pretrain"] else None, finetune=2),
                    seconds=dict(pretrain=0.0 if kw["pretrain"] else None, finetune=0.0))
    return fake


def test_tiny_imagenet_paper_dry_run_generates_the_papers_images_without_data(dry, tmp_path, monkeypatch):
    from romae.data.files import DataMissing
    from romae.experiments import tiny_imagenet as X

    d = X.dry_split("val")
    assert d["images"].shape == (runtime.DRY_EVAL, 3, 64, 64) and d["images"].dtype.name == "uint8"
    assert len(d["classes"]) == 200 and d["labels"].max() < 200 and len(set(d["labels"])) == runtime.DRY_EVAL
    calls = []
    monkeypatch.setattr(X, "pretrain_finetune_kept", _fake_pretrain_finetune(calls))
    res = X.run("paper", data_root=tmp_path / "empty", reports_dir=tmp_path, cache_dir=tmp_path / "cache")
    assert res["data"]["source"] == "generated"
    assert [c["model"].pos_encoding for c in calls] == ["rope", "rope", "absolute"]  # each variant, one seed
    assert {c["seed"] for c in calls} == {X.config("paper").seeds[0]}
    for c in calls:  # RoMAE-small on 64-px images resized to 224 px: 14 x 14 patches of 16 x 16 x 3, 200 classes
        assert c["train"].n_tokens == 196 and c["train"].token_dim == 768 and c["n_outputs"] == 200
        assert c["train"].grids.shape[-2:] == (64, 64) and c["train"].size == (224, 224)
        assert c["model"].encoder == X.size("small") and c["pretrain"] is not None
        assert len(c["test"]) == runtime.DRY_EVAL and c["train"].augment is not None  # RandAugment in fine-tuning
    _labelled_dry(tmp_path)
    monkeypatch.delenv("ROMAE_MAX_STEPS")  # outside a dry run nothing is generated
    with pytest.raises(DataMissing, match="tiny_imagenet"):
        X.run("paper", data_root=tmp_path / "empty", reports_dir=tmp_path)


def test_esc50_paper_dry_run_generates_clips_and_pretraining_sets_without_data(dry, tmp_path, monkeypatch):
    from romae.data.files import DataMissing
    from romae.experiments import esc50 as X

    d = X.dry_clips()
    assert d["waves"].shape == (X.DRY_CLIPS, 5 * 16000) and len(d["classes"]) == 50
    assert set(d["folds"]) == {1, 2, 3, 4, 5} and {0, 10, 40} <= set(d["labels"])  # the notebook shows these
    calls = []
    monkeypatch.setattr(X.experiment, "pretrain_finetune_kept", _fake_pretrain_finetune(calls))
    res = X.run("paper", data_root=tmp_path / "empty", reports_dir=tmp_path, cache_dir=tmp_path / "cache")
    assert [c["name"] for c in calls] == ["esc50_audioset", "esc50_librispeech"]  # each pre-training, once
    assert list(res["views"]) == ["fold 1"] and set(res["per_run"].split) == {"fold 1"}  # one of the five folds
    test_folds = d["folds"][res["views"]["fold 1"]["test_idx"]]
    assert set(test_folds) == {1} and 1 not in set(d["folds"][res["views"]["fold 1"]["train_idx"]])
    for c in calls:  # SSAST's 16 x 16 patches of 128-bin fbank: 1,024 frames to pre-train, ESC-50's 498 -> 512
        assert c["pretrain_data"].grids.shape[1:] == (1, 1024, 128) and c["pretrain_data"].n_tokens == 512
        assert c["train"].n_tokens == 256 and c["train"].token_dim == 256 and c["n_outputs"] == 50
        assert c["model"].encoder == X.size("small") and c["key"]["generated"] == X.DRY_CLIPS
    assert res["table"].model.str.contains("RoMAE-small, AudioSet-20k pre-training").any()  # Table 3's rows
    _labelled_dry(tmp_path)
    assert _notes(tmp_path).str.contains("the first fold only").all()
    monkeypatch.delenv("ROMAE_MAX_STEPS")
    with pytest.raises(DataMissing, match="esc50"):
        X.run("paper", data_root=tmp_path / "empty", reports_dir=tmp_path)


def test_esc50_reads_a_few_clips_per_fold_when_asked():
    from romae.data import catalog, esc50

    if catalog.unavailable("esc50-subset"):
        pytest.skip(catalog.unavailable("esc50-subset"))
    d = esc50.load(progress=False, per_fold=2)
    full = esc50.load(progress=False)["folds"]  # the subset: fold 4 and a few clips of other folds
    assert len(d["waves"]) == len(d["meta"]) == sum(min(2, (full == k).sum()) for k in set(full))
    assert (d["folds"] == 4).sum() == 2 and set(d["folds"]) == set(full)
