"""The traps a stranger's own data used to fall into, each pinned by a test that failed before its fix:
config changes on resume, cache keys of arrays, NaN scores and labels, impossible configs, silently
dropped or merged rows and labels, masks that hide a whole sample, predict on the wrong container,
errors that named a sample by its place in a shuffled batch; and the warm-up default."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from romae import RoMAEConfig, RoMAEForPrediction, RoMAEForPreTraining, TrainConfig, from_long, from_sequences, size
from romae import metrics
from romae.compendium.cache import cached, config_hash
from romae.data import uea
from romae.train import ArrayDataset, fit, lr_at, predict, read_config

TOKEN_DIM, N_AXES = 3, 1


def small(**kw) -> RoMAEConfig:
    return RoMAEConfig(**{**dict(token_dim=TOKEN_DIM, n_axes=N_AXES, encoder=size("tiny-shallow", d_model=12, n_heads=2,
                                                                                   d_ff=24),
                                 decoder=size("tiny-shallow", d_model=12, n_heads=2, d_ff=24)), **kw})


def data(n=16, N=6, seed=0, labels=None) -> ArrayDataset:
    g = torch.Generator().manual_seed(seed)
    extra = {} if labels is None else {"labels": labels}
    return ArrayDataset(values=torch.randn(n, N, TOKEN_DIM, generator=g),
                        positions=torch.rand(n, N_AXES, N, generator=g) * 10, **extra)


def tc(**kw) -> TrainConfig:
    return TrainConfig(**{**dict(epochs=3, batch_size=4, lr=1e-2, warmup_steps=0, log_every=1, progress=False,
                                 seed=0), **kw})


# ----------------------------------------------------------------------------- resuming

def test_allowed_config_change_really_trains_at_the_new_learning_rate(tmp_path):
    torch.manual_seed(0)
    fit(RoMAEForPreTraining(small()), data(), tc(), out_dir=tmp_path, max_steps=4, device="cpu")
    torch.manual_seed(0)
    res = fit(RoMAEForPreTraining(small()), data(), tc(lr=1e-4), out_dir=tmp_path, allow_config_change=True,
              device="cpu")
    later = [r for r in res.history if "lr" in r and r["step"] > 4]
    assert later and all(r["lr"] == pytest.approx(lr_at(r["step"] - 1, 12, 0, 1e-4)) for r in later)
    assert read_config(tmp_path)["train"]["lr"] == 1e-4
    with pytest.raises(ValueError, match="optimizer changed"):  # its saved state cannot go on under SGD
        fit(RoMAEForPreTraining(small()), data(), tc(lr=1e-4, optimizer="sgd", epochs=4), out_dir=tmp_path,
            allow_config_change=True, device="cpu")


def test_resume_refuses_a_changed_model_config_without_being_told_it(tmp_path):
    fit(RoMAEForPreTraining(small()), data(), tc(), out_dir=tmp_path, max_steps=2, device="cpu")
    with pytest.raises(ValueError, match="mask_ratio: 0.75 -> 0.5"):
        fit(RoMAEForPreTraining(small(mask_ratio=0.5)), data(), tc(), out_dir=tmp_path, device="cpu")


# ----------------------------------------------------------------------------- the results cache

def test_cache_keys_hash_array_contents_not_their_printout(tmp_path):
    a = np.arange(5000)
    b = a.copy()
    b[2500] = -1  # differs in the middle, which str() elides
    assert str(a) == str(b) and config_hash({"ids": a}) != config_hash({"ids": b})
    t = torch.arange(5000.0)
    u = t.clone()
    u[2500] = -1.0
    assert config_hash({"x": t}) != config_hash({"x": u}) and config_hash({"x": t}) == config_hash({"x": t.clone()})
    df = pd.DataFrame({"v": a})
    assert config_hash({"t": df}) != config_hash({"t": df.assign(v=b)})
    calls = []
    first = cached("subset", {"ids": a}, lambda: calls.append(1) or "A", cache_dir=tmp_path)
    second = cached("subset", {"ids": b}, lambda: calls.append(2) or "B", cache_dir=tmp_path)
    assert (first, second, calls) == ("A", "B", [1, 2])  # not the other subset's result


def test_cache_keys_refuse_what_cannot_be_hashed_faithfully():
    class Thing:
        pass

    with pytest.raises(TypeError, match="cannot hold a Thing faithfully"):
        config_hash({"x": Thing()})


# ----------------------------------------------------------------------------- scores, configs, builders

def test_accuracy_refuses_non_finite_scores():
    y = torch.zeros(4, dtype=torch.long)
    with pytest.raises(ValueError, match="predicted scores must be finite; sample 0 holds nan"):
        metrics.accuracy(y, torch.full((4, 3), float("nan")))
    with pytest.raises(ValueError, match="must be finite"):
        metrics.macro_f1(y, torch.tensor([[0.0, 1.0], [1.0, 0.0], [float("inf"), 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="predictions must be finite"):
        metrics.mse([1.0, 2.0], [1.0, float("nan")])


@pytest.mark.parametrize("base", [0.0, -10.0, float("nan"), float("inf")])
def test_a_rope_base_that_would_erase_positions_is_refused(base):
    with pytest.raises(ValueError, match="rope_base"):
        small(rope_base=base)


@pytest.mark.parametrize("n", [0, -1, 2.5])
def test_an_empty_head_is_refused(n):
    with pytest.raises(ValueError, match="n_outputs"):
        small(n_outputs=n)


def test_from_long_refuses_missing_ids_and_variables():
    df = pd.DataFrame(dict(id=[1.0, 1.0, np.nan], t=[0.0, 1.0, 2.0], var=["a", "b", "a"], x=[1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="column 'id' .* missing in 1 row"):
        from_long(df, id="id", time="t", variable="var", value="x")
    df = df.assign(id=[1, 1, 2], var=["a", None, "a"])
    with pytest.raises(ValueError, match="column 'var' \\(the variable\\) is missing"):
        from_long(df, id="id", time="t", variable="var", value="x")


@pytest.mark.parametrize("labels, match", [([1, "1", 2], "labels mix types"), ([True, 1, 0], "labels mix types"),
                                           (["a", None, "b"], "label of sample 1 is missing"),
                                           (np.array(["a", np.nan, "b"], dtype=object), "label of sample 1 is missing")])
def test_from_sequences_refuses_labels_that_would_merge_or_invent_a_class(labels, match):
    xs = [np.ones((4, 2)) * i for i in range(3)]
    with pytest.raises(ValueError, match=match):
        from_sequences(xs, labels=labels)


def test_from_sequences_keeps_one_type_of_labels_as_it_was():
    xs = [np.ones((4, 2)) * i for i in range(3)]
    assert from_sequences(xs, labels=[2, 1, 2]).classes == [1, 2]
    assert from_sequences(xs, labels=np.array(["b", "a", "b"])).classes == ["a", "b"]
    assert from_sequences(xs, labels=[np.int64(3), np.int64(1), np.int64(3)]).classes == [1, 3]


# ----------------------------------------------------------------------------- masks, predict, errors

def test_a_given_mask_that_hides_every_real_token_of_a_padded_sample_is_refused():
    model = RoMAEForPreTraining(small())
    x, pos = torch.randn(2, 6, TOKEN_DIM), torch.rand(2, N_AXES, 6)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[1, 3:] = True  # sample 1: real tokens 0-2
    mask = torch.zeros(2, 6, dtype=torch.bool)
    mask[0, :3] = True
    mask[1, :3] = True  # every real token of sample 1 hidden (each sample hides 3)
    with pytest.raises(ValueError, match="hides every real \\(non-padded\\) token of sample 1 of the batch"):
        model(x, pos, mask=mask, pad_mask=pad)
    mask[1] = False
    mask[1, [0, 4, 5]] = True  # one real token hidden, two padded: fine
    model(x, pos, mask=mask, pad_mask=pad)


def test_predict_takes_a_dict_of_tensors_and_names_the_wrong_container():
    model = RoMAEForPrediction(small(n_outputs=2))
    d = data(n=5)
    assert torch.equal(predict(model, d.tensors), predict(model, d))
    with pytest.raises(TypeError, match="predict takes a dataset"):
        predict(model, [d[i] for i in range(5)])


def test_predict_returns_class_names():
    train = from_sequences([np.random.default_rng(i).normal(size=(5, TOKEN_DIM)) for i in range(6)],
                           labels=["walk", "run", "sit", "walk", "run", "sit"])
    model = RoMAEForPrediction(small(n_outputs=3))
    names = predict(model, train, as_labels=True)
    assert names.shape == (6,) and set(names) <= {"walk", "run", "sit"}
    assert list(names) == [train.classes[i] for i in predict(model, train).argmax(-1).tolist()]
    with pytest.raises(ValueError, match="no class names"):
        predict(model, data(n=3), as_labels=True)
    with pytest.raises(ValueError, match="needs a classifier"):
        predict(RoMAEForPrediction(small(task="regression")), train, as_labels=True)


def test_non_finite_values_and_labels_are_named_by_their_index_in_the_dataset():
    x = data(n=16)
    x.tensors["values"][11, 2, 0] = float("nan")
    with pytest.raises(ValueError, match="found nan in sample 11 of the training data, token 2"):
        fit(RoMAEForPreTraining(small()), x, tc(), device="cpu")  # shuffled: its place in a batch differs
    y = torch.randn(16, 1)
    y[13] = float("nan")
    with pytest.raises(ValueError, match="labels must be finite, found nan for sample 13 of the training data"):
        fit(RoMAEForPrediction(small(task="regression")), data(n=16, labels=y), tc(), device="cpu")
    ids = from_sequences([np.ones((4, TOKEN_DIM))] * 3)
    ids.ids = ["p-1", "p-2", "p-3"]
    ids.tensors["values"][2, 1] = float("inf")
    with pytest.raises(ValueError, match="sample 2 of the data \\(id 'p-3'\\)"):
        predict(RoMAEForPrediction(small()), ids)


# ----------------------------------------------------------------------------- warm-up

def test_the_default_warmup_is_a_tenth_of_the_real_steps():
    assert TrainConfig().warmup(1000) == 100 and TrainConfig(epochs=1).warmup(7) == 1
    assert TrainConfig(warmup_steps=625).warmup(1000) == 625  # a paper table's fixed number, when given
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 12 steps: the old default 625 warned and never reached the lr
        res = fit(RoMAEForPreTraining(small()), data(), TrainConfig(epochs=3, batch_size=4, lr=1e-2, log_every=1,
                                                                    progress=False),
                  device="cpu")
    lrs = [r["lr"] for r in res.history if "lr" in r]
    assert max(lrs) == pytest.approx(1e-2)
    with pytest.raises(ValueError, match="warmup_steps must be a whole number"):
        TrainConfig(warmup_steps=-1)


# ----------------------------------------------------------------------------- UEA files

def _ts(name: str, labels: str = "a b") -> str:
    return (f"% an ARFF-style comment, as some archive files have\n@problemName {name}\n@timeStamps false\n"
            f"@univariate true\n@classLabel true {labels}\n@data\n1,2,3:a\n3,2,1:b\n")


def test_uea_load_takes_a_root_its_uea_folder_or_the_dataset_folder(tmp_path, monkeypatch):
    folder = tmp_path / "uea" / "Toy"
    folder.mkdir(parents=True)
    for split in ("TRAIN", "TEST"):
        (folder / f"Toy_{split}.ts").write_text(_ts("Toy"))
    for root in (tmp_path, tmp_path / "uea", folder):
        assert uea.load("Toy", root)["train"].labels.tolist() == ["a", "b"]
    monkeypatch.chdir(tmp_path)
    assert uea.load(str(folder))["name"] == "Toy"  # a path as the name
    assert uea.load("uea/Toy")["classes"] == ["a", "b"]
    with pytest.raises(FileNotFoundError, match="no UEA data set folder at"):
        uea.load("uea/Nope")
    with pytest.raises(FileNotFoundError, match="make data NAMES=uea:Nope"):
        uea.load("Nope", tmp_path)
