"""Hostile inputs to the public API: refused or flagged, never turned silently into wrong numbers.

1. values (or training statistics) that overflow float32 when standardised; hand-made non-finite standardisers;
2. complex numbers anywhere (values, times, labels; numpy, torch, lists, pandas; builders, model, fit, predict);
3. times that float32 or float64 would round together, or too large (1e300) for RoPE;
and the two frictions a new user hit: 4. `from_sequences(drop=, seed=)` (Table 6's random drop of steps) and
5. `standardize_targets=True` with `predict` returning the original units.

Tiny models on the CPU; no data files.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from romae import (EncoderConfig, RoMAEConfig, RoMAEForPrediction, Standardizer, TokenDataset, TrainConfig,
                   from_long, from_sequences)
from romae.train import ArrayDataset, fit, predict

UNIX = 1.7e9 + 60.0 * np.arange(6)  # six distinct Unix seconds, 60 s apart: three distinct float32 values


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def model(pos_encoding="rope", n_outputs=2, token_dim=1) -> RoMAEForPrediction:
    cfg = RoMAEConfig(token_dim=token_dim, n_axes=1, n_outputs=n_outputs, pos_encoding=pos_encoding,
                      encoder=EncoderConfig(d_model=16, n_heads=2, depth=1, d_ff=32))
    return RoMAEForPrediction(cfg, seed=0).eval()


def long_table(**columns) -> pd.DataFrame:
    base = dict(id=[0, 0, 1, 1], t=[0.0, 1.0, 0.0, 2.0], var=["a", "b", "a", "a"], v=[1.0, 2.0, 3.0, 4.0])
    return pd.DataFrame({**base, **columns})


def build_long(df, **kw):
    return from_long(df, id="id", time="t", variable="var", value="v", **kw)


# ----------------------------------------------------------------------------- 1. overflow in standardisation

def test_from_sequences_refuses_values_beyond_float32_naming_channel_and_value():
    x = [np.array([[1.0, 1e308], [2.0, -1e308], [3.0, 5e307]]), np.array([[1.0, 2e307]])]
    with pytest.raises(ValueError, match=r"sample 0, step 0, channel 1: 1e\+308 is beyond float32"):
        from_sequences(x)


def test_from_long_refuses_values_beyond_float32_naming_variable_and_value():
    with pytest.raises(ValueError, match=r"variable 'b'.*v = 1e\+308 is beyond float32"):
        build_long(long_table(v=[1.0, 1e308, 3.0, 4.0]))


def test_like_standardizer_refuses_values_that_standardise_to_inf():
    train = from_sequences([np.array([[0.0], [1e-30]])])  # std 5e-31
    with pytest.raises(ValueError, match=r"channel 0: sample 0, step 1: 1e\+10 standardises to inf"):
        from_sequences([np.array([[0.0], [1e10]])], like=train)


def test_from_long_like_refuses_values_that_standardise_to_inf():
    train = build_long(long_table(v=[0.0, 2.0, 1e-30, 4.0]))  # variable "a": std ~2.3, "b": 1
    tiny = TokenDataset(standardizer=Standardizer(np.zeros((2, 1)), np.array([[1e-30], [1.0]]), by="variable"),
                        variables=train.variables, **train.tensors)
    with pytest.raises(ValueError, match=r"id 0, variable 'a', column 'v'.*1e\+10 standardises to inf"):
        build_long(long_table(v=[1e10, 2.0, 3.0, 4.0]), like=tiny)


@pytest.mark.parametrize("mean, std, match", [
    ([np.nan, 0.0], [1.0, 1.0], r"mean of channel 0 is nan"),
    ([0.0, np.inf], [1.0, 1.0], r"mean of channel 1 is inf"),
    ([0.0, 0.0], [1.0, np.inf], r"std of channel 1 is inf"),
    ([0.0, 0.0], [0.0, 1.0], r"std of channel 0 is 0.0: a std must be finite and positive"),
])
def test_standardizer_refuses_non_finite_statistics_given_by_hand(mean, std, match):
    with pytest.raises(ValueError, match=match):
        Standardizer(mean, std)


def test_valid_standardisation_is_unchanged():
    x = [np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]]), np.array([[7.0, 8.0]])]
    d = from_sequences(x, fill="mean")  # the gap stays out of the statistics
    obs = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0], [7.0, 8.0]])
    np.testing.assert_array_equal(d.standardizer.mean, np.nanmean(obs, 0))
    np.testing.assert_array_equal(d.standardizer.std, np.nanstd(obs, 0))


# ----------------------------------------------------------------------------- 2. complex numbers are refused

REAL = "RoMAE takes real numbers"


@pytest.mark.parametrize("make", [
    lambda: from_sequences([np.array([1 + 1j, 2, 3])]),
    lambda: from_sequences([torch.tensor([[1 + 1j], [2], [3]])]),
    lambda: from_sequences([[1.0, 2j, 3.0]]),
])
def test_from_sequences_refuses_complex_values(make):
    with pytest.raises(TypeError, match=rf"values of sample 0 is complex.*{REAL}"):
        make()


@pytest.mark.parametrize("times", [[np.array([0, 1, 2 + 0j])], [[0.0, 1j, 2.0]], [torch.tensor([0, 1, 2j])]])
def test_from_sequences_refuses_complex_times(times):
    with pytest.raises(TypeError, match=rf"times of sample 0 is complex.*{REAL}"):
        from_sequences([[1.0, 2.0, 3.0]], times=times)


def test_from_sequences_refuses_complex_labels():
    with pytest.raises(TypeError, match=rf"labels is complex.*{REAL}"):
        from_sequences([[1.0, 2.0], [3.0, 4.0]], labels=np.array([1 + 1j, 2.0]))


@pytest.mark.parametrize("column", ["v", "t"])
def test_from_long_refuses_complex_columns(column):
    df = long_table(**{column: np.array([0, 1, 2, 3]) + 1j})
    with pytest.raises(TypeError, match=rf"column '{column}' is complex128.*{REAL}"):
        build_long(df)


def test_from_long_refuses_complex_label_column():
    with pytest.raises(TypeError, match=rf"column 'y' is complex.*{REAL}"):
        build_long(long_table(y=[1j, 1j, 2.0, 2.0]), label="y")


@pytest.mark.parametrize("name", ["values", "positions", "labels"])
def test_model_refuses_complex_inputs(name):
    batch = dict(values=torch.randn(2, 5, 1), positions=torch.arange(5.0).expand(2, 1, 5).clone(),
                 labels=torch.tensor([0, 1]))
    batch[name] = batch[name].to(torch.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "casting complex values to real" on the way
        with pytest.raises(TypeError, match=rf"{name} is complex64; {REAL}"):
            model()(**batch)


def test_predict_and_fit_refuse_complex_values():
    data = dict(values=torch.randn(4, 5, 1, dtype=torch.complex64), positions=torch.arange(5.0).expand(4, 1, 5),
                labels=torch.tensor([0, 1, 0, 1]))
    with pytest.raises(TypeError, match=rf"values is complex64; {REAL}"):
        predict(model(), data)
    cfg = TrainConfig(epochs=1, batch_size=2, lr=1e-3, warmup_steps=0, progress=False, seed=0)
    with pytest.raises(TypeError, match=rf"values is complex64; {REAL}"):
        fit(model(), ArrayDataset(**data), cfg, device="cpu")


def test_images_refuse_complex_arrays():  # already so before: a guard
    from romae import GridDataset, from_images

    with pytest.raises(TypeError, match="complex128"):
        from_images(np.zeros((2, 3, 8, 8), dtype=np.complex128), patch_size=4)
    with pytest.raises(TypeError, match="grids must hold real numbers, got torch.complex64"):
        GridDataset(torch.zeros(2, 1, 8, 8, dtype=torch.complex64), patch_size=4, mean=[0.0], std=[1.0])


# ----------------------------------------------------------------------------- 3. times that would merge or overflow

def test_array_dataset_keeps_a_list_of_unix_times_distinct():
    with pytest.warns(UserWarning, match=r"sample 0 on axis 0: 6 distinct times become 3 in float32"):
        d = ArrayDataset(values=torch.randn(1, 6, 1), positions=[[UNIX.tolist()]])
    assert d.tensors["positions"].dtype == torch.float64
    assert d.tensors["positions"].unique().numel() == 6


def test_array_dataset_list_of_small_positions_stays_float32_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = ArrayDataset(values=torch.randn(1, 3, 1), positions=[[[0.1, 0.2, 0.3]]])
    assert d.tensors["positions"].dtype == torch.float32  # as before: torch's default dtype


def test_array_dataset_warns_about_float32_positions_at_unix_scale():
    with pytest.warns(UserWarning, match=r"positions are float32 and reach 1\.7e\+09, where float32 values are 128"):
        ArrayDataset(values=torch.randn(1, 6, 1), positions=torch.tensor(UNIX, dtype=torch.float32)[None, None])


def test_from_sequences_refuses_float32_unix_times_rounded_together():
    with pytest.raises(ValueError, match=r"times of sample 0 are float32 near 1\.7e\+09.*6 steps hold only 3 distinct"):
        from_sequences([np.arange(6.0)], times=[UNIX.astype(np.float32)])


def test_from_sequences_keeps_float64_unix_times_distinct():
    d = from_sequences([np.arange(6.0)], times=[UNIX])
    assert d.tensors["positions"].dtype == torch.float64
    assert torch.equal(d.tensors["positions"][0, 0], torch.as_tensor(UNIX))
    model()(d.tensors["values"], d.tensors["positions"])  # accepted as they are


@pytest.mark.parametrize("times, scale, match", [
    ([0.0, 1.0, 1e300], 1.0, r"sample 0: the time of step 2 \(1e\+300\) is beyond \+-2\*\*53"),
    ([0.0, 1.0, 1e300], 1e10, r"sample 0: the time of step 2 \(1e\+300 x time_scale 1e\+10 = inf\) is not finite"),
    (1_700_000_000_000_000_000 + np.arange(3), 1.0, r"time of step 0 \(1700000000000000000\) is beyond \+-2\*\*53"),
    ([0.0, np.inf, 2.0], 1.0, r"sample 0: times must be finite, found inf at step 1"),
])
def test_from_sequences_refuses_huge_or_non_finite_times(times, scale, match):
    with pytest.raises(ValueError, match=match):
        from_sequences([np.arange(3.0)], times=[np.asarray(times)], time_scale=scale)


@pytest.mark.parametrize("scale", [0, np.inf, np.nan, True, "1"])
def test_from_sequences_refuses_bad_time_scale(scale):
    with pytest.raises(ValueError, match="time_scale must be a finite, non-zero number"):
        from_sequences([np.arange(3.0)], time_scale=scale)


def test_from_long_refuses_huge_times_and_float32_unix_times():
    with pytest.raises(ValueError, match=r"the time 1e\+300 of id 1, variable 'a', is beyond \+-2\*\*53"):
        build_long(long_table(t=[0.0, 1.0, 0.0, 1e300]))
    df = pd.DataFrame(dict(id=0, t=UNIX.astype(np.float32), var="a", v=np.arange(6.0)))
    with pytest.raises(ValueError, match=r"column 't' is float32 near 1\.7e\+09.*variable 'a' twice"):
        build_long(df)
    ns = long_table(t=np.array([0, 1, 0, 2], dtype=np.int64) + 1_700_000_000_000_000_000)
    with pytest.raises(ValueError, match=r"beyond \+-2\*\*53"):
        build_long(ns)


def test_model_refuses_positions_beyond_2_53_naming_the_value():
    pos = torch.tensor([[[0.0, 1.0, 1e300]]], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"positions must lie within \+-2\*\*53.*found 1e\+300 in sample 0.*token 2"):
        model()(torch.randn(1, 3, 1), pos)
    model("none")(torch.randn(1, 3, 1), pos)  # positions unread: nothing to refuse


def test_absolute_nd_refuses_float64_positions_that_float32_merges():
    pos = torch.as_tensor(UNIX)[None, None]
    with pytest.raises(ValueError, match=r"positions of sample 0 of the batch on axis 0: 6 distinct positions become 3"):
        model("absolute_nd")(torch.randn(1, 6, 1), pos)
    model("absolute_nd")(torch.randn(1, 6, 1), pos - pos.min())  # relative times: accepted


# ----------------------------------------------------------------------------- 4. drop= (Table 6's protocol)

def series(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(int(rng.integers(5, 20)), 3)) for _ in range(n)]


def test_drop_follows_the_table_6_rule():
    from romae.experiments.uea.data import drop_steps  # the rule the UEA experiment uses

    xs = series()
    for rate, seed in ((0.3, 56790), (0.5, 1), (0.7, 2)):
        a = from_sequences(xs, drop=rate, seed=seed)
        b = from_sequences(drop_steps(xs, rate, seed))
        assert all(torch.equal(a.tensors[k], b.tensors[k]) for k in b.tensors)


def test_drop_removes_that_share_reproducibly_and_keeps_true_times():
    xs = series()
    times = [np.cumsum(np.random.default_rng(i).uniform(0.5, 2, len(x))) for i, x in enumerate(xs)]
    a = from_sequences(xs, times=times, drop=0.5, seed=3)
    again = from_sequences(xs, times=times, drop=0.5, seed=3)
    other = from_sequences(xs, times=times, drop=0.5, seed=4)
    assert all(torch.equal(a.tensors[k], again.tensors[k]) for k in a.tensors)
    assert not torch.equal(a.tensors["positions"], other.tensors["positions"])
    for i, (x, t) in enumerate(zip(xs, times)):
        kept = a.tensors["positions"][i, 0][~a.tensors["pad_mask"][i]].numpy()
        assert len(kept) == len(x) - int(len(x) * 0.5)
        assert np.isin(kept, t).all() and (np.diff(kept) > 0).all()  # true times, in order


def test_drop_zero_is_bitwise_the_default():
    xs = series()
    a, b = from_sequences(xs), from_sequences(xs, drop=0, seed=5)
    assert all(torch.equal(a.tensors[k], b.tensors[k]) for k in a.tensors)


@pytest.mark.parametrize("drop", [-0.1, 1, 1.5, True, "0.3", np.nan])
def test_drop_outside_unit_interval_is_refused(drop):
    with pytest.raises(ValueError, match=r"drop must be a share of each series' steps in \[0, 1\)"):
        from_sequences(series(), drop=drop)


def test_drop_seed_is_checked():
    with pytest.raises(ValueError, match="seed must be a whole number"):
        from_sequences(series(), drop=0.3, seed=-1)


# ----------------------------------------------------------------------------- 5. standardize_targets=

class Lookup(torch.nn.Module):
    """Outputs table[sample], the sample read from its first time: a model that predicts exactly `table`."""

    ACCEPTS = ("values", "positions", "pad_mask")

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.table, self.w = table, torch.nn.Parameter(torch.zeros(1))

    def forward(self, values, positions, pad_mask=None):
        return self.table[positions[:, 0, 0].long()], None


def with_ids(xs):
    return [np.arange(len(x), dtype=np.float64) * 0.1 + i for i, x in enumerate(xs)]  # first time = sample index


def test_standardized_targets_come_back_in_original_units():
    xs = series()
    y = np.random.default_rng(1).normal(size=(len(xs), 2)) * [1000.0, 0.01] + [5e4, -3.0]
    train = from_sequences(xs, times=with_ids(xs), labels=y, standardize_targets=True)
    np.testing.assert_allclose(train.target_standardizer.mean, y.mean(0))
    np.testing.assert_allclose(train.target_standardizer.std, y.std(0))
    np.testing.assert_allclose(train.tensors["labels"].numpy(), (y - y.mean(0)) / y.std(0), rtol=1e-6, atol=1e-6)
    test = from_sequences(xs, times=with_ids(xs), labels=y + 1.0, like=train)  # training statistics reused
    assert test.target_standardizer is train.target_standardizer
    out = predict(Lookup(test.tensors["labels"]), test)  # a model whose output is the standardised target
    np.testing.assert_allclose(out.numpy(), y + 1.0, rtol=1e-6)
    raw = predict(Lookup(test.tensors["labels"]), test, original_units=False)
    assert torch.equal(raw, test.tensors["labels"])


def test_standardized_targets_survive_save_load_and_subset(tmp_path):
    xs = series()
    y = np.linspace(100.0, 200.0, len(xs))
    d = from_sequences(xs, labels=y, standardize_targets=True)
    back = TokenDataset.load(d.save(tmp_path / "d"))
    np.testing.assert_array_equal(back.target_standardizer.mean, d.target_standardizer.mean)
    assert d.subset([0, 2]).target_standardizer is d.target_standardizer
    plain = from_sequences(xs, labels=y)
    plain.save(tmp_path / "plain")
    assert "target_standardizer" not in json.loads((tmp_path / "plain.json").read_text())  # saved as before


def test_standardize_targets_off_keeps_targets_as_given():
    xs = series()
    y = np.linspace(100.0, 200.0, len(xs))
    d = from_sequences(xs, labels=y)
    assert d.target_standardizer is None
    assert torch.equal(d.tensors["labels"], torch.as_tensor(y, dtype=torch.float32))


def test_from_long_standardize_targets():
    df = long_table(t=[0.0, 1.0, 1.0, 2.0], y=[10.0, 10.0, 30.0, 30.0])  # id k's first time: k
    d = build_long(df, label="y", standardize_targets=True)
    assert d.tensors["labels"].tolist() == [-1.0, 1.0]
    assert d.target_standardizer.mean == 20.0 and d.target_standardizer.std == 10.0
    assert predict(Lookup(d.tensors["labels"][:, None]), d)[:, 0].tolist() == [10.0, 30.0]


def test_standardize_targets_errors():
    xs = series(4)
    with pytest.raises(ValueError, match="needs float regression targets, but these labels are classes"):
        from_sequences(xs, labels=["a", "b", "a", "b"], standardize_targets=True)
    with pytest.raises(ValueError, match="like= was built without it"):
        from_sequences(xs, labels=np.ones(4), standardize_targets=True, like=from_sequences(xs, labels=np.ones(4)))
    with pytest.raises(ValueError, match="standardize_targets must be True or False"):
        from_sequences(xs, standardize_targets="yes")


@pytest.mark.parametrize("value, kind", [(np.int64(8), "numpy.int64"), (torch.tensor(8), "torch.Tensor")])
def test_a_whole_number_of_another_library_is_refused_saying_why(value, kind):
    # TrainConfig takes Python ints and whole floats only (accepting numpy's would change check_whole, which every
    # record ran); the message said "must be a whole number, got np.int64(8)", which reads as nonsense: it now names
    # the type
    with pytest.raises(ValueError, match=rf"TrainConfig.batch_size must be a whole number >= 1, got .*\(a {kind}, "
                                         r"not a Python int or float\)"):
        TrainConfig(batch_size=value)


@pytest.mark.parametrize("value", [2.5, True, "3", 0])
def test_other_bad_whole_numbers_carry_no_type_hint(value):
    with pytest.raises(ValueError) as e:
        TrainConfig(batch_size=value)
    assert "not a Python int" not in str(e.value) and f"got {value!r}" in str(e.value)
