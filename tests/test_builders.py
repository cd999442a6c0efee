"""Builders: a user's series / long tables -> tokens, with padding, positions, standardisation, labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from romae import RoMAEConfig, RoMAEForPrediction, TokenDataset, from_long, from_sequences, size


def _series():
    rng = np.random.default_rng(0)
    a = rng.normal(2.0, 3.0, size=(5, 2))
    b = rng.normal(2.0, 3.0, size=(3, 2))
    return [a, b]


def test_from_sequences_pads_and_keeps_true_times():
    a, b = _series()
    d = from_sequences([a, b], times=[np.arange(5) * 0.5, [1.0, 4.0, 9.0]], labels=["up", "down"], standardize=False)
    v, pos, pad = d.tensors["values"], d.tensors["positions"], d.tensors["pad_mask"]
    assert v.shape == (2, 5, 2) and pos.shape == (2, 1, 5) and pad.shape == (2, 5)
    assert pad.tolist() == [[False] * 5, [False] * 3 + [True] * 2]
    assert torch.allclose(v[1, :3], torch.tensor(b, dtype=torch.float32))
    assert (v[1, 3:] == 0).all()
    assert pos[0, 0].tolist() == [0.0, 0.5, 1.0, 1.5, 2.0] and pos[1, 0, :3].tolist() == [1.0, 4.0, 9.0]
    assert d.classes == ["down", "up"] and d.tensors["labels"].tolist() == [1, 0]
    assert d.tensors["labels"].dtype == torch.long and d.token_dim == 2 and d.n_axes == 1


def test_all_nan_steps_are_dropped_and_partial_ones_interpolated():
    x = np.array([[0.0, 10.0], [np.nan, np.nan], [2.0, np.nan], [4.0, 40.0], [np.nan, 50.0]])
    d = from_sequences([x], standardize=False)
    assert d.tensors["positions"][0, 0].tolist() == [0.0, 2.0, 3.0, 4.0]  # step 1 removed, true indices kept
    v = d.tensors["values"][0]
    # channel 1 at t=2: between 10 (t=0) and 40 (t=3) -> 30; channel 0 at t=4: nearest edge value 4
    assert v[1, 1].item() == pytest.approx(30.0) and v[3, 0].item() == pytest.approx(4.0)
    m = from_sequences([x], standardize=False, fill="mean")  # fill="mean" without a standardiser: 0
    assert m.tensors["values"][0, 1, 1].item() == 0.0


def test_standardiser_is_fitted_on_training_data_only():
    a, b = _series()
    train = from_sequences([a, b])
    real = ~train.tensors["pad_mask"]
    z = train.tensors["values"][real]
    assert torch.allclose(z.mean(0), torch.zeros(2), atol=1e-5)
    assert torch.allclose(z.std(0, unbiased=False), torch.ones(2), atol=1e-4)
    test = from_sequences([a + 100.0], like=train)  # the training statistics, not its own
    assert (test.tensors["values"] > 20).all()
    back = train.standardizer.inverse_transform(test.tensors["values"])
    assert torch.allclose(back[0], torch.tensor(a + 100.0, dtype=torch.float32), atol=1e-3)


def test_like_reuses_classes_and_rejects_unknown_labels():
    a, b = _series()
    train = from_sequences([a, b], labels=["x", "y"])
    test = from_sequences([b, a, b], labels=["y", "y", "x"], like=train)
    assert test.classes == ["x", "y"] and test.tensors["labels"].tolist() == [1, 1, 0]
    with pytest.raises(ValueError, match=r"labels \['z'\] are not among the classes"):
        from_sequences([a], labels=["z"], like=train)
    with pytest.raises(ValueError, match="these series have 3 channels, the training data 2"):
        from_sequences([np.zeros((4, 3))], like=train)
    reg = from_sequences([a, b], labels=[0.5, 1.5])  # floats: regression targets
    assert reg.classes is None and reg.tensors["labels"].dtype == torch.float32
    with pytest.raises(ValueError, match="regression labels must be finite; sample 1 is not"):
        from_sequences([a, b], labels=[0.5, np.nan])


def test_from_sequences_refuses_bad_input_naming_it():
    a, b = _series()
    bad = b.copy()
    bad[1, 0] = np.inf
    with pytest.raises(ValueError, match="sample 1 holds an infinite value"):
        from_sequences([a, bad])
    with pytest.raises(ValueError, match="sample 1 has no observed value"):
        from_sequences([a, np.full((3, 2), np.nan)])
    with pytest.raises(ValueError, match="sample 1 has 3 channels"):
        from_sequences([a, np.zeros((4, 3))])
    with pytest.raises(ValueError, match="labels has 1 entries for 2 samples"):
        from_sequences([a, b], labels=["x"])
    with pytest.raises(ValueError, match="values is empty"):
        from_sequences([])
    with pytest.raises(ValueError, match="fill must be"):
        from_sequences([a], fill="zero")


def test_save_load_and_subset(tmp_path):
    a, b = _series()
    d = from_sequences([a, b, a], labels=["x", "y", "x"])
    d.save(tmp_path / "train")
    e = TokenDataset.load(tmp_path / "train")
    assert e.classes == d.classes and np.allclose(e.standardizer.mean, d.standardizer.mean)
    for k in d.tensors:
        assert torch.equal(d.tensors[k], e.tensors[k])
    s = d.subset([2, 0])
    assert len(s) == 2 and s.ids == [2, 0] and torch.equal(s.tensors["values"][1], d.tensors["values"][0])
    assert s.standardizer is d.standardizer


def _long():
    return pd.DataFrame({
        "pid": ["b", "a", "a", "a", "b", "a"],
        "t": [0.5, 2.0, 1.0, 1.0, 0.0, 3.0],
        "var": ["HR", "HR", "Temp", "HR", "Temp", "pH"],
        "x": [80.0, 90.0, 37.0, 70.0, 36.0, np.nan],
        "label": [0, 1, 1, 1, 0, 1],
    })


def test_from_long_tokens_positions_and_variables():
    d = from_long(_long(), id="pid", time="t", variable="var", value="x", label="label", standardize=False)
    assert d.ids == ["a", "b"] and d.variables == ["HR", "Temp", "pH"]
    v, pos, pad = d.tensors["values"], d.tensors["positions"], d.tensors["pad_mask"]
    # the NaN row (pH) is no observation: a has 3 tokens, b has 2
    assert pad.tolist() == [[False] * 3, [False, False, True]]
    # sorted by (time, variable index): a = (1, HR) 70, (1, Temp) 37, (2, HR) 90
    assert v[0, :, 0].tolist() == [70.0, 37.0, 90.0]
    assert pos[0, :, :3].tolist() == [[1.0, 1.0, 2.0], [0.0, 1.0, 0.0]]
    assert pos[1, :, :2].tolist() == [[0.0, 0.5], [1.0, 0.0]]
    assert d.tensors["labels"].tolist() == [1, 0]


def test_from_long_standardises_per_variable_and_reuses_the_training_mapping():
    df = _long()
    train = from_long(df, id="pid", time="t", variable="var", value="x")
    hr = df[df["var"] == "HR"].x
    z = (70.0 - hr.mean()) / hr.std()
    assert train.tensors["values"][0, 0, 0].item() == pytest.approx(z, rel=1e-5)
    test = from_long(pd.DataFrame({"pid": [7], "t": [0.0], "var": ["Temp"], "x": [38.0]}),
                     id="pid", time="t", variable="var", value="x", like=train)
    assert test.tensors["positions"][0, 1, 0].item() == 1.0  # Temp keeps index 1 of the training data
    with pytest.raises(ValueError, match=r"variables \['SpO2'\] are not among"):
        from_long(pd.DataFrame({"pid": [7], "t": [0.0], "var": ["SpO2"], "x": [98.0]}),
                  id="pid", time="t", variable="var", value="x", like=train)


def test_from_long_several_value_columns_datetimes_and_errors():
    df = pd.DataFrame({"obj": [1, 1, 2], "mjd": pd.to_datetime(["2024-01-01", "2024-01-03", "2024-01-02"]),
                       "band": ["g", "r", "g"], "flux": [1.0, 2.0, 3.0], "err": [0.1, 0.2, 0.3]})
    d = from_long(df, id="obj", time="mjd", variable="band", value=["flux", "err"], standardize=False,
                  time_scale=1 / 86400)
    assert d.token_dim == 2 and d.tensors["values"][0, 1].tolist() == pytest.approx([2.0, 0.2])
    assert d.tensors["positions"][0, 0, :2].tolist() == [0.0, 2.0]  # days since the object's first observation
    half = df.assign(err=[0.1, np.nan, 0.3])
    with pytest.raises(ValueError, match="some of \\['flux', 'err'\\] are NaN"):
        from_long(half, id="obj", time="mjd", variable="band", value=["flux", "err"])
    with pytest.raises(KeyError, match="columns \\['flx'\\] are not in the table"):
        from_long(df, id="obj", time="mjd", variable="band", value="flx")
    with pytest.raises(ValueError, match="column .y. differs within id 1:"):
        from_long(df.assign(y=[0, 1, 0]), id="obj", time="mjd", variable="band", value="flux", label="y")


def test_large_times_keep_their_digits_through_the_builder_and_the_model():
    """Unix-second times (~1.7e9) 30 s apart: float32 would give them one position (spacing 128)."""
    t0 = 1.7e9
    d = from_sequences([np.ones((3, 1))], times=[[t0, t0 + 30.0, t0 + 60.5]], standardize=False)
    pos = d.tensors["positions"][0, 0]
    assert pos.dtype == torch.float64 and (pos - t0).tolist() == [0.0, 30.0, 60.5]
    model = RoMAEForPrediction(RoMAEConfig(token_dim=1, encoder=size("tiny-shallow", d_model=24, n_heads=2),
                                           n_outputs=1, head="tokens", use_cls=False, task="regression"))
    rot = model.encoder.rope.angles(torch.tensor([[[t0, t0 + 30.0]]], dtype=torch.float64))
    assert not torch.allclose(rot[0, 0], rot[0, 1])  # distinct angles for the fastest pairs
    ints = model(torch.ones(1, 2, 1), torch.tensor([[[1_700_000_000, 1_700_000_030]]]))[0]
    floats = model(torch.ones(1, 2, 1), torch.tensor([[[t0, t0 + 30.0]]], dtype=torch.float64))[0]
    assert torch.allclose(ints, floats)  # integer positions are cast to float64, not float32


def test_built_data_runs_through_the_model_with_padding():
    a, b = _series()
    d = from_sequences([a, b], labels=["x", "y"])
    model = RoMAEForPrediction(RoMAEConfig(token_dim=2, encoder=size("tiny-shallow", d_model=24, n_heads=2),
                                           n_outputs=2, use_cls=True))
    model.eval()
    out, loss = model(**d.batch(torch.arange(2)))
    alone, _ = model(**d.subset([1]).batch(torch.arange(1)))
    assert torch.isfinite(loss) and torch.allclose(out[1], alone[0], atol=1e-5)
