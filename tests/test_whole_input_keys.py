"""Keys that see the whole input (issue 45, item 1): the evaluation that `pretrain_finetune` keeps and the data hash a
resume checks cover every sample, so a label or a value changed anywhere -- not only in 16 evenly spaced samples, as
the keys once sampled -- is computed again or refused, never answered from the first data's entry."""

from __future__ import annotations

import pytest
import torch

from romae import RoMAEConfig, TrainConfig, size
from romae.compendium.kept import pretrain_finetune_kept as pretrain_finetune
from romae.feeding import ArrayDataset, data_fingerprint
from romae.metrics import accuracy
from romae.train import fit

N_TEST = 40
SAMPLED = {round(i * (N_TEST - 1) / 15) for i in range(16)}  # what the old key read: 16 evenly spaced samples
UNSAMPLED = [i for i in range(N_TEST) if i not in SAMPLED]


def _data(n: int, seed: int) -> ArrayDataset:
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (n,), generator=g)
    values = torch.randn(n, 6, 3, generator=g) + labels[:, None, None] * 1.5  # learnable
    return ArrayDataset(values=values, positions=torch.rand(n, 1, 6, generator=g) * 10, labels=labels)


def _model() -> RoMAEConfig:
    enc = size("tiny-shallow", d_model=12, n_heads=2, d_ff=24)
    return RoMAEConfig(token_dim=3, n_axes=1, encoder=enc, decoder=enc)


def _run(train, test, cache_dir) -> dict:
    cfg = TrainConfig(epochs=3, batch_size=8, lr=1e-2, warmup_steps=0, log_every=1, progress=False)
    return pretrain_finetune("keys", train, test, _model(), finetune=cfg, pretrain=None, n_outputs=2, seed=0,
                             key={"data": "keys"}, cache_dir=cache_dir)


def test_the_kept_evaluation_is_recomputed_when_test_labels_change_outside_any_sample(tmp_path, monkeypatch):
    from romae.compendium import kept as K

    trained = []
    real = K.fit
    monkeypatch.setattr(K, "fit", lambda *a, **kw: trained.append(1) or real(*a, **kw))
    train, test = _data(24, 0), _data(N_TEST, 1)
    first = _run(train, test, tmp_path)
    relabelled = ArrayDataset(**{k: v.clone() for k, v in test.tensors.items()})
    flip = torch.tensor(UNSAMPLED[:24])
    relabelled.tensors["labels"][flip] = 1 - relabelled.tensors["labels"][flip]
    second = _run(train, relabelled, tmp_path)
    assert len(trained) == 1  # the same training, read back
    assert second["metrics"] != first["metrics"]  # the evaluation is not
    pred = second["outputs"].argmax(-1) if second["outputs"].ndim == 2 else second["outputs"]
    assert second["metrics"]["accuracy"] == pytest.approx(accuracy(relabelled.tensors["labels"], pred))


def test_one_label_and_one_value_anywhere_change_the_data_hash():
    data = _data(N_TEST, 2)
    before = data_fingerprint(data)
    for i in (UNSAMPLED[0], UNSAMPLED[-1]):
        label = ArrayDataset(**{k: v.clone() for k, v in data.tensors.items()})
        label.tensors["labels"][i] = 1 - label.tensors["labels"][i]
        value = ArrayDataset(**{k: v.clone() for k, v in data.tensors.items()})
        value.tensors["values"][i, 3, 1] += 1e-3
        assert before != data_fingerprint(label) and before != data_fingerprint(value)


class _Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Linear(3, 2)

    def forward(self, values, positions, labels):
        logits = self.w(values.mean(1))
        return logits, torch.nn.functional.cross_entropy(logits, labels)


def test_a_resume_on_data_with_one_value_changed_by_1e3_is_refused(tmp_path):
    data = _data(N_TEST, 3)
    cfg = TrainConfig(epochs=2, batch_size=8, lr=1e-2, warmup_steps=0, log_every=1, progress=False)
    torch.manual_seed(0)
    fit(_Lin(), data, cfg, out_dir=tmp_path, device="cpu", max_steps=3)
    other = ArrayDataset(**{k: v.clone() for k, v in data.tensors.items()})
    other.tensors["values"][UNSAMPLED[5], 2, 0] += 1e-3
    with pytest.raises(ValueError, match="trained on other data than this run's"):
        fit(_Lin(), other, cfg, out_dir=tmp_path, device="cpu")
