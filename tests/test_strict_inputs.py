"""Strict inputs: unknown batch keys, batch-size agreement, non-finite values, dtypes, labels, masks,
warm-up, validation metrics, `predict`, `romae.metrics` and `from_pretrained`.

Every test uses a tiny model (d_model 32, 2 heads, 2 blocks; decoder 24 wide, 1 block) on the CPU.
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F

from romae import metrics as M
from romae.config import EncoderConfig, RoMAEConfig, TrainConfig
from romae.masking import random_mask
from romae.model import RoMAEForPrediction, RoMAEForPreTraining
from romae.train import ArrayDataset, fit, predict

TOKEN_DIM, N_AXES = 4, 2


def cfg(**kw) -> RoMAEConfig:
    base = dict(token_dim=TOKEN_DIM, n_axes=N_AXES, encoder=EncoderConfig(d_model=32, n_heads=2, depth=2),
                decoder=EncoderConfig(d_model=24, n_heads=2, depth=1), n_outputs=3)
    return RoMAEConfig(**{**base, **kw})


def tokens(B=2, N=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, N, TOKEN_DIM, generator=g), torch.rand(B, N_AXES, N, generator=g) * 20


def padded(B=2, N=6, P=3, seed=0):
    """values [B, N+P, D], positions [B, A, N+P] with zeros in the P padded slots, pad_mask."""
    values, pos = tokens(B, N, seed)
    values = torch.cat((values, torch.zeros(B, P, TOKEN_DIM)), 1)
    pos = torch.cat((pos, torch.zeros(B, N_AXES, P)), 2)
    pad = torch.zeros(B, N + P, dtype=torch.bool)
    pad[:, N:] = True
    return values, pos, pad


def prediction(seed=0, **kw) -> RoMAEForPrediction:
    torch.manual_seed(seed)
    return RoMAEForPrediction(cfg(**kw)).eval()


def pretraining(seed=0, **kw) -> RoMAEForPreTraining:
    torch.manual_seed(seed)
    return RoMAEForPreTraining(cfg(**kw)).eval()


def fill_padding(values, pos, pad, garbage):
    """Copies with `garbage` in every padded slot of values and positions."""
    v, p = values.clone(), pos.clone()
    v[pad] = garbage
    p.transpose(1, 2)[pad] = garbage
    return v, p


GARBAGE = [float("nan"), float("inf"), -float("inf"), 1e30]


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models run fastest on one thread; on a busy machine, fused CPU AdamW with several OpenMP
    threads can take ~10 ms per parameter tensor and step (thread hand-off), a 100x slowdown here."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# ----------------------------------------------------------------------------- 1. unknown batch keys

def test_pretraining_rejects_unknown_batch_key():
    values, pos, pad = padded()
    with pytest.raises(TypeError, match=r"RoMAEForPreTraining got unexpected batch key\(s\) \['padding_mask'\]"
                                        r".*accepts .*pad_mask"):
        pretraining()(values=values, positions=pos, padding_mask=pad)


def test_prediction_rejects_unknown_batch_key():
    values, pos = tokens()
    with pytest.raises(TypeError, match=r"unexpected batch key\(s\) \['label'\].*labels.*pad_mask"):
        prediction()(values=values, positions=pos, label=torch.tensor([0, 1]))


def test_pretraining_accepts_and_ignores_labels():
    model = pretraining()
    values, pos = tokens()
    mask = torch.tensor([[True, False, True, False, False, True]] * 2)
    pred, loss = model(values, pos, mask=mask)
    pred_l, loss_l = model(values, pos, mask=mask, labels=torch.tensor([0, 2]))
    assert torch.equal(pred, pred_l) and torch.equal(loss, loss_l)


# ----------------------------------------------------------------------------- 2. batch sizes agree

@pytest.mark.parametrize("model_fn", [pretraining, prediction], ids=["pretraining", "prediction"])
def test_positions_of_other_batch_size_raise(model_fn):
    values, _ = tokens(B=2)
    _, pos = tokens(B=3)
    with pytest.raises(ValueError, match=r"batch sizes disagree: values has 2 samples, positions 3"):
        model_fn()(values, pos)


@pytest.mark.parametrize("model_fn", [pretraining, prediction], ids=["pretraining", "prediction"])
def test_labels_of_other_batch_size_raise(model_fn):
    values, pos = tokens(B=2)
    with pytest.raises(ValueError, match=r"batch sizes disagree.*labels 3"):
        model_fn()(values, pos, labels=torch.tensor([0, 1, 2]))


def test_pad_mask_and_mask_of_other_batch_size_raise():
    values, pos = tokens(B=2, N=6)
    with pytest.raises(ValueError, match=r"batch sizes disagree.*pad_mask 3"):
        prediction()(values, pos, pad_mask=torch.zeros(3, 6, dtype=torch.bool))
    mask = torch.tensor([[True, False] * 3] * 3)
    with pytest.raises(ValueError, match=r"batch sizes disagree.*mask 3"):
        pretraining()(values, pos, mask=mask)


# ----------------------------------------------------------------------------- 3. non-finite values

@pytest.mark.parametrize("head", ["mean", "cls"])
@pytest.mark.parametrize("garbage", GARBAGE)
def test_garbage_in_padding_does_not_change_pooled_outputs(head, garbage):
    model = prediction(head=head)
    values, pos, pad = padded()
    labels = torch.tensor([0, 2])
    ref, ref_loss = model(values, pos, labels=labels, pad_mask=pad)
    out, loss = model(*fill_padding(values, pos, pad, garbage), labels=labels, pad_mask=pad)
    assert torch.isfinite(out).all() and torch.isfinite(loss)
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(loss, ref_loss, atol=1e-6, rtol=0)
    # and the same as without the padded slots at all
    short, _ = model(values[:, :6], pos[..., :6])
    torch.testing.assert_close(out, short, atol=1e-5, rtol=0)


@pytest.mark.parametrize("garbage", GARBAGE)
def test_garbage_in_padding_does_not_change_real_token_outputs(garbage):
    model = prediction(head="tokens", task="regression", n_outputs=2)
    values, pos, pad = padded()
    labels = torch.randn(2, 9, 2)
    ref, ref_loss = model(values, pos, labels=labels, pad_mask=pad)
    out, loss = model(*fill_padding(values, pos, pad, garbage), labels=labels, pad_mask=pad)
    assert torch.isfinite(out[~pad]).all() and torch.isfinite(loss)
    torch.testing.assert_close(out[~pad], ref[~pad], atol=1e-6, rtol=0)
    torch.testing.assert_close(loss, ref_loss, atol=1e-6, rtol=0)


@pytest.mark.parametrize("garbage", GARBAGE)
def test_garbage_in_padding_does_not_change_pretraining(garbage):
    model = pretraining()
    values, pos, pad = padded(N=6, P=3)
    # 4 hidden per sample: 3 real + 1 padded slot
    mask = torch.tensor([[True, False, True, False, True, False, True, False, False]] * 2)
    ref, ref_loss = model(values, pos, mask=mask, pad_mask=pad)
    pred, loss = model(*fill_padding(values, pos, pad, garbage), mask=mask, pad_mask=pad)
    assert torch.isfinite(pred).all() and torch.isfinite(loss)
    torch.testing.assert_close(pred, ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(loss, ref_loss, atol=1e-6, rtol=0)


@pytest.mark.parametrize("model_fn", [pretraining, prediction], ids=["pretraining", "prediction"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_real_value_names_sample_and_token(model_fn, bad):
    values, pos, pad = padded()
    values[1, 2, 3] = bad
    with pytest.raises(ValueError, match=rf"values must be finite, found {bad} in sample 1 of the batch, token 2 \(real"):
        model_fn()(values, pos, pad_mask=pad)
    with pytest.raises(ValueError, match=rf"found {bad} in sample 1 of the batch, token 2"):  # no pad_mask at all
        model_fn()(values[:, :6], pos[..., :6])


@pytest.mark.parametrize("model_fn", [pretraining, prediction], ids=["pretraining", "prediction"])
@pytest.mark.parametrize("bad", [float("nan"), -float("inf")])
def test_non_finite_real_position_names_sample_and_token(model_fn, bad):
    values, pos, pad = padded()
    pos[0, 1, 4] = bad
    with pytest.raises(ValueError, match=rf"positions must be finite, found {bad} in sample 0 of the batch, token 4"):
        model_fn()(values, pos, pad_mask=pad)


# ----------------------------------------------------------------------------- 4. dtypes and labels

def test_float64_inputs_match_float32():
    values, pos, pad = padded()
    clf = prediction()
    torch.testing.assert_close(clf(values.double(), pos.double(), pad_mask=pad)[0],
                               clf(values, pos, pad_mask=pad)[0], atol=1e-6, rtol=0)
    pre = pretraining()
    mask = torch.tensor([[True, False, True, False, True, False, True, False, False]] * 2)
    p64, l64 = pre(values.double(), pos.double(), mask=mask, pad_mask=pad)
    p32, l32 = pre(values, pos, mask=mask, pad_mask=pad)
    assert p64.dtype == torch.float32
    torch.testing.assert_close(p64, p32, atol=1e-6, rtol=0)
    torch.testing.assert_close(l64, l32, atol=1e-6, rtol=0)


def test_integer_values_and_positions_are_cast():
    g = torch.Generator().manual_seed(3)
    values = torch.randint(-5, 6, (2, 6, TOKEN_DIM), generator=g)
    pos = torch.randint(0, 30, (2, N_AXES, 6), generator=g)
    clf = prediction()
    out, _ = clf(values, pos)
    torch.testing.assert_close(out, clf(values.float(), pos.float())[0], atol=1e-6, rtol=0)
    pre = pretraining()
    mask = torch.tensor([[True, False] * 3] * 2)
    torch.testing.assert_close(pre(values, pos, mask=mask)[1], pre(values.float(), pos.float(), mask=mask)[1],
                               atol=1e-6, rtol=0)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8])
def test_integer_class_labels_of_any_width(dtype):
    model = prediction()
    values, pos = tokens(B=3)
    labels = torch.tensor([0, 2, 1])
    out, ref = model(values, pos, labels=labels.long())
    _, loss = model(values, pos, labels=labels.to(dtype))
    torch.testing.assert_close(loss, ref)
    torch.testing.assert_close(ref, F.cross_entropy(out, labels))


def test_float_class_indices_are_refused():
    values, pos = tokens()
    with pytest.raises(ValueError, match="integer class indices"):
        prediction()(values, pos, labels=torch.tensor([0.0, 2.0]))


def test_class_probabilities_are_accepted():
    model = prediction(label_smoothing=0.1)
    values, pos = tokens()
    probs = torch.tensor([[0.2, 0.5, 0.3], [1.0, 0.0, 0.0]])
    out, loss = model(values, pos, labels=probs)
    torch.testing.assert_close(loss, F.cross_entropy(out, probs, label_smoothing=0.1))
    # one-hot probabilities give the same loss as the class indices
    _, hard = model(values, pos, labels=torch.tensor([1, 0]))
    _, onehot = model(values, pos, labels=F.one_hot(torch.tensor([1, 0]), 3).float())
    torch.testing.assert_close(onehot, hard)


@pytest.mark.parametrize("label", [3, 7, -1])
def test_class_label_out_of_range_names_it(label):
    values, pos = tokens()
    with pytest.raises(ValueError, match=rf"class labels must lie in \[0, n_outputs=3\), found {label}"):
        prediction()(values, pos, labels=torch.tensor([0, label]))


def test_regression_labels_of_wrong_size_raise():
    values, pos = tokens()
    model = prediction(task="regression", n_outputs=2, head="mean")
    with pytest.raises(ValueError, match=r"regression labels must have \[2, 2\] entries, got \[2, 3\]"):
        model(values, pos, labels=torch.zeros(2, 3))
    out, loss = model(values, pos, labels=torch.ones(2, 2))  # the right size works
    torch.testing.assert_close(loss, ((out - 1) ** 2).mean())


# ----------------------------------------------------------------------------- 5. masks and sizes

def test_mask_hiding_no_token_raises():
    values, pos = tokens()
    with pytest.raises(ValueError, match="hides no token"):
        pretraining()(values, pos, mask=torch.zeros(2, 6, dtype=torch.bool))


@pytest.mark.parametrize("ratio", [0, 0.0, 1, 1.0, -0.5, 1.5])
def test_mask_ratio_outside_open_interval_raises(ratio):
    with pytest.raises(ValueError, match="mask_ratio"):
        cfg(mask_ratio=ratio)


def test_random_mask_ratio_zero_raises():
    with pytest.raises(ValueError, match="mask_ratio"):
        random_mask(2, 6, 0.0)
    with pytest.raises(ValueError, match="mask_ratio"):
        random_mask(2, 6, 1.0)
    assert random_mask(2, 6, 0.5).sum(1).tolist() == [3, 3]


def test_single_token_pretraining_raises():
    values, pos = tokens(N=1)
    with pytest.raises(ValueError, match="at least 2 tokens"):
        pretraining()(values, pos)
    with pytest.raises(ValueError, match="at least 2 tokens"):  # a given mask too
        pretraining()(values, pos, mask=torch.ones(2, 1, dtype=torch.bool))


@pytest.mark.parametrize("head", ["cls", "mean", "tokens"])
def test_single_token_prediction_works(head):
    values, pos = tokens(N=1)
    out, loss = prediction(head=head)(values, pos, labels=torch.tensor([1, 2]) if head != "tokens" else None)
    assert torch.isfinite(out).all()
    assert out.shape == ((2, 1, 3) if head == "tokens" else (2, 3))
    if head != "tokens":
        assert torch.isfinite(loss)


@pytest.mark.parametrize("model_fn", [pretraining, prediction], ids=["pretraining", "prediction"])
def test_empty_batch_raises(model_fn):
    with pytest.raises(ValueError, match="empty batch"):
        model_fn()(torch.zeros(0, 6, TOKEN_DIM), torch.zeros(0, N_AXES, 6))


# ----------------------------------------------------------------------------- 6. warm-up

def clf_data(n=20, N=5, seed=0, pad=False) -> ArrayDataset:
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % 2
    values = torch.randn(n, N, TOKEN_DIM, generator=g) + labels[:, None, None].float()  # learnable
    pos = torch.rand(n, N_AXES, N, generator=g) * 10
    extra = {}
    if pad:
        pm = torch.zeros(n, N, dtype=torch.bool)
        pm[1::3, -2:] = True
        extra["pad_mask"] = pm
    return ArrayDataset(values=values, positions=pos, labels=labels, **extra)


def train_cfg(**kw) -> TrainConfig:
    # 20 samples / batch 4 -> 5 steps per epoch; 4 epochs -> 20 steps
    base = dict(epochs=4, batch_size=4, lr=1e-3, warmup_steps=0, log_every=1, progress=False, seed=0)
    return TrainConfig(**{**base, **kw})


def test_warmup_fraction_sets_the_warmup_steps():
    tc = train_cfg(warmup_fraction=0.1)
    assert tc.warmup(20) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 2 warm-up steps of 20: no warning
        res = fit(prediction(n_outputs=2), clf_data(), tc, device="cpu")
    assert res.steps == 20
    lrs = [r["lr"] for r in res.history if "lr" in r]
    assert len(lrs) == 20
    assert lrs[0] == pytest.approx(0.5e-3) and lrs[1] == pytest.approx(1e-3)  # linear rise over 2 steps
    assert all(a > b for a, b in zip(lrs[1:], lrs[2:]))  # then a strictly decaying cosine
    assert lrs[-1] < 0.05e-3


@pytest.mark.parametrize("fraction", [1.0, 1.5, -0.1])
def test_warmup_fraction_outside_unit_interval_raises(fraction):
    with pytest.raises(ValueError, match="warmup_fraction"):
        TrainConfig(warmup_fraction=fraction)


@pytest.mark.parametrize("warmup_steps", [20, 625])
def test_warmup_not_shorter_than_run_warns(warmup_steps):
    with pytest.warns(UserWarning, match="warm-up"):
        fit(prediction(n_outputs=2), clf_data(), train_cfg(warmup_steps=warmup_steps), device="cpu",
            max_steps=1)


# ----------------------------------------------------------------------------- 7. validation metrics

def test_fit_logs_validation_metrics():
    val = clf_data(n=10, seed=1)
    res = fit(prediction(n_outputs=2), clf_data(), train_cfg(epochs=2), val_data=val, device="cpu",
              metrics=("accuracy", "macro_f1"))
    rows = [r for r in res.history if "val_loss" in r]
    assert [r["step"] for r in rows] == [5, 10]
    for r in rows:
        assert math.isfinite(r["val_loss"])
        assert 0.0 <= r["accuracy"] <= 1.0 and 0.0 <= r["macro_f1"] <= 1.0
    # the last row's metrics are those of predict() on the final model
    logits = predict(res.model, val, batch_size=4)
    assert rows[-1]["accuracy"] == pytest.approx(M.accuracy(val.tensors["labels"], logits))
    assert rows[-1]["macro_f1"] == pytest.approx(M.macro_f1(val.tensors["labels"], logits))


def test_fit_metrics_errors_and_custom_metric():
    val = clf_data(n=7, seed=1)
    with pytest.raises(ValueError, match=r"unknown metric\(s\) \['auc'\]; choose from accuracy, macro_f1, mse"):
        fit(prediction(n_outputs=2), clf_data(), train_cfg(), val_data=val, device="cpu", metrics=["auc"])
    with pytest.raises(ValueError, match="val_data"):
        fit(prediction(n_outputs=2), clf_data(), train_cfg(), device="cpu", metrics=["accuracy"])
    seen = []

    def mine(y_true, y_pred):
        seen.append((y_true.shape, y_pred.shape))
        return 0.25

    res = fit(prediction(n_outputs=2), clf_data(), train_cfg(epochs=1), val_data=val, device="cpu",
              metrics={"mine": mine})
    rows = [r for r in res.history if "val_loss" in r]
    assert rows and all(r["mine"] == 0.25 for r in rows)
    assert seen[-1] == ((7,), (7, 2))  # all validation samples, batched over 4 + 3


# ----------------------------------------------------------------------------- 8. predict

def test_predict_matches_one_forward_in_eval_mode_and_restores_mode():
    torch.manual_seed(0)
    model = RoMAEForPrediction(cfg(n_outputs=2, encoder=EncoderConfig(d_model=32, n_heads=2, depth=2,
                                                                        dropout=0.5), head_dropout=0.5))
    data = clf_data(n=10, pad=True)  # with labels and a pad_mask
    model.train()
    out = predict(model, data, batch_size=3)
    assert model.training  # mode restored
    t = data.tensors
    model.eval()
    ref, _ = model(t["values"], t["positions"], pad_mask=t["pad_mask"])
    assert out.shape == (10, 2)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)
    # the pad mask was used: without it the padded samples' outputs change
    no_pad, _ = model(t["values"], t["positions"])
    assert (no_pad[1::3] - out[1::3]).abs().max() > 1e-4
    model.train()
    assert not torch.allclose(model(t["values"], t["positions"], pad_mask=t["pad_mask"])[0], ref)  # dropout on
    model.eval()
    predict(model, data, batch_size=3)
    assert not model.training  # eval mode is restored too


def test_predict_refuses_empty_dataset():
    empty = ArrayDataset(values=torch.zeros(0, 5, TOKEN_DIM), positions=torch.zeros(0, N_AXES, 5))
    with pytest.raises(ValueError, match="empty"):
        predict(prediction(), empty)


# ----------------------------------------------------------------------------- 9. romae.metrics

def test_metrics_from_logits_equal_metrics_from_indices():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(30, 4, generator=g)
    y = torch.randint(0, 4, (30,), generator=g)
    idx = logits.argmax(-1)
    assert M.accuracy(y, logits) == M.accuracy(y, idx) == pytest.approx((idx == y).float().mean().item())
    assert M.macro_f1(y, logits) == M.macro_f1(y, idx)
    assert M.accuracy(y.numpy(), logits.numpy()) == M.accuracy(y, logits)  # arrays too


def test_metrics_hand_computed():
    y_true, y_pred = torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 1, 1])
    assert M.accuracy(y_true, y_pred) == pytest.approx(0.75)
    # class 0: P 1, R 1/2 -> F1 2/3; class 1: P 2/3, R 1 -> F1 0.8
    assert M.macro_f1(y_true, y_pred) == pytest.approx((2 / 3 + 0.8) / 2)
    assert M.mse(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 4.0])) == pytest.approx(5 / 3)
    assert M.mse([[1.0, 2.0]], [1.0, 4.0]) == pytest.approx(2.0)  # shapes may differ, sizes may not


def test_metrics_shape_mismatch_raises():
    with pytest.raises(ValueError, match="differ in shape"):
        M.accuracy(torch.tensor([0, 1, 1]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="differ in shape"):
        M.macro_f1(torch.tensor([0, 1, 1]), torch.randn(2, 3))
    with pytest.raises(ValueError, match="3 values"):
        M.mse(torch.zeros(3), torch.zeros(4))


# ----------------------------------------------------------------------------- 10. from_pretrained

def _encoder_keys(model):
    return [k for k in model.state_dict() if k.startswith(("encoder.", "cls_token"))]


def test_from_pretrained_model_copies_encoder_and_overrides_config():
    pre = pretraining(seed=1, head="mean")  # a base head that the prediction default must replace
    clf = RoMAEForPrediction.from_pretrained(pre, n_outputs=3, dropout=0.1, drop_path=0.1, label_smoothing=0.1)
    src, own = pre.state_dict(), clf.state_dict()
    keys = _encoder_keys(clf)
    assert "cls_token" in keys and any(k.startswith("encoder.blocks.1.") for k in keys)
    assert all(torch.equal(own[k], src[k]) for k in keys)
    assert not torch.equal(clf.embed.weight, pre.embed.weight)  # re-initialised
    c = clf.cfg
    assert (c.token_dim, c.n_axes, c.pos_encoding, c.p) == (TOKEN_DIM, N_AXES, "rope", pre.cfg.p)
    assert (c.encoder.d_model, c.encoder.depth, c.encoder.n_heads) == (32, 2, 2)
    assert c.encoder.dropout == 0.1 and c.encoder.drop_path == 0.1 and c.label_smoothing == 0.1
    assert c.n_outputs == 3 and c.head == "cls" and c.use_cls
    assert [b.drop_path.rate for b in clf.encoder.blocks] == pytest.approx([0.0, 0.1])
    assert pre.cfg.encoder.dropout == 0.0 and pre.cfg.n_outputs == 3  # the base config is untouched
    with_embed = RoMAEForPrediction.from_pretrained(pre, n_outputs=3, embedding=True)
    assert torch.equal(with_embed.embed.weight, pre.embed.weight)
    assert torch.equal(with_embed.embed.bias, pre.embed.bias)


def test_from_pretrained_head_default_without_cls_and_unknown_field():
    pre = pretraining(use_cls=False)
    clf = RoMAEForPrediction.from_pretrained(pre, n_outputs=2)
    assert clf.cfg.head == "mean" and clf.cls_token is None
    values, pos = tokens()
    assert clf(values, pos)[0].shape == (2, 2)
    with pytest.raises(TypeError, match="label_smothing"):
        RoMAEForPrediction.from_pretrained(pre, n_outputs=2, label_smothing=0.1)


def test_from_pretrained_checkpoint_folder(tmp_path):
    c = cfg()
    torch.manual_seed(0)
    pre = RoMAEForPreTraining(c)
    data = clf_data(n=8)  # labels present: the pre-training model ignores them
    res = fit(pre, data, train_cfg(epochs=1), out_dir=tmp_path / "run", config=c, device="cpu")
    trained = res.model.state_dict()
    torch.manual_seed(1)
    untouched = RoMAEForPreTraining(c).state_dict()
    clf = RoMAEForPrediction.from_pretrained(tmp_path / "run", n_outputs=2)
    own = clf.state_dict()
    keys = _encoder_keys(clf)
    assert keys and all(torch.equal(own[k], trained[k]) for k in keys)
    assert not torch.equal(own["encoder.blocks.0.attn.qk.weight"], untouched["encoder.blocks.0.attn.qk.weight"])
    assert clf.cfg.n_outputs == 2 and clf.cfg.encoder == c.encoder and clf.cfg.n_axes == N_AXES
