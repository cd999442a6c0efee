"""The results cache (romae.compendium.cache, stored by romae.storage): integrity of entries, the code version in the key, concurrent writers.
No training: `compute` returns a small dict of tensors and counts its calls."""

import hashlib
import json
import re
import threading
import warnings
from pathlib import Path

import pytest
import torch

import romae.compendium.cache as C
from romae.compendium.cache import cached

CONFIG = {"model": {"dim": 8, "depth": 2}, "lr": 1e-3, "seed": 0}


class Compute:
    """compute() with a call counter; the result has a long run of 7.0s so a test can hit tensor data."""

    def __init__(self, n=1024):
        self.calls, self.n = 0, n

    def __call__(self):
        self.calls += 1
        return {"weights": torch.full((self.n,), 7.0), "steps": 3, "history": [{"loss": 0.5}]}


def check(result, n=1024):
    assert torch.equal(result["weights"], torch.full((n,), 7.0)) and result["steps"] == 3


def entry(folder):
    """The single (.pt, .json) entry in `folder`."""
    (pt,) = folder.glob("*.pt")
    return pt, pt.with_suffix(".json")


def silently(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def test_hit_after_miss_and_twin_records_config_code_and_sha256(tmp_path):
    compute = Compute()
    check(silently(lambda: cached("t", CONFIG, compute, cache_dir=tmp_path, code="v1")))
    check(silently(lambda: cached("t", CONFIG, compute, cache_dir=tmp_path, code="v1")))
    assert compute.calls == 1
    pt, twin = entry(tmp_path)
    meta = json.loads(twin.read_text())
    assert meta == {"config": CONFIG, "code": "v1", "sha256": hashlib.sha256(pt.read_bytes()).hexdigest()}
    assert pt.name.startswith(f"t-{C.config_hash(CONFIG)}-")  # config_hash itself is unchanged
    cached("t", CONFIG, compute, cache_dir=tmp_path, code="v1", refresh=True)
    assert compute.calls == 2


def _truncate(pt, twin):
    pt.write_bytes(pt.read_bytes()[: pt.stat().st_size // 2])


def _garbage(pt, twin):
    pt.write_bytes(b"not a torch file\n" * 10)


def _flip_tensor_byte(pt, twin):
    data = bytearray(pt.read_bytes())
    run = torch.full((1024,), 7.0).numpy().tobytes()
    i = data.index(run) + len(run) // 2  # the middle of the tensor's data, inside the archive
    data[i] ^= 0x10
    pt.write_bytes(bytes(data))
    # the flipped file still loads, to a wrong value: only the recorded hash can tell
    assert not torch.equal(torch.load(pt, weights_only=False)["weights"], torch.full((1024,), 7.0))


def _delete_twin(pt, twin):
    twin.unlink()


def _old_format_twin(pt, twin):
    twin.write_text(json.dumps(CONFIG))  # the previous format: the bare config, no hash


def _damaged_twin(pt, twin):
    twin.write_text('{"config": {"mod')


def _unloadable_with_matching_hash(pt, twin):
    pt.write_bytes(b"not a torch file\n")  # the hash vouches for these bytes, but they do not unpickle
    meta = json.loads(twin.read_text())
    twin.write_text(json.dumps(dict(meta, sha256=hashlib.sha256(pt.read_bytes()).hexdigest())))


@pytest.mark.parametrize("damage", [_truncate, _garbage, _flip_tensor_byte, _delete_twin, _old_format_twin,
                                    _damaged_twin, _unloadable_with_matching_hash])
def test_damaged_entry_is_reported_with_its_path_and_recomputed(tmp_path, damage):
    compute = Compute()
    cached("t", CONFIG, compute, cache_dir=tmp_path, code="v1")
    pt, twin = entry(tmp_path)
    damage(pt, twin)
    message = re.escape(f"results cache entry {pt} is ") + r"(corrupted|unverifiable) \(.+\); recomputing"
    with pytest.warns(UserWarning, match=message):
        check(cached("t", CONFIG, compute, cache_dir=tmp_path, code="v1"))
    assert compute.calls == 2
    # the entry was overwritten with a good one: the next call loads it without a word
    check(silently(lambda: cached("t", CONFIG, compute, cache_dir=tmp_path, code="v1")))
    assert compute.calls == 2
    assert json.loads(twin.read_text())["sha256"] == hashlib.sha256(pt.read_bytes()).hexdigest()


def test_code_is_part_of_the_key(tmp_path):
    compute = Compute()
    for code in ["v1", "v1", "v2", "v1", "v2"]:
        check(silently(lambda: cached("t", CONFIG, compute, cache_dir=tmp_path, code=code)))
    assert compute.calls == 2  # one per code version; both entries are kept
    assert len(list(tmp_path.glob("*.pt"))) == 2


def test_default_code_is_what_the_result_runs(tmp_path, monkeypatch):
    """Without `code=`, the key is the staleness rule's code id of `compute` and the package functions that asked
    for it; the twin lists them (code_of). An edit that changes that id computes anew."""
    from romae.compendium import staleness
    from romae.experiments import compute as experiment

    compute = Compute()
    ns = {"__name__": experiment.__name__, "cached": cached, "compute": compute, "folder": tmp_path,
          "CONFIG": CONFIG}
    exec("def table9():\n    return cached('t', CONFIG, compute, cache_dir=folder)\n", ns)  # a frame of compute.py
    ns["table9"]()
    meta = json.loads(entry(tmp_path)[1].read_text())
    assert staleness.is_record(meta["code_of"]) and meta["code"] == staleness.code_id(meta["code_of"])
    ns["table9"]()
    assert compute.calls == 1
    monkeypatch.setattr(C, "code_of", lambda *a, **k: ("edited", {}))  # as if what it runs had changed
    ns["table9"]()
    assert compute.calls == 2


def test_a_data_loaders_memo_follows_its_own_source(tmp_path):
    """`romae.storage.memo` (what the data loaders keep their parsed or generated data in) keys on the bytes of the
    sources it is given: an edit of the loader computes anew; the same source and config find the entry."""
    from romae.storage import memo

    source, compute = tmp_path / "loader.py", Compute()
    source.write_text("X = 1\n")
    for _ in range(2):
        check(silently(lambda: memo("d", CONFIG, compute, sources=(source,), folder=tmp_path / "c")))
    assert compute.calls == 1
    source.write_text("X = 2\n")
    check(memo("d", CONFIG, compute, sources=(source,), folder=tmp_path / "c"))
    check(memo("d", dict(CONFIG, lr=1.0), compute, sources=(source,), folder=tmp_path / "c"))
    assert compute.calls == 3


def test_concurrent_writers_of_one_key(tmp_path):
    n = 1 << 20  # 4 MB: saving takes long enough for the two writes to overlap
    for round_ in range(5):
        config = dict(CONFIG, round=round_)
        barrier, errors, results = threading.Barrier(2), [], []

        def compute():
            barrier.wait(timeout=30)  # both threads have computed; both write at once
            return {"weights": torch.full((n,), 7.0), "steps": 3}

        def worker():
            try:
                results.append(cached("t", config, compute, cache_dir=tmp_path, code="v1"))
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors and len(results) == 2
        for r in results:
            check(r, n)
        # the final entry verifies: loaded without a warning and without computing
        check(silently(lambda: cached("t", config, pytest.fail, cache_dir=tmp_path, code="v1")), n)
    assert not list(tmp_path.glob("*.tmp")) and len(list(tmp_path.glob("*.pt"))) == 5
