"""Tests of romae.train: the schedule, determinism, exact resume, checkpoints and history.

All on a toy MLP whose forward(x, y) returns (prediction, MSE). With `noise > 0` the forward adds
torch.randn noise to its input, in training and in evaluation, to stand in for RoMAE's random
masking: both draw from the global torch RNG, which resume must restore.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from torch import nn

from romae.config import TrainConfig
from romae.feeding import shard as _shard
from romae.train import ArrayDataset, fit, load_checkpoint, lr_at, read_config


class Toy(nn.Module):
    def __init__(self, hidden: int = 32, dropout: float = 0.2, noise: float = 0.0, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)  # same init for every run built with the same seed
        self.net = nn.Sequential(nn.Linear(4, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, 1))
        self.noise = noise

    def forward(self, x, y):
        if self.noise:
            x = x + self.noise * torch.randn_like(x)
        pred = self.net(x).squeeze(-1)
        return pred, ((pred - y) ** 2).mean()


def toy_data(n: int = 200, seed: int = 1) -> ArrayDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 0.5, 3.0]) + 0.05 * torch.randn(n, generator=g)
    return ArrayDataset(x=x, y=y)


def small_cfg(**kw) -> TrainConfig:
    # 200 samples / batch 32 -> 7 steps per epoch (the last batch has 8 samples).
    base = dict(epochs=3, batch_size=32, lr=1e-2, warmup_steps=3, log_every=1, progress=False, seed=0)
    return TrainConfig(**{**base, **kw})


def weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def train_rows(history):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in history]


def test_lr_at_warmup_then_cosine():
    lr, W, T = 1e-3, 10, 100
    lrs = [lr_at(s, T, W, lr) for s in range(T)]
    assert lrs[0] == pytest.approx(lr / W)
    assert all(a < b for a, b in zip(lrs[:W - 1], lrs[1:W]))  # strictly rising warm-up
    assert lrs[W - 1] == pytest.approx(lr)  # the peak is used, at step W - 1
    assert all(a > b for a, b in zip(lrs[W - 1:], lrs[W:]))  # strictly decaying cosine
    assert lrs[-1] == pytest.approx(0.0, abs=1e-15)
    mid = W - 1 + (T - W) // 2  # halfway through the cosine: lr / 2
    assert lrs[mid] == pytest.approx(lr / 2, rel=0.05)
    assert lr_at(0, T, 0, lr) == pytest.approx(lr)  # no warm-up: start at the peak


def test_fit_uses_the_schedule_and_steps_per_epoch():
    cfg = small_cfg()
    res = fit(Toy(), toy_data(), cfg, device="cpu")
    assert res.steps == 7 * cfg.epochs  # ceil(200 / 32) = 7: the short last batch is kept
    rows = [r for r in res.history if "loss" in r]
    assert [r["step"] for r in rows] == list(range(1, 22))
    for r in rows:  # row of step s (1-based) reports the lr of optimiser step s - 1
        assert r["lr"] == pytest.approx(lr_at(r["step"] - 1, 21, cfg.warmup_steps, cfg.lr))


def test_loss_decreases_and_validation_is_logged():
    # Over seeds 0-5 the last/first ratios are 0.001-0.016; 0.1 leaves a wide margin.
    cfg = small_cfg(epochs=10, lr=3e-2)
    res = fit(Toy(dropout=0.0), toy_data(), cfg, val_data=toy_data(64, seed=2), device="cpu")
    losses = [r["loss"] for r in res.history if "loss" in r]
    assert losses[-1] < 0.1 * losses[0]
    val = [r for r in res.history if "val_loss" in r]
    assert [r["step"] for r in val] == [7 * e for e in range(1, 11)]  # once per epoch end
    assert val[-1]["val_loss"] < 0.1 * val[0]["val_loss"]


def test_same_seed_same_weights_other_seed_differs():
    runs = []
    for i, s in enumerate((0, 0, 1)):
        model = Toy(noise=0.1)
        torch.rand(i + 1)  # fit must reseed the global RNG, whatever happened before it
        runs.append(fit(model, toy_data(), small_cfg(seed=s), device="cpu").model)
    w = [weights(m) for m in runs]
    assert same(w[0], w[1])
    assert not same(w[0], w[2])


@pytest.mark.parametrize("k", [7, 10])  # resume at an epoch boundary and in the middle of epoch 2
def test_resume_equals_uninterrupted(tmp_path, k):
    cfg = small_cfg(log_every=3)
    val = toy_data(40, seed=3)
    full = fit(Toy(noise=0.1), toy_data(), cfg, val_data=val, device="cpu")
    part = fit(Toy(noise=0.1), toy_data(), cfg, val_data=val, out_dir=tmp_path, device="cpu", max_steps=k)
    assert part.steps == k and read_config(tmp_path)["step"] == k
    rest = fit(Toy(noise=0.1, seed=123), toy_data(), cfg, val_data=val, out_dir=tmp_path, device="cpu")
    assert rest.steps == full.steps
    assert same(weights(rest.model), weights(full.model))
    assert train_rows(rest.history) == train_rows(full.history)  # losses, lrs, norms, val losses
    on_disk = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert train_rows(on_disk) == train_rows(full.history)


def test_checkpoint_files_and_config(tmp_path):
    cfg = small_cfg(epochs=2, checkpoint_every=5)
    res = fit(Toy(), toy_data(), cfg, out_dir=tmp_path, config={"d_model": 32}, device="cpu")
    ckpt = tmp_path / "checkpoint"
    assert {p.name for p in ckpt.iterdir()} == {"model.safetensors", "train_state.pt", "config.json"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "history.jsonl"]  # no .tmp / .old
    saved = read_config(tmp_path)
    assert saved["d_model"] == 32 and saved["step"] == 14
    assert saved["train"] == json.loads(json.dumps(cfg.to_dict()))
    fresh = Toy(seed=99)
    assert not same(weights(fresh), weights(res.model))
    load_checkpoint(fresh, ckpt)
    assert same(weights(fresh), weights(res.model))
    bigger = Toy(seed=99)
    bigger.extra = nn.Linear(2, 2)
    with pytest.raises(RuntimeError):
        load_checkpoint(bigger, ckpt)
    missing, unexpected = load_checkpoint(bigger, ckpt, strict=False)
    assert set(missing) == {"extra.weight", "extra.bias"} and not unexpected


def test_finished_run_returns_at_once(tmp_path):
    cfg = small_cfg(epochs=1)
    first = fit(Toy(), toy_data(), cfg, out_dir=tmp_path, device="cpu")
    again = fit(Toy(seed=5), toy_data(), cfg, out_dir=tmp_path, device="cpu")
    assert again.steps == first.steps == 7
    assert again.history == first.history
    assert same(weights(again.model), weights(first.model))  # the saved weights, not the fresh ones


def test_crash_between_renames_recovers_the_old_checkpoint(tmp_path):
    cfg = small_cfg(epochs=2)
    full = fit(Toy(), toy_data(), cfg, device="cpu")
    fit(Toy(), toy_data(), cfg, out_dir=tmp_path, device="cpu", max_steps=9)
    # _save_checkpoint died after moving the good copy aside and before moving the new one in:
    (tmp_path / "checkpoint").rename(tmp_path / "checkpoint.old")
    (tmp_path / "checkpoint.tmp").mkdir()
    data = Recording(toy_data())
    rest = fit(Toy(), data, cfg, out_dir=tmp_path, device="cpu")
    assert len(data.calls) == 14 - 9  # resumed from step 9, not restarted
    assert same(weights(rest.model), weights(full.model))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "history.jsonl"]


def test_history_rows(tmp_path):
    cfg = small_cfg(epochs=2, log_every=4, eval_every=5)
    res = fit(Toy(), toy_data(), cfg, val_data=toy_data(30, seed=4), out_dir=tmp_path, device="cpu")
    lines = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert lines == res.history
    train = [r for r in lines if "loss" in r]
    val = [r for r in lines if "val_loss" in r]
    assert [r["step"] for r in train] == [4, 8, 12, 14]  # every 4 steps, and the last step
    assert [r["step"] for r in val] == [5, 10, 14]  # every 5 steps, and the last step
    assert set(train[0]) == {"step", "epoch", "lr", "loss", "grad_norm", "seconds"}
    assert train[-1]["epoch"] == 2.0 and all(r["grad_norm"] > 0 for r in train)
    frame = res.frame()
    assert len(frame) == len(lines) and {"loss", "val_loss"} <= set(frame.columns)


def test_callback_sees_validation_rows():
    seen = []
    fit(Toy(), toy_data(), small_cfg(epochs=2), val_data=toy_data(30), device="cpu",
        callback=lambda row, model: seen.append((row["step"], isinstance(model, Toy))))
    assert seen == [(7, True), (14, True)]


class NaNAfter(Toy):
    def __init__(self, n: int):
        super().__init__()
        self.calls, self.n = 0, n

    def forward(self, x, y):
        pred, loss = super().forward(x, y)
        self.calls += 1
        return pred, loss * float("nan") if self.calls > self.n else loss


def test_nan_loss_raises(tmp_path):
    with pytest.raises(RuntimeError, match=r"step 3\b"):
        fit(NaNAfter(2), toy_data(), small_cfg(), out_dir=tmp_path, device="cpu")
    assert not (tmp_path / "checkpoint").exists()


def test_sgd_and_grad_clip(tmp_path):
    cfg = small_cfg(optimizer="sgd", lr=0.05, grad_clip=0.1)
    model = Toy()
    before = weights(model)
    res = fit(model, toy_data(), cfg, out_dir=tmp_path, device="cpu")
    assert not same(before, weights(res.model))
    state = torch.load(tmp_path / "checkpoint" / "train_state.pt", weights_only=False)
    assert "momentum_buffer" in next(iter(state["optimizer"]["state"].values()))  # SGD, not AdamW
    rows = [r for r in res.history if "loss" in r]
    assert all(math.isfinite(r["loss"]) for r in rows)
    assert max(r["grad_norm"] for r in rows) > 0.1  # the norm before clipping is recorded


def test_bf16_runs_on_cpu():
    res = fit(Toy(), toy_data(64), small_cfg(epochs=1, bf16=True), device="cpu")
    assert res.steps == 2 and math.isfinite(res.history[-1]["loss"])
    assert res.model.forward.__func__ is Toy.forward  # autocast wrapper removed from the returned model


def test_array_dataset():
    x, y = torch.arange(10.0).reshape(5, 2), torch.arange(5)
    ds = ArrayDataset(x=x, y=y)
    assert len(ds) == 5 and torch.equal(ds[3]["x"], x[3])
    b = ds.batch(torch.tensor([4, 0]))
    assert torch.equal(b["x"], x[[4, 0]]) and torch.equal(b["y"], torch.tensor([4, 0]))
    with pytest.raises(ValueError):
        ArrayDataset(x=x, y=torch.arange(4))


class Recording(ArrayDataset):
    """Remembers the indices of every `batch` call."""

    def __init__(self, ds: ArrayDataset):
        super().__init__(**ds.tensors)
        self.calls = []

    def batch(self, idx):
        self.calls.append(idx.clone())
        return super().batch(idx)


def test_each_epoch_is_a_fresh_permutation_and_resume_loads_only_new_batches(tmp_path):
    cfg = small_cfg()
    data = Recording(toy_data())
    fit(Toy(), data, cfg, device="cpu")
    assert len(data.calls) == 21 and [len(c) for c in data.calls[:7]] == [32] * 6 + [8]
    epochs = [torch.cat(data.calls[7 * e : 7 * e + 7]) for e in range(3)]
    for order in epochs:
        assert torch.equal(order.sort().values, torch.arange(200))  # every sample once per epoch
    assert not torch.equal(epochs[0], epochs[1]) and not torch.equal(epochs[1], epochs[2])
    fit(Toy(), toy_data(), cfg, out_dir=tmp_path, device="cpu", max_steps=10)
    resumed = Recording(toy_data())
    fit(Toy(), resumed, cfg, out_dir=tmp_path, device="cpu")
    assert len(resumed.calls) == 11  # the 10 done batches are skipped, not loaded
    assert all(torch.equal(a, b) for a, b in zip(resumed.calls, data.calls[10:]))


class PlainDataset(torch.utils.data.Dataset):
    """No `batch` method: fit must fall back to default_collate."""

    def __init__(self, ds: ArrayDataset):
        self.items = [ds[i] for i in range(len(ds))]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def test_default_collate_fallback_matches_batch():
    cfg = small_cfg(epochs=1)
    a = fit(Toy(), toy_data(), cfg, device="cpu")
    b = fit(Toy(), PlainDataset(toy_data()), cfg, device="cpu")
    assert same(weights(a.model), weights(b.model))


def test_shard_splits_global_batches_across_processes():
    perm = torch.randperm(23, generator=torch.Generator().manual_seed(0))
    # batch 4 per process, 2 processes: global batches of 8 -> 3 steps, the last with 7 samples
    parts = [[_shard(perm, b, 4, r, 2) for r in range(2)] for b in range(3)]
    assert torch.equal(torch.cat(parts[0] + parts[1]), perm[:16])
    assert [len(p) for p in parts[2]] == [4, 4]  # 7 padded to 8 from the epoch's start
    assert torch.equal(torch.cat(parts[2]), torch.cat([perm[16:], perm[:1]]))
    assert torch.equal(_shard(perm, 2, 4, 0, 1), perm[8:12])  # one process: plain slices
