"""The models: the paper's identities (translation, [CLS], padding), the MAE flow, sizes and errors."""

import pytest
import torch

from romae.runner.bench import size_rows
from romae.config import RoMAEConfig, TrainConfig, check_profile, size
from romae.model import Encoder, RoMAEForPrediction, RoMAEForPreTraining
from romae.compendium.reference import paper_value

ATOL = 1e-5  # float32 encoders of a few blocks: outputs agree to ~1e-6 when they should be identical


def small_cfg(**kw):
    base = dict(token_dim=6, n_axes=2, encoder=size("tiny", depth=2), decoder=size("tiny-shallow"),
                n_outputs=3)
    return RoMAEConfig(**{**base, **kw})


def tokens(B=3, N=9, D=6, A=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, N, D, generator=g), torch.rand(B, A, N, generator=g) * 20


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device(request.param)


@pytest.mark.parametrize("use_cls", [False, True])
def test_translation_invariance_breaks_only_with_cls(use_cls, device):
    """Proposition 4.2: RoPE alone is blind to a common shift; a [CLS] at the origin anchors it."""
    torch.manual_seed(0)
    model = RoMAEForPrediction(small_cfg(use_cls=use_cls, head="tokens")).to(device).eval()
    values, pos = (t.to(device) for t in tokens())
    out, _ = model(values, pos)
    shifted, _ = model(values, pos + 7.25)
    diff = (out - shifted).abs().max().item()
    if use_cls:
        assert diff > 1e-3
    else:
        assert diff < ATOL


def test_absolute_encoding_is_not_translation_invariant():
    torch.manual_seed(0)
    model = RoMAEForPrediction(small_cfg(use_cls=False, head="tokens", pos_encoding="absolute_nd")).eval()
    values, pos = tokens()
    assert (model(values, pos)[0] - model(values, pos + 7.25)[0]).abs().max() > 1e-3


@pytest.mark.parametrize("use_cls", [False, True])
def test_padding_does_not_change_real_tokens(use_cls, device):
    torch.manual_seed(0)
    model = RoMAEForPrediction(small_cfg(use_cls=use_cls, head="tokens")).to(device).eval()
    values, pos = (t.to(device) for t in tokens(B=2, N=6))
    out, _ = model(values, pos)
    # append 4 padded tokens of garbage values and positions
    pv = torch.cat((values, 100 * torch.randn(2, 4, 6, device=device)), 1)
    pp = torch.cat((pos, 1000 * torch.rand(2, 2, 4, device=device)), 2)
    pad = torch.zeros(2, 10, dtype=torch.bool, device=device)
    pad[:, 6:] = True
    out_pad, _ = model(pv, pp, pad_mask=pad)
    torch.testing.assert_close(out_pad[:, :6], out, atol=ATOL, rtol=0)
    mean_model = RoMAEForPrediction(small_cfg(use_cls=use_cls, head="mean")).to(device).eval()
    torch.testing.assert_close(mean_model(pv, pp, pad_mask=pad)[0], mean_model(values, pos)[0],
                               atol=ATOL, rtol=0)


def test_pretraining_padding_and_loss():
    torch.manual_seed(0)
    model = RoMAEForPreTraining(small_cfg()).eval()
    values, pos = tokens(B=2, N=6)
    mask = torch.tensor([[True, False, True, False, True, False]] * 2)
    pred, loss = model(values, pos, mask=mask)
    assert pred.shape == (2, 3, 6)
    torch.testing.assert_close(loss, ((pred - values[mask].reshape(2, 3, 6)) ** 2).mean())
    # pad to 10 tokens; two padded slots hidden, two visible: same predictions and loss
    pv = torch.cat((values, torch.randn(2, 4, 6) * 50), 1)
    pp = torch.cat((pos, torch.rand(2, 2, 4) * 500), 2)
    pad = torch.zeros(2, 10, dtype=torch.bool)
    pad[:, 6:] = True
    pmask = torch.cat((mask, torch.tensor([[True, True, False, False]] * 2)), 1)
    ppred, ploss = model(pv, pp, mask=pmask, pad_mask=pad)
    torch.testing.assert_close(ppred[:, :3], pred, atol=ATOL, rtol=0)
    torch.testing.assert_close(ploss, loss, atol=ATOL, rtol=0)  # padding out of numerator and denominator
    authors = RoMAEForPreTraining(small_cfg(loss_counts_padding=True)).eval()
    authors.load_state_dict(model.state_dict())
    _, aloss = authors(pv, pp, mask=pmask, pad_mask=pad)
    torch.testing.assert_close(aloss, loss * 3 / 5, atol=ATOL, rtol=0)  # authors: 6 real of 10 hidden


def test_mask_token_located_only_by_rope():
    """With RoPE the hidden tokens differ only through their positions: equal positions -> equal preds."""
    torch.manual_seed(0)
    model = RoMAEForPreTraining(small_cfg(use_cls=True)).eval()
    values, pos = tokens(B=1, N=6)
    pos[0, :, 4] = pos[0, :, 2]
    mask = torch.tensor([[False, False, True, False, True, False]])
    pred, _ = model(values, pos, mask=mask)
    torch.testing.assert_close(pred[0, 0], pred[0, 1])
    pos[0, 0, 4] += 1.0
    pred2, _ = model(values, pos, mask=mask)
    assert (pred2[0, 0] - pred2[0, 1]).abs().max() > 1e-4


def test_reconstruct_puts_predictions_in_place():
    torch.manual_seed(0)
    model = RoMAEForPreTraining(small_cfg()).eval()
    values, pos = tokens(B=2, N=6)
    mask = torch.tensor([[True, False, False, True, False, False], [False, True, True, False, False, False]])
    full = model.reconstruct(values, pos, mask)
    pred, _ = model(values, pos, mask=mask)
    assert torch.equal(full[~mask], values[~mask])
    torch.testing.assert_close(full[0, 3], pred[0, 1])
    torch.testing.assert_close(full[1, 1], pred[1, 0])


def test_random_mask_inside_forward_and_norm_pix():
    torch.manual_seed(0)
    model = RoMAEForPreTraining(small_cfg(mask_ratio=0.5, normalize_targets=True))
    values, pos = tokens(B=4, N=10)
    pred, loss = model(values, pos)
    assert pred.shape == (4, 5, 6) and torch.isfinite(loss)
    loss.backward()
    assert model.mask_token.grad is not None and model.mask_token.grad.abs().sum() > 0


@pytest.mark.parametrize("pe", ["rope", "rope_quantized", "absolute", "absolute_nd", "none"])
@pytest.mark.parametrize("use_cls", [False, True])
def test_every_encoding_trains_one_step(pe, use_cls):
    torch.manual_seed(0)
    cfg = small_cfg(pos_encoding=pe, use_cls=use_cls)
    values, pos = tokens(B=2, N=8)
    pad = torch.zeros(2, 8, dtype=torch.bool)
    pad[1, 6:] = True
    for model, kw in ((RoMAEForPreTraining(cfg), {}), (RoMAEForPrediction(cfg), {"labels": torch.tensor([0, 2])})):
        _, loss = model(values, pos, pad_mask=pad, **kw)
        loss.backward()
        assert torch.isfinite(loss)
        assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_heads_and_losses():
    values, pos = tokens(B=4, N=5)
    reg = RoMAEForPrediction(small_cfg(task="regression", head="tokens", n_outputs=1))
    out, loss = reg(values, pos, labels=torch.zeros(4, 5))
    assert out.shape == (4, 5, 1)
    torch.testing.assert_close(loss, (out ** 2).mean())
    clf = RoMAEForPrediction(small_cfg(label_smoothing=0.1))
    out, loss = clf(values, pos, labels=torch.tensor([0, 1, 2, 0]))
    assert out.shape == (4, 3)
    ref = torch.nn.functional.cross_entropy(out, torch.tensor([0, 1, 2, 0]), label_smoothing=0.1)
    torch.testing.assert_close(loss, ref)


def test_encoder_transfer_from_pretraining():
    torch.manual_seed(0)
    pre = RoMAEForPreTraining(small_cfg())
    clf = RoMAEForPrediction(small_cfg())
    copied = clf.load_encoder(pre.state_dict())
    assert "cls_token" in copied and not any(k.startswith("embed.") for k in copied)
    assert torch.equal(clf.encoder.blocks[1].attn.qk.weight, pre.encoder.blocks[1].attn.qk.weight)
    assert not torch.equal(clf.embed.weight, pre.embed.weight)  # re-initialised, as the authors
    clf.load_encoder(pre, embedding=True)
    assert torch.equal(clf.embed.weight, pre.embed.weight)
    with pytest.raises(ValueError, match="lack or misshape"):
        RoMAEForPrediction(small_cfg(encoder=size("tiny", depth=3))).load_encoder(pre)


def test_drop_path_schedule_and_stochasticity():
    enc = Encoder(size("tiny", depth=4, drop_path=0.3), n_axes=1)
    assert [b.drop_path.rate for b in enc.blocks] == pytest.approx([0.0, 0.1, 0.2, 0.3])


def test_table8_block_parameter_counts():
    for row in size_rows():
        if row["paper_M"] is not None:
            assert abs(row["rel_diff"]) < 0.005, row
    assert paper_value("table8_model_sizes", "small", "block_params_M") == 26.9


# ----------------------------------------------------------------------------- clear errors

def test_bad_inputs_raise_clear_errors():
    model = RoMAEForPreTraining(small_cfg())
    values, pos = tokens(B=2, N=6)
    with pytest.raises(ValueError, match=r"positions must have shape \[B, n_axes=2, N\], got \(2, 3, 6\)"):
        model(values, torch.zeros(2, 3, 6))
    with pytest.raises(ValueError, match="positions cover 5 tokens but there are 6"):
        model(values, pos[..., :5])
    bad = pos.clone()
    bad[1, 0, 2] = float("nan")
    with pytest.raises(ValueError, match="positions must be finite, found nan in sample 1"):
        model(values, bad)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[1] = True
    with pytest.raises(ValueError, match="sample 1 of the batch is all padding"):
        model(values, pos, pad_mask=pad)
    mask = torch.zeros(2, 6, dtype=torch.bool)
    mask[0, :2] = True
    mask[1, :3] = True
    with pytest.raises(ValueError, match=r"same number of tokens; got counts \[2, 3\]"):
        model(values, pos, mask=mask)
    with pytest.raises(ValueError, match="token_dim=6"):
        model(values[..., :4], pos)


def test_bad_configs_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown model size 'huge'"):
        size("huge")
    with pytest.raises(ValueError, match="unknown profile 'fast'"):
        check_profile("fast")
    assert check_profile("quick") == "quick"
    with pytest.raises(ValueError, match="unknown pos_encoding"):
        small_cfg(pos_encoding="alibi")
    with pytest.raises(ValueError, match="d_model=100 is not divisible by n_heads=3"):
        size("tiny", d_model=100)
    with pytest.raises(ValueError, match=r"head_dim=60 must split into n_axes=4"):
        RoMAEForPreTraining(small_cfg(n_axes=4))
    with pytest.raises(ValueError, match="head='cls' needs use_cls=True"):
        small_cfg(use_cls=False, head="cls")
    with pytest.raises(ValueError, match="unknown optimizer"):
        TrainConfig(optimizer="lamb")
