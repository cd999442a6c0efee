"""How training batches reach the device (romae.feeding.Feeder): moved there once, or prefetched into pinned
memory by a thread. Forced here on the CPU: the same batches in the same order, so the same weights as
gathering each batch when it is due, with dropout, a random transform and a resume in between."""

from __future__ import annotations

import pytest
import torch

from romae import feeding
from romae.config import RoMAEConfig, TrainConfig, size
from romae.masking import trim_padding
from romae.model import RoMAEForPreTraining
from romae.train import ArrayDataset, fit


def data(n=40, N=12):
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(4, N + 1, (n,), generator=g)
    return ArrayDataset(values=torch.randn(n, N, 2, generator=g), positions=torch.cumsum(torch.rand(n, 1, N, generator=g), -1),
                        pad_mask=torch.arange(N) >= lengths[:, None])


def model():
    torch.manual_seed(0)
    enc = size("tiny-shallow", d_model=12, n_heads=2, d_ff=24, dropout=0.1)
    return RoMAEForPreTraining(RoMAEConfig(token_dim=2, encoder=enc, decoder=enc))


def cfg(**kw):
    return TrainConfig(**{**dict(epochs=3, batch_size=8, lr=3e-3, progress=False, log_every=1, seed=1,
                                 length_buckets=2), **kw})


def run(mode, monkeypatch, tmp_path=None, stop=None):
    monkeypatch.setattr(feeding, "feed_mode", lambda data, dev, **kw: mode)
    res = fit(model(), data(), cfg(), device="cpu", transform=trim_padding, out_dir=tmp_path, max_steps=stop)
    return res.model.state_dict(), [r["loss"] for r in res.history if "loss" in r]


@pytest.mark.parametrize("mode", ["resident", "prefetch"])
def test_feeding_modes_give_the_host_path_batches(mode, monkeypatch, tmp_path):
    host = run("host", monkeypatch)
    other = run(mode, monkeypatch)
    assert host[1] == other[1]
    assert all(torch.equal(host[0][k], other[0][k]) for k in host[0])
    run(mode, monkeypatch, tmp_path, stop=7)  # stopped mid-epoch, resumed: still the same
    resumed = run(mode, monkeypatch, tmp_path)
    assert all(torch.equal(host[0][k], resumed[0][k]) for k in host[0])


def test_feed_mode_on_the_cpu_is_the_host_path():
    assert feeding.feed_mode(data(), torch.device("cpu")) == "host"


def test_prefetch_errors_reach_the_training_thread(monkeypatch):
    class Broken(ArrayDataset):
        def batch(self, idx):
            if int(idx.max()) >= 30:
                raise OSError("disk gone")
            return super().batch(idx)

    monkeypatch.setattr(feeding, "feed_mode", lambda data, dev, **kw: "prefetch")
    d = data()
    with pytest.raises(OSError, match="disk gone"):
        fit(model(), Broken(**d.tensors), cfg(length_buckets=0), device="cpu", transform=trim_padding)


def test_augmented_images_draw_on_the_training_thread_in_every_mode(monkeypatch, tmp_path):
    # RandAugment-like: random draws from torch's global generator, as kornia's. Prefetching once ran it in the
    # gathering thread, racing the training thread for the generator: a resumed run then drew other numbers.
    import threading

    from romae.images import from_images
    from romae.model import RoMAEForPrediction

    threads = set()

    def augment(x):
        threads.add(threading.current_thread().name)
        return (x + 0.1 * torch.rand(x.shape)).clamp(0, 1)

    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (24, 3, 8, 8), generator=g, dtype=torch.uint8)
    train = from_images(images, torch.randint(0, 3, (24,), generator=g), patch_size=(4, 4)).with_augment(augment)

    def run_images(mode, out_dir=None, stop=None):
        monkeypatch.setattr(feeding, "feed_mode", lambda data, dev, **kw: mode)
        torch.manual_seed(0)
        enc = size("tiny-shallow", d_model=16, n_heads=2, d_ff=24, dropout=0.1)
        clf = RoMAEForPrediction(RoMAEConfig(token_dim=48, n_axes=2, encoder=enc, n_outputs=3))
        res = fit(clf, train, cfg(length_buckets=0), device="cpu", out_dir=out_dir, max_steps=stop)
        return res.model.state_dict()

    host = run_images("host")
    prefetched = run_images("prefetch")
    assert all(torch.equal(host[k], prefetched[k]) for k in host)
    run_images("prefetch", tmp_path, stop=4)
    resumed = run_images("prefetch", tmp_path)
    assert all(torch.equal(host[k], resumed[k]) for k in host)
    assert threads == {threading.current_thread().name}  # never the prefetch thread
    raw = train.raw(torch.tensor([3, 5]))
    assert raw["grids"].dtype == torch.uint8  # gathered (and moved to a device) as stored: uint8
