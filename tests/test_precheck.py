"""Errors where the mistake is made (issue 53, item 5): a model that cannot train on its data is refused by `fit`
before its first step with the value to use; series datasets have `.labels`; class names scored against numbers say
how to compare like with like; `from_sequences(drop=)` that leaves series of fewer than 3 steps warns. The checks
(`romae.precheck`) only read: they return None and change nothing (what keeps them out of every code record)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from romae import metrics, precheck
from romae.builders import TokenDataset, from_sequences
from romae.compendium import staleness
from romae.config import EncoderConfig, RoMAEConfig, TrainConfig
from romae.model import RoMAEForPrediction, RoMAEForPreTraining
from romae.train import ArrayDataset, fit, predict

SMALL = EncoderConfig(d_model=16, n_heads=2, depth=1, d_ff=32)
RUN = TrainConfig(epochs=1, batch_size=4, lr=1e-3, seed=0, progress=False)


def series(n=12, T=10, C=3, classes=("run", "sit", "stand", "walk"), seed=0):
    """n series [T, C] with class names cycling through `classes` (4 by default)."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((T, C)) for _ in range(n)], [classes[i % len(classes)] for i in range(n)]


def model(cls=RoMAEForPrediction, **kw):
    torch.manual_seed(0)
    return cls(RoMAEConfig(**{**dict(token_dim=3, encoder=SMALL, decoder=SMALL), **kw}))


def refused(m, data, match, **fit_kw):
    """fit refuses with `match` before any optimiser step: no progress event, the weights as they were."""
    events, before = [], {k: v.clone() for k, v in m.state_dict().items()}
    with pytest.raises(ValueError, match=match):
        fit(m, data, RUN, device="cpu", on_progress=lambda *a: events.append(a), **fit_kw)
    assert events == [], "a step ran before the refusal"
    for k, v in m.state_dict().items():
        assert torch.equal(v, before[k]), k


# ----------------------------------------------------------------------------- fit: n_outputs, task, token_dim

def test_a_classifier_built_without_n_outputs_is_refused_with_train_n_classes():
    values, labels = series()
    train = from_sequences(values, labels=labels)
    assert train.n_classes == 4
    # RoMAEForPrediction(cfg) defaults to n_outputs=1: this failed mid-fit, "class labels must lie in [0, 1), found 3"
    refused(model(), train, r"class labels must lie in \[0, n_outputs=1\), found 3 in the training data; the data "
                            r"has 4 classes: build the classifier with n_outputs=train.n_classes, here 4")
    refused(model(n_outputs=3), train, r"n_outputs=train.n_classes, here 4")


def test_a_classifier_short_of_the_declared_classes_is_refused_even_when_the_training_labels_do_not_reach_them():
    values, labels = series(classes=("a", "b", "c"))
    train = from_sequences(values, labels=labels, classes=["a", "b", "c", "d"])  # "d" only in the test data
    refused(model(n_outputs=3), train, r"the data has 4 classes: .*n_outputs=train.n_classes, here 4")


def test_an_array_dataset_names_the_number_to_use():
    values, _ = series()
    data = ArrayDataset(values=torch.as_tensor(np.stack(values), dtype=torch.float32),
                        positions=torch.arange(10.0).expand(12, 1, 10), labels=torch.arange(12) % 5)
    refused(model(n_outputs=2), data, r"found 4 in the training data: build the classifier with n_outputs, here 5")


@pytest.mark.parametrize("cls", [RoMAEForPrediction, RoMAEForPreTraining])
def test_a_token_dim_or_n_axes_other_than_the_data_s_is_refused_with_train_token_dim(cls):
    values, labels = series(C=3)
    train = from_sequences(values, labels=labels)
    refused(model(cls, token_dim=5, n_outputs=4), train,
            r"token_dim=5 values, but the training data's tokens hold 3: .*RoMAEConfig\(token_dim=train.token_dim\), "
            r"here 3")
    refused(model(cls, n_axes=2, n_outputs=4), train, r"RoMAEConfig\(n_axes=train.n_axes\), here 1")


def test_a_regressor_on_classes_and_a_classifier_on_targets_are_refused():
    values, labels = series()
    refused(model(task="regression"), from_sequences(values, labels=labels),
            r"regresses \(task='regression'\), but the training data holds class labels \(4 classes\).*"
            r"task='classification', n_outputs=train.n_classes\), here 4")
    targets = np.linspace(0, 1, 12)[:, None].repeat(2, 1)  # two targets per series
    refused(model(n_outputs=2), from_sequences(values, labels=targets),
            r"RoMAEConfig\(task='regression', n_outputs=2\)")
    refused(model(task="regression"), from_sequences(values, labels=targets),
            r"2 regression target\(s\) per sample .* the model n_outputs=1: .*n_outputs=2\)")


def test_models_that_fit_their_data_train_as_before():
    values, labels = series()
    train = from_sequences(values, labels=labels)
    res = fit(model(n_outputs=train.n_classes), train, RUN, device="cpu")
    assert res.complete and res.steps == 3
    probs = torch.softmax(torch.randn(12, 4), -1)  # class probabilities [n, n_outputs] are labels too
    data = ArrayDataset(values=train.tensors["values"], positions=train.tensors["positions"], labels=probs)
    assert fit(model(n_outputs=4), data, RUN, device="cpu").steps == 3


def test_before_fit_returns_none_reads_only_and_draws_nothing():
    """What keeps precheck out of every code record (staleness.NEVER_COMPUTES): it changes nothing it is given."""
    assert "precheck.py" in staleness.NEVER_COMPUTES and not staleness.computes("precheck.py")
    values, labels = series()
    train = from_sequences(values, labels=labels)
    m, other = model(n_outputs=4), torch.nn.Linear(2, 2)
    tensors = {k: v.clone() for k, v in train.tensors.items()}
    weights = {k: v.clone() for k, v in m.state_dict().items()}
    rng = torch.get_rng_state(), np.random.get_state()[1].copy()
    assert precheck.before_fit(m, train) is None
    assert precheck.before_fit(other, train) is None  # not a RoMAE model: unchecked
    assert all(torch.equal(train.tensors[k], v) for k, v in tensors.items())
    assert all(torch.equal(m.state_dict()[k], v) for k, v in weights.items())
    assert torch.equal(torch.get_rng_state(), rng[0]) and np.array_equal(np.random.get_state()[1], rng[1])
    t, p = np.array(["a", "b"]), np.array([0, 1])
    assert precheck.comparable_labels(t, t.copy()) is None and precheck.dropped_short(values, values, 0.5) is None


# ----------------------------------------------------------------------------- .labels, metrics, drop=

def test_series_datasets_have_labels_as_image_datasets_do(tmp_path):
    values, labels = series()
    train = from_sequences(values, labels=labels)
    assert torch.equal(train.labels, train.tensors["labels"]) and train.labels.tolist()[:4] == [0, 1, 2, 3]
    assert train.subset([1, 2]).labels.tolist() == [1, 2]
    assert torch.equal(TokenDataset.load(train.save(tmp_path / "d")).labels, train.labels)
    assert from_sequences(values).labels is None


def test_class_names_scored_against_scores_say_how_to_compare_like_with_like():
    values, labels = series()
    train = from_sequences(values, labels=labels)
    scores = predict(model(n_outputs=4), train)
    # was scikit-learn's "Mix of label input types (string and number)"
    with pytest.raises(ValueError, match=r"y_true holds class names \('run', 'sit', 'stand', \.\.\.\) but y_pred "
                                         r"numbers.*test\.labels.*as_labels=True"):
        metrics.accuracy(np.array(labels), scores)
    with pytest.raises(ValueError, match=r"y_pred holds class names .* but y_true numbers"):
        metrics.macro_f1(train.labels, predict(model(n_outputs=4), train, as_labels=True))
    # like with like: both ways work
    assert metrics.accuracy(train.labels, scores) == metrics.accuracy(
        np.array(labels), predict(model(n_outputs=4), train, as_labels=True))


def test_a_drop_that_leaves_series_of_fewer_than_3_steps_warns():
    values, labels = series(n=8, T=20)
    with pytest.warns(UserWarning, match=r"drop=0.95 left 8 of 8 series with fewer than 3 observed time steps "
                                         r"\(e.g. sample 0: 1 of 20 kept\)"):
        from_sequences(values, labels=labels, drop=0.95)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from_sequences(values, labels=labels, drop=0.5)  # 10 of 20 kept: no warning
        from_sequences([v[:2] for v in values], labels=labels)  # short from the start, not by drop: no warning


def test_labels_of_regression_targets_are_in_their_own_units():
    """`test.labels` scores against `predict` and the baselines, which give the targets' own units, also when the
    model trains on standardised targets (`tensors["labels"]`)."""
    import numpy as np

    from romae import baselines, from_sequences, metrics

    series = [np.sin(np.linspace(0, 6, 20) + i)[:, None] for i in range(12)]
    y = np.linspace(100.0, 200.0, 12)
    for standardize in (False, True):
        train = from_sequences(series, labels=y, standardize_targets=standardize)
        test = from_sequences(series[:4], labels=y[:4], like=train)
        assert np.allclose(test.labels.numpy(), y[:4], rtol=1e-6) and np.allclose(train.labels.numpy(), y, rtol=1e-6)
        assert metrics.mse(test.labels, baselines.nn1_dtw(train, test)) < 1e-6  # the same series: exact neighbours
    assert abs(float(train.tensors["labels"].mean())) < 1e-6  # what the model trains on stays standardised
