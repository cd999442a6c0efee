"""Gradient accumulation (TrainConfig.micro_batch): k micro-batches give the update of one batch.

In float64, so that any difference beyond rounding shows: pre-training with padding (the loss is a mean
over the batch's real hidden tokens, which the micro-batches split unevenly) and without, a classifier
with class weights and a per-token head with padding. Masks are part of the data, so the micro-batches
hide exactly the tokens the whole batch hides. RoPE rotates in float32 whatever the input's dtype, so the
float64 models use the sin/cos table; one RoPE model is checked to float32 rounding.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from romae.config import RoMAEConfig, TrainConfig, size
from romae.masking import random_mask
from romae.model import RoMAEForPrediction, RoMAEForPreTraining
from romae.train import ArrayDataset, fit

B, N = 24, 10


@pytest.fixture(autouse=True)
def float64():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def padding(n: int, seed: int = 3) -> torch.Tensor:
    """[n, N] pad masks with 3..N real tokens each (very uneven across micro-batches)."""
    lengths = torch.randint(3, N + 1, (n,), generator=torch.Generator().manual_seed(seed))
    return torch.arange(N) >= lengths[:, None]


def tokens(n: int, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    return dict(values=torch.randn(n, N, 3, generator=g), positions=torch.cumsum(torch.rand(n, 1, N, generator=g), -1))


def cfg(**kw) -> TrainConfig:
    return TrainConfig(**{**dict(epochs=2, batch_size=B, lr=3e-3, warmup_steps=1, progress=False, log_every=1,
                                 seed=0, grad_clip=1.0), **kw})


def model_cfg(**kw) -> RoMAEConfig:
    small = size("tiny-shallow", d_model=12, n_heads=2, d_ff=24)
    return RoMAEConfig(token_dim=3, encoder=small, decoder=small, **{"pos_encoding": "absolute", **kw})


def train(make, data, micro: int | None, **kw):
    torch.manual_seed(0)
    res = fit(make(), data, cfg(micro_batch=micro, **kw), device="cpu")
    return res.model.state_dict(), [r["loss"] for r in res.history if "loss" in r]


def assert_same(a, b, tol=1e-10):
    (wa, la), (wb, lb) = a, b
    assert la == pytest.approx(lb, rel=tol, abs=tol)
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], rtol=tol, atol=tol, msg=k)


def pretraining_data(n: int = 2 * B, padded: bool = True) -> ArrayDataset:
    pad = padding(n) if padded else None
    torch.manual_seed(7)
    mask = random_mask(n, N, 0.5, pad)
    extra = {} if pad is None else {"pad_mask": pad}
    return ArrayDataset(**tokens(n), mask=mask, **extra)


@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("micro", [5, 8, 24])
def test_micro_batches_give_the_whole_batch_update(padded, micro):
    data = pretraining_data(padded=padded)
    make = lambda: RoMAEForPreTraining(model_cfg())  # noqa: E731
    assert_same(train(make, data, None), train(make, data, micro))


def test_rope_model_to_float32_rounding():
    torch.set_default_dtype(torch.float32)
    data = pretraining_data(padded=True)
    make = lambda: RoMAEForPreTraining(model_cfg(pos_encoding="rope"))  # noqa: E731
    assert_same(train(make, data, None), train(make, data, 5), tol=1e-5)


def test_mean_of_micro_batch_means_would_differ(monkeypatch):
    """The test above can fail: weighting each micro-batch by its sample count instead of its real hidden
    tokens (the naive mean of means) gives other weights when padding is uneven."""
    data = pretraining_data(padded=True)
    make = lambda: RoMAEForPreTraining(model_cfg())  # noqa: E731
    whole = train(make, data, None)
    original = RoMAEForPreTraining.forward_loss

    def uncounted(self, *a, **k):
        loss = original(self, *a, **k)
        self.loss_count = None  # the loop then falls back to the micro-batch's sample count
        return loss

    monkeypatch.setattr(RoMAEForPreTraining, "forward_loss", uncounted)
    with pytest.raises(AssertionError):
        assert_same(whole, train(make, data, 5))


def test_weighted_classifier_and_token_head():
    g = torch.Generator().manual_seed(1)
    labels = torch.randint(0, 3, (2 * B,), generator=g)
    data = ArrayDataset(**tokens(2 * B), labels=labels)
    clf = lambda: RoMAEForPrediction(model_cfg(n_outputs=3, class_weights=(0.2, 1.0, 3.0)))  # noqa: E731
    assert_same(train(clf, data, None), train(clf, data, 7))

    pad = padding(2 * B)
    per_token = torch.randn(2 * B, N, 2, generator=g)
    data = ArrayDataset(**tokens(2 * B), pad_mask=pad, labels=per_token)
    reg = lambda: RoMAEForPrediction(model_cfg(n_outputs=2, task="regression", head="tokens"))  # noqa: E731
    assert_same(train(reg, data, None), train(reg, data, 5))


def test_micro_batch_and_processes_are_checked():
    with pytest.raises(ValueError, match="micro_batch"):
        TrainConfig(micro_batch=0)
    with pytest.raises(ValueError, match="processes"):
        TrainConfig(processes=1.5)
    data = ArrayDataset(**tokens(8), labels=torch.zeros(8, dtype=torch.long))
    with pytest.raises(ValueError, match="planned for 2 process"):
        fit(RoMAEForPrediction(model_cfg(n_outputs=2)), data, dataclasses.replace(cfg(), processes=2), device="cpu")
