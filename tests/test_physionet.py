"""PhysioNet 2012: the raw-record reader, the split, the normalisations, the masks and the baselines."""

import dataclasses
import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from romae.data import physionet as P
from romae.experiments import physionet as E
from romae.masking import equalize, keep_groups, trim_padding


def _tar(path: Path, records: dict[str, str | bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, text in records.items():
            data = text if isinstance(text, bytes) else text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


REC = """Time,Parameter,Value
00:00,RecordID,140001
00:00,Age,54
00:00,Height,-1
00:07,HR,80
00:07,HR,90
00:07,Temp,36.5
00:12,HR,70
01:30,GCS,15
"""


def test_parse_archive_quantises_and_averages(tmp_path):
    df = P.parse_archive(_tar(tmp_path / "set-a.tar.gz", {"set-a/140001.txt": REC}))
    hr = P.VARIABLES.index("HR")
    rows = df[df.variable == hr]
    # 7 min = 0.11667 h -> round(7.29) * 0.016 = 0.112; two HR values there are averaged
    assert np.allclose(rows.time, [round(7 / 60 / 0.016) * 0.016, round(12 / 60 / 0.016) * 0.016])
    assert rows.value.tolist() == [85.0, 70.0] and rows.n_obs.tolist() == [2, 1]
    assert (df.record_id == 140001).all()
    # descriptors at time 0, the -1 (unknown height) kept as an observation, as mTAN does
    h = df[df.variable == P.VARIABLES.index("Height")]
    assert h.value.tolist() == [-1.0] and h.time.tolist() == [0.0]
    assert len(df) == 6  # Age, Height, HR@7, Temp@7, HR@12, GCS@90


def test_quantisation_is_round_half_even_like_python():
    t = np.array([h + m / 60 for h in range(49) for m in range(60)])
    q = 0.016
    assert np.array_equal(np.round(t / q) * q, np.array([round(x / q) * q for x in t]))


@pytest.mark.parametrize("text, message", [
    ("Tiem,Parameter,Value\n00:00,RecordID,140001\n", "line 1 must be the header"),
    ("Time,Parameter,Value\n00:00,RecordID,140001\n00:05,Heart,80\n", "line 3: unknown parameter 'Heart'"),
    ("Time,Parameter,Value\n00:00,RecordID,140001\n0005,HR,80\n", "line 3: expected 'HH:MM"),
    ("Time,Parameter,Value\n00:00,RecordID,140001\n00:05,HR,abc\n", "line 3"),
    ("Time,Parameter,Value\n00:00,RecordID,140002\n", "RecordID 140002 differs from the file name"),
    ("Time,Parameter,Value\n00:05,HR,80\n", "no RecordID"),
    ("Time,Parameter,Value\n00:00,RecordID,140001\n00:05,HR,8\xe90\n", None),
])
def test_parse_errors_name_file_and_line(tmp_path, text, message):
    records = {"set-a/140001.txt": text}
    if message is None:  # bytes that are not UTF-8
        records, message = {"set-a/140001.txt": text.encode("latin-1")}, "not a UTF-8 text record"
    with pytest.raises(ValueError, match=message) as err:
        P.parse_archive(_tar(tmp_path / "set-a.tar.gz", records))
    assert "140001.txt" in str(err.value)


def test_missing_and_corrupt_archives(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"set-a\.tar\.gz.*physionet\.org.*download=True"):
        P.archive("a", tmp_path)
    (tmp_path / "physionet2012").mkdir()
    _tar(tmp_path / "physionet2012" / "set-a.tar.gz", {"set-a/140001.txt": REC})
    with pytest.raises(ValueError, match="checksum mismatch.*matches neither the known copy"):
        P.archive("a", tmp_path)
    with pytest.raises(ValueError, match="unknown PhysioNet 2012 set 'd'"):
        P.archive("d", tmp_path)
    with pytest.raises(FileNotFoundError, match="set-c.tar.gz"):  # set-c is known, just absent here
        P.archive("c", tmp_path)
    with pytest.raises(ValueError, match="quantization"):
        P.records(tmp_path, quantization=0)


def test_download_is_trusted_on_first_use_then_checked(tmp_path, monkeypatch):
    """PhysioNet's own archive differs byte-wise from the shared copy: accepted, recorded in SHA256SUMS, checked."""
    served = _tar(tmp_path / "served.tar.gz", {"set-b/140001.txt": REC.replace("140001", "140001")})
    def fake_download(url, dest, sha256=None, progress=True):
        assert url == "https://physionet.org/files/challenge-2012/1.0.0/set-b.tar.gz?download"
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        return shutil.copy(served, dest)

    monkeypatch.setattr(P.files, "download_url", fake_download)
    monkeypatch.setattr(P.files, "published_sums", lambda url: {})  # PhysioNet's list unreadable: trust on first use
    root = tmp_path / "data"
    path = P.archive("b", root, download=True)
    sums = P.files.read_sums(root / "physionet2012" / "SHA256SUMS")
    assert sums == {"set-b.tar.gz": P.files.sha256(served)}
    assert P.archive("b", root) == path  # later loads check it and pass
    path.write_bytes(path.read_bytes()[:-3] + b"xyz")
    with pytest.raises(ValueError, match="checksum mismatch.*SHA256SUMS"):
        P.archive("b", root)


def test_split_is_independent_of_input_order():
    ids = np.arange(1000, 1100)
    tr, te = P.split(ids)
    tr2, te2 = P.split(np.random.default_rng(0).permutation(np.repeat(ids, 3)))
    assert len(tr) == 80 and len(te) == 20 and set(tr) | set(te) == set(ids)
    assert np.array_equal(tr, tr2) and np.array_equal(te, te2)


def test_scalings():
    var = np.array([0, 0, 0, 1, 1, 1] + [2] * 30)
    val = np.r_[[2.0, 4.0, 10.0], [0.0, 0.0, 0.0], np.arange(30.0)]
    mm = P.Scaling.fit("minmax", var, val, n_variables=4)
    assert mm.shift[0] == 2.0 and mm.scale[0] == 10.0  # divides by the max, not max - min
    assert mm.scale[1] == 1.0  # a maximum of 0 becomes 1
    assert mm.shift[3] == 0.0 and mm.scale[3] == 1.0  # never observed
    z = P.Scaling.fit("zscore", var, val, n_variables=4)
    assert (z.shift[0], z.scale[0]) == (0.0, 1.0)  # 3 distinct values (<= 10): left as it is
    x = np.arange(30.0)
    kept = x[(x >= np.quantile(x, 0.001)) & (x <= np.quantile(x, 0.9995))]
    assert np.isclose(z.shift[2], kept.mean()) and np.isclose(z.scale[2], kept.std())
    assert len(kept) == 28  # the extremes leave the statistics ...
    assert np.allclose(z.inverse(var, z.transform(var, val)), val)  # ... but not the data
    with pytest.raises(ValueError, match="unknown normalisation 'robust'"):
        P.Scaling.fit("robust", var, val)


def _table():
    # two records; record 1: HR at t = 0, 1, 2, 3 and Temp at t = 1; record 2: HR at t = 0, 2
    return pd.DataFrame(dict(record_id=[1, 1, 1, 1, 1, 2, 2], time=[0.0, 1.0, 1.0, 2.0, 3.0, 0.0, 2.0],
                             variable=[19, 19, 36, 19, 19, 19, 19], value=[60.0, 70.0, 37.0, 90.0, 80.0, 50.0, 40.0]))


def test_hidden_rows_units():
    df = _table()
    for seed in range(5):
        tok = E.hidden_rows(df, "token", seed)
        assert tok[:5].sum() == 5 - 2 and tok[5:].sum() == 1  # floor(n/2) of the tokens stay visible
        tp = E.hidden_rows(df, "timepoint", seed)
        assert tp[1] == tp[2]  # the two values at t = 1 share their fate
        assert tp[:5].sum() in (2, 3) and tp[5:].sum() == 1  # 2 of the 4 time points hidden; 1 of 2
        # a record's mask depends on (seed, record id) only, not on the other records
        assert np.array_equal(E.hidden_rows(df[df.record_id == 2].reset_index(drop=True), "token", seed), tok[5:])
    with pytest.raises(ValueError, match="unknown masking unit 'row'"):
        E.hidden_rows(df, "row", 0)


def test_baselines_by_hand():
    df = _table()
    hidden = np.array([False, False, True, True, False, False, True])  # Temp@1, HR@2 of record 1; HR@2 of 2
    train_mean = np.full(41, np.nan)
    train_mean[19], train_mean[36] = 75.0, 36.0
    p = E.baseline_predictions(df, hidden, train_mean)
    assert p["training mean"].tolist() == [36.0, 75.0, 75.0]
    # record 1 shows HR 60, 70, 80 -> mean 70; Temp is not visible -> training mean; record 2 shows 50
    assert p["record mean"].tolist() == [36.0, 70.0, 50.0]
    # HR@2 between 70 (t = 1) and 80 (t = 3) -> 75; record 2's HR@2 after its last visible value -> 50
    assert p["linear interpolation"].tolist() == [36.0, 75.0, 50.0]
    sc = P.Scaling("zscore", np.zeros(41), np.full(41, 2.0))
    mse, sse, n = E.scores(p["linear interpolation"], df.value.to_numpy()[hidden], df.variable.to_numpy()[hidden], sc)
    assert np.isclose(mse, ((36 - 37) ** 2 + (75 - 90) ** 2 + (50 - 40) ** 2) / 4 / 3)
    assert n[19] == 2 and n[36] == 1 and np.isclose(sse.sum(), 3 * mse)


def test_keep_groups():
    g = torch.tensor([[0, 0, 1, 1, 2, 5, 5, 0], [3, 3, 3, 4, 4, 0, 0, 0]])
    pad = torch.tensor([[0, 0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 1, 1, 1]]).bool()
    for seed in range(10):
        gen = torch.Generator().manual_seed(seed)
        h = keep_groups(g, pad, 0.5, generator=gen)
        assert not (h & pad).any()
        for b in range(2):
            labels = g[b][~pad[b]]
            hid = h[b][~pad[b]]
            for lab in labels.unique():  # all tokens of a group share their fate
                assert hid[labels == lab].unique().numel() == 1
            n_groups = labels.unique().numel()
            assert labels[~hid].unique().numel() == max(n_groups // 2, 1)
    with pytest.raises(ValueError, match="keep must lie in"):
        keep_groups(g, pad, 1.0)


def test_equalize_and_trim():
    B, N = 3, 6
    pad = torch.tensor([[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0], [0, 0, 1, 1, 1, 1]]).bool()
    hidden = torch.tensor([[1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0], [1, 0, 0, 0, 0, 0]]).bool()
    batch = dict(values=torch.randn(B, N, 1), positions=torch.randn(B, 2, N), pad_mask=pad)
    e = equalize(batch, hidden)
    assert e["mask"].sum(1).tolist() == [4, 4, 4]  # everyone hides the largest count
    assert torch.equal(e["mask"][:, :N] & ~e["pad_mask"][:, :N], hidden)  # exactly `hidden` on real tokens
    assert e["values"].shape[1] == N + 1  # sample 0 must hide 3 padded slots and has 2: one column appended
    assert torch.equal(e["values"][:, :N], batch["values"])
    with pytest.raises(ValueError, match="hides every real token"):
        equalize(batch, ~pad)
    with pytest.raises(ValueError, match="padded tokens"):
        equalize(batch, pad)
    t = trim_padding(dict(batch, mask=hidden))
    assert t["values"].shape[1] == 6  # sample 1 has no padding: nothing to cut
    t = trim_padding({k: v[[0, 2]] for k, v in dict(batch, mask=hidden).items()})
    assert t["values"].shape[1] == 4 and t["positions"].shape[2] == 4 and t["mask"].shape[1] == 4


def test_model_predictions_do_not_depend_on_batching():
    """Trimming, equalising and length-sorted batches leave each record's predictions unchanged."""
    rng = np.random.default_rng(0)
    rows = []
    for rid in range(1, 8):
        for k in range(rng.integers(3, 12)):
            rows.append((rid, float(k), int(rng.integers(0, 41)), float(rng.normal())))
    df = pd.DataFrame(rows, columns=["record_id", "time", "variable", "value"]).drop_duplicates(
        ["record_id", "time", "variable"]).sort_values(["record_id", "time", "variable"], ignore_index=True)
    df = df.assign(t=df.time / df.time.max())
    sc = P.Scaling("zscore", np.zeros(41), np.ones(41))
    run = E.RunConfig(encoder="tiny-shallow")
    torch.manual_seed(0)
    model = E.RoMAEForPreTraining(run.model_config()).eval()
    ds = E.tokens(df, sc, 100.0)
    hidden = E.hidden_rows(df, "timepoint", 0)
    a = E.model_predictions(model, ds, hidden, batch=1)
    b = E.model_predictions(model, ds, hidden, batch=7)
    assert a.shape == (hidden.sum(),) and np.allclose(a, b, atol=1e-5)


def test_bucketed_order_is_a_permutation_with_similar_lengths():
    from romae.feeding import bucketed as _bucketed

    lengths = torch.randint(1, 1000, (103,))
    perm = torch.randperm(103, generator=torch.Generator().manual_seed(0))
    order = _bucketed(perm, lengths, batch=8, buckets=4, generator=torch.Generator().manual_seed(1))
    assert sorted(order.tolist()) == list(range(103))
    assert torch.equal(order[96:], torch.cat([w[lengths[w].argsort(stable=True)] for w in perm.split(32)])[96:])
    spread = [int(lengths[b].max() - lengths[b].min()) for b in order[:96].split(8)]
    assert np.mean(spread) < 0.5 * int(lengths.max() - lengths.min())  # batches of similar length


def test_fit_applies_transform_and_buckets():
    from romae.config import TrainConfig
    from romae.model import RoMAEForPreTraining
    from romae.train import ArrayDataset, fit

    run = E.RunConfig(encoder="tiny-shallow")
    n, N = 12, 10
    pad = torch.arange(N).expand(n, N) >= torch.randint(4, N + 1, (n, 1))
    data = ArrayDataset(values=torch.randn(n, N, 1), positions=torch.rand(n, 2, N) * 10, pad_mask=pad)
    seen = []

    def transform(batch):
        out = trim_padding(batch)
        seen.append(out["values"].shape[1])
        return out

    cfg = TrainConfig(epochs=1, batch_size=4, lr=1e-3, warmup_steps=0, progress=False, length_buckets=3)
    torch.manual_seed(0)
    fit(RoMAEForPreTraining(run.model_config()), data, cfg, transform=transform, device="cpu")
    assert len(seen) == 3 and max(seen) <= N
    with pytest.raises(ValueError, match="length_buckets needs a dataset with a pad_mask"):
        fit(RoMAEForPreTraining(run.model_config()), ArrayDataset(values=torch.randn(n, N, 1),
                                                                  positions=torch.rand(n, 2, N)), cfg, device="cpu")
    with pytest.raises(ValueError, match=r"TrainConfig.length_buckets must be a whole number >= 0"):
        TrainConfig(length_buckets=-1)


@pytest.fixture(scope="module")
def real_records():
    from romae.data import catalog

    if why := catalog.unavailable("physionet2012"):
        pytest.skip(why)
    return P.records(progress=False)


def test_real_records(real_records):
    df = real_records
    assert df.record_id.nunique() == 8000 and set(df.set.unique()) == {"a", "b"}
    # every data line but the 8,000 RecordID lines is one observation (MANIFEST: 1,757,980 + 1,762,535 lines)
    assert int(df.n_obs.sum()) == 1_757_980 + 1_762_535 - 8000
    assert df.time.min() == 0.0 and df.time.max() <= 48.0 + 1e-9
    assert df.variable.between(0, 40).all() and df.variable.nunique() == 41
    assert df.groupby(["record_id", "time", "variable"]).size().max() == 1
    tr, te = P.split(df.record_id)
    assert len(tr) == 6400 and len(te) == 1600


def test_scale_facts_make_quick_rows_reduced():
    """PhysioNet quick (4 of 200 epochs, tiny-shallow encoder, t x 2880) is reduced from its facts, not a note."""
    from romae.compendium import report

    quick = E.config("quick")
    fields = E.scale_of(quick.run, 6400, 1600)
    assert fields["epochs"] == [4, 200] and fields["seeds"] == [1, None]  # the paper does not state its seeds
    assert report.qualifiers(fields, "quick") == ["positions rescaled", "reduced"]
    assert "positions rescaled" not in report.qualifiers(E.scale_of(quick.control, 6400, 1600), "quick")
    assert report.qualifiers(E.scale_of(None, 6400, 1600), "quick") == []  # a baseline on all the records
    assert report.qualifiers(E.scale_of(None, 200, 100), "smoke") == ["reduced"]
    assert "stand-in" in report.qualifiers(E.scale_of(None, 30, 8, generated=True), "paper")


def test_rows_lead_with_the_papers_scoring():
    """The headline scoring is the one paper_values.csv compares with the paper's 0.57: every hidden value of the
    (winsorised) data scored on the z-score, as HeTVAE's evaluate_hetvae scores every hidden value."""
    from romae.compendium.reference import paper_values

    rows = [dict(method=m, norm=n, unit=u, mean=1.0) for m in ("linear interpolation", "RoMAE")
            for n in ("minmax", "zscore", "zscore_inliers") for u in ("timepoint", "token")]
    o = E.ordered(pd.DataFrame(rows))
    assert (o.norm.iloc[0], o.unit.iloc[0], o.method.iloc[0]) == (E.LEAD, "token", "RoMAE") == ("zscore", "token",
                                                                                                "RoMAE")
    assert E.SCORINGS[E.LEAD] == ("zscore", False)  # nothing left unscored
    compared = [r["setting"] for r in paper_values() if r["experiment"] == E.EXPERIMENT
                and r["setting"].startswith("PhysioNet")]
    assert compared == [E.setting(E.LEAD, "token")]
    mse = pd.DataFrame(dict(method="RoMAE", norm=["zscore", "zscore_inliers"], n_scored=[1000, 990]))
    assert E.unscored(mse) == pytest.approx(0.01)


PH, HR, GENDER = P.VARIABLES.index("pH"), P.VARIABLES.index("HR"), P.VARIABLES.index("Gender")


def _records_with_gross_errors(n_records: int = 400):
    """Records of a plausible shape (Gender at 0 h; pH and HR at 1..8 h) with a pH of 99 planted in the first
    training record (sorted ids) and a pH of 735 in the first test record: -> (table, train id, test id)."""
    rng = np.random.default_rng(0)
    ids = np.arange(130_000, 130_000 + n_records)
    parts = []
    for rid in ids:
        t = np.arange(1.0, 9.0)
        parts += [pd.DataFrame(dict(record_id=rid, time=0.0, variable=GENDER, value=[float(rng.integers(-1, 2))])),
                  pd.DataFrame(dict(record_id=rid, time=t, variable=PH, value=rng.normal(7.38, 0.06, 8))),
                  pd.DataFrame(dict(record_id=rid, time=t, variable=HR, value=rng.normal(85.0, 12.0, 8)))]
    df = pd.concat(parts, ignore_index=True).sort_values(["record_id", "time", "variable"], ignore_index=True)
    train_ids, test_ids = P.split(df.record_id)
    bad_train, bad_test = int(np.sort(train_ids)[0]), int(np.sort(test_ids)[0])
    df.loc[(df.record_id == bad_train) & (df.variable == PH) & (df.time == 3.0), "value"] = 99.0
    df.loc[(df.record_id == bad_test) & (df.variable == PH) & (df.time == 5.0), "value"] = 735.0
    df = df.assign(set="a", n_obs=1).astype(dict(variable=np.int8))
    return df, bad_train, bad_test


@pytest.fixture
def gross_data(monkeypatch):
    df, bad_train, bad_test = _records_with_gross_errors()
    monkeypatch.setattr(E.P, "records", lambda *a, **k: df)
    prof = E.config("quick")  # every record (quick keeps all 6,400): enough values for the 99.95 % quantile
    return E.prepare(prof), prof, bad_train, bad_test


def test_every_value_the_model_sees_lies_within_the_anomaly_bounds(gross_data):
    """A batch holding a pH of 99 (z ~ 1,500): every input and target of the model, training and test, lies within
    the training split's anomaly bounds (HeTVAE's 0.1 %/99.95 % quantiles) in z-score units; the value as recorded
    is kept in `raw` and the baselines see the winsorised one."""
    data, prof, bad_train, bad_test = gross_data
    lo, hi = data["bounds"]
    assert lo[PH] > 7.0 and hi[PH] < 8.0  # the planted errors do not move the bounds
    sc = data["scalings"]["zscore"]
    z_lo, z_hi = sc.transform(np.arange(len(lo)), lo), sc.transform(np.arange(len(hi)), hi)
    for split, rid, recorded in (("train", bad_train, 99.0), ("test", bad_test, 735.0)):
        d = data[split]
        planted = (d.record_id == rid) & (d.raw == recorded)
        assert planted.sum() == 1 and d.value[planted].iloc[0] == hi[PH]  # clipped to the bound, recorded kept
        assert abs(sc.transform([PH], [recorded])[0]) > E.GROSS_Z
        ds = E.tokens(d, sc, prof.run.time_scale)
        pad = ds.tensors["pad_mask"]
        values = ds.tensors["values"][..., 0]
        var = ds.tensors["positions"][:, 1].round().long()
        real = ~pad
        assert (values[real] >= torch.as_tensor(z_lo)[var[real]] - 1e-5).all()
        assert (values[real] <= torch.as_tensor(z_hi)[var[real]] + 1e-5).all()
        assert values[real].abs().max() < 10  # pH 99 would be z ~ 1,500
    # the batch the training draws with the planted record in it
    train_ds = E.tokens(data["train"], sc, prof.run.time_scale)
    lengths = (~train_ds.tensors["pad_mask"]).sum(1)
    row = int(np.searchsorted(np.sort(data["train"].record_id.unique()), bad_train))
    idx = next(i for _, i in E.training_order(lengths, prof.run.train_config()) if row in i)
    batch = E.train_transform("token")({k: v[torch.as_tensor(idx)] for k, v in train_ds.tensors.items()})
    real = ~batch["pad_mask"]
    assert batch["values"][..., 0][real].abs().max() <= float(np.abs(np.r_[z_lo[PH], z_hi[PH]]).max()) + 1e-5
    # the baselines' training mean is the winsorised one
    assert data["train_mean"][PH] < 7.5


def test_anomaly_bounds_leave_codes_unclipped():
    var = np.r_[np.zeros(3000, int), np.ones(3000, int)]
    val = np.r_[np.random.default_rng(0).integers(-1, 2, 3000).astype(float), np.r_[np.linspace(0, 1, 2999), 50.0]]
    b = E.anomaly_bounds(var, val, n_variables=3)
    assert np.isinf(b[:, 0]).all() and np.isinf(b[:, 2]).all()  # a code (3 distinct values); never observed
    assert b[1, 1] < 50 and np.isclose(b[0, 1], np.quantile(val[var == 1], 0.001))
    w = E.winsorise(pd.DataFrame(dict(variable=var, value=val)), b)
    assert w.value[var == 0].tolist() == val[var == 0].tolist()  # Gender -1 stays -1
    assert w.value[var == 1].max() == b[1, 1] and w.raw.max() == 50.0
    assert E.winsorise(w, b).raw.max() == 50.0  # twice: the recorded value is still the recorded one


def test_training_order_replays_fit():
    """`training_order` draws exactly the batches `romae.train.fit` trains on (same seed, length buckets)."""
    from romae.config import TrainConfig
    from romae.model import RoMAEForPreTraining
    from romae.train import ArrayDataset, fit

    n, N = 22, 10
    lengths = torch.randint(3, N + 1, (n,), generator=torch.Generator().manual_seed(1))
    pad = torch.arange(N).expand(n, N) >= lengths[:, None]
    values = torch.arange(n, dtype=torch.float32)[:, None, None].expand(n, N, 1).clone()  # token value = sample
    data = ArrayDataset(values=values, positions=torch.rand(n, 2, N) * 10, pad_mask=pad)
    seen = []

    def transform(batch):
        seen.append(batch["values"][:, 0, 0].long().tolist())
        return trim_padding(batch)

    cfg = TrainConfig(epochs=2, batch_size=4, lr=1e-3, warmup_steps=0, progress=False, length_buckets=2, seed=3)
    torch.manual_seed(0)
    fit(RoMAEForPreTraining(E.RunConfig(encoder="tiny-shallow").model_config()), data, cfg, transform=transform,
        device="cpu")
    replay = list(E.training_order(lengths, cfg))
    assert [s for s, _ in replay] == list(range(1, len(seen) + 1)) and len(seen) == 2 * 6
    assert [i.tolist() for _, i in replay] == seen


def test_batch_extremes_find_the_planted_record(gross_data):
    """The replayed batches name the record with the gross error, at one step per epoch, and show it winsorised."""
    data, prof, bad_train, _ = gross_data
    run = dataclasses.replace(prof.run, epochs=2)
    b = E.batch_extremes(data, run)
    steps_per_epoch = -(-data["train"].record_id.nunique() // run.batch_size)
    assert len(b) == 2 * steps_per_epoch and b.step.tolist() == list(range(1, len(b) + 1))
    g = E.gross_batches(dict(batches=b))
    assert set(g.record_id) == {bad_train} and len(g) == 2  # once per epoch
    assert (g.variable == "pH").all() and (g.recorded == 99.0).all() and (g.z_recorded > E.GROSS_Z).all()
    assert g.step.iloc[0] <= steps_per_epoch < g.step.iloc[1]
    # fit logs every log_every steps and at the last one
    assert ((g.logged % run.train_config().log_every == 0) | (g.logged == len(b))).all()
    assert (g.logged >= g.step).all() and (g.logged - g.step < run.train_config().log_every).all()
    assert (g.mean_z2_recorded > 100 * b.mean_z2_recorded.median()).all()
    assert b.max_z_trained.max() < 10 and b.mean_z2_trained.max() < 3 * b.mean_z2_trained.median()
    # the planted test error is not in the training batches
    assert (b.recorded != 735.0).all()
    res = dict(batches=b, runs={"RoMAE": run}, profile_name="quick", flags={"RoMAE": ""})
    text = E.spike_text(res)
    assert f"{bad_train} (pH 99" in text and "no loss spike or divergence flagged" in text


def test_published_values_are_drawn_distinguishably(tmp_path):
    """Each published PhysioNet value is its own line (colour and style), named with its value in the legend."""
    import matplotlib.pyplot as plt

    from romae.compendium.reference import peer_values

    rows = [dict(method=m, norm=n, unit=u, mean=0.5 + 0.1 * k, std=0.01)
            for k, m in enumerate(E.METHODS) for n in E.NORMS for u in E.UNITS]
    res = dict(summary=pd.DataFrame(rows), profile_name="quick", scale=E.scale_of(E.config("quick").run, 6400, 1600))
    fig = E.plot_methods(res)
    pub = [r for r in peer_values(E.EXPERIMENT) if r["benchmark"] == "PhysioNet"]
    for ax in fig.axes[:2]:  # the two z-score panels
        lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("published")]
        assert len(lines) == len(pub)
        styles = {(str(ln.get_color()), str(ln.get_linestyle())) for ln in lines}
        assert len(styles) == len(pub)  # no two drawn alike
        labels = " ".join(ln.get_label() for ln in lines)
        assert all(f"{r['model']} {float(r['value']):.3f}" in labels for r in pub)
    legend = " ".join(t.get_text() for t in fig.legends[0].get_texts())
    assert all(f"{float(r['value']):.3f}" in legend for r in pub)
    plt.close(fig)
    more = E.published_styles(list(E.PUBLISHED_STYLES) + ["peer A", "peer B"])
    assert len({st[:2] for st in more.values()}) == len(more)


def test_conclusion_draws_nothing_from_a_flagged_run_and_the_prose_says_so():
    """The generated conclusion compares RoMAE with linear interpolation only for an unflagged run that learned;
    notebook 16's prose about it must hold either way (it may not promise a comparison the conclusion omits)."""
    import nbformat

    rows = [dict(method=m, norm=n, unit=u, mean={"RoMAE": 0.3, "training mean": 1.0}.get(m, 0.5), std=0.01)
            for m in E.METHODS for n in E.NORMS for u in E.UNITS]
    test = pd.DataFrame(dict(record_id=[1], time=[1.0], variable=[PH], raw=[99.0], value=[7.6]))
    data = dict(test=test, scalings=dict(zscore=P.Scaling("zscore", np.full(41, 7.4), np.full(41, 0.08))))
    res = dict(summary=pd.DataFrame(rows), data=data, flags={"RoMAE": ""})
    ok = E.conclusion(res)
    assert sum("RoMAE 0.3 beats linear interpolation" in ln for ln in ok.splitlines()) == len(E.NORMS) * len(E.UNITS)
    flagged = E.conclusion(dict(res, flags={"RoMAE": "loss spikes: 3 of 64"}))
    assert "no conclusion is drawn" in flagged and "beats" not in flagged
    nb = nbformat.read(Path(__file__).parents[1] / "notebooks" / "16_physionet_interpolation.ipynb", as_version=4)
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "is printed by the conclusion above" not in prose


def test_rows_count_trained_models_and_show_the_baselines(tmp_path, monkeypatch):
    """A dry run (2 steps, generated records): every method is an `mse` row; RoMAE's n_seeds is its one trained
    model, a baseline's 0, the mask draws are in the note; the baselines are summary rows with no paper value."""
    from romae.compendium import report
    from romae.runner.summary import build_summary
    from romae import runtime

    monkeypatch.setenv("ROMAE_MAX_STEPS", "2")
    monkeypatch.setenv("ROMAE_DEVICE", "cpu")
    res = E.run("smoke", data_root=tmp_path / "none", reports_dir=tmp_path, cache_dir=tmp_path / "cache")
    rows = pd.read_csv(tmp_path / "results.csv")
    assert set(rows.metric) == {"mse"}
    lead = E.setting(E.LEAD, "token")
    assert rows.setting.iloc[0] == lead  # the headline scoring first
    for b in E.BASELINES:
        r = rows[rows.setting == f"{lead}, baseline: {b}"].iloc[0]
        assert r.n_seeds == 0 and "no training" in r.note and "mask draw" in r.note and pd.isna(r.learned)
    r = rows[rows.setting == lead].iloc[0]
    assert r.n_seeds == 1 and "one trained model" in r.note and "1 seeded evaluation mask draw" in r.note
    assert json.loads(r.learned)["predictor"] == "the training mean of each variable"
    assert json.loads(r.scale)["dataset"][0].startswith("generated")
    summary = build_summary(tmp_path)
    base = summary[summary.setting == f"{E.setting('zscore', 'token')}, baseline: linear interpolation"]
    assert base.status.iloc[0].startswith("no paper value")
    for plot in (E.plot_methods, E.plot_learning_curves, E.plot_record, E.plot_per_variable):
        fig = plot(res)
        text = " ".join([fig._suptitle.get_text() if fig._suptitle else ""] + [a.get_title() for a in fig.axes])
        assert "(smoke profile, stand-in, positions rescaled, reduced)" in text
    # the notebook's generated text and tables
    for text in (E.conclusion(res), E.spike_text(res)):
        assert text.startswith("- ")
    assert set(E.gross_outliers(res, n=3).columns) >= {"recorded", "winsorised", "z_recorded", "z_winsorised"}
    assert runtime.DRY_LABEL in res["data"]["source"]
