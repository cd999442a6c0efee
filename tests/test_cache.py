"""The results cache (romae.cache): integrity of entries, the code version in the key, concurrent writers.
No training: `compute` returns a small dict of tensors and counts its calls."""

import hashlib
import json
import re
import shutil
import threading
import warnings
from pathlib import Path

import pytest
import torch

import romae.cache as C
from romae.cache import cached

CONFIG = {"model": {"dim": 8, "depth": 2}, "lr": 1e-3, "seed": 0}
PACKAGE = Path(C.__file__).resolve().parent


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


def test_default_code_is_the_bytes_of_the_producing_modules(tmp_path, monkeypatch):
    compute = Compute()
    cached("t", CONFIG, compute, cache_dir=tmp_path)
    meta = json.loads(entry(tmp_path)[1].read_text())
    # called from this test (not a package module): the producers are the module of compute and their imports
    assert meta["code"] == C.code_for(C.producers(compute, depth=1))[0] and "code_of" in meta
    cached("t", CONFIG, compute, cache_dir=tmp_path)
    assert compute.calls == 1
    monkeypatch.setattr(C, "code_for", lambda modules: ("edited", {}))  # as if a producing module had changed
    cached("t", CONFIG, compute, cache_dir=tmp_path)
    assert compute.calls == 2


def _copy(tmp_path, name, edit=None, text="\n# edited\n"):
    root = tmp_path / name / "romae"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if edit:
        with open(root / edit, "a") as f:
            f.write(text)
    return root


def test_cache_key_follows_the_bytes_of_the_modules_that_produce_the_result(tmp_path):
    """This local cache keys on the bytes of the producing modules' import closure: an edit of pendulum's data
    changes pendulum's key, not ESC-50's (what a paper run keeps is keyed by romae.compendium.staleness instead)."""
    base = _copy(tmp_path, "base")
    edited = _copy(tmp_path, "edited", "data/pendulum.py", "\nEXTRA = 1\n")

    def code(root, experiment):
        return {m: hashlib.sha256((root / m).read_bytes()).hexdigest() for m in C.module_closure((experiment,), root)}

    assert code(edited, "experiments/pendulum.py") != code(base, "experiments/pendulum.py")
    assert code(edited, "experiments/esc50/__init__.py") == code(base, "experiments/esc50/__init__.py")
    closure = C.module_closure(("experiments/pendulum.py",), base)
    assert {"config.py", "model.py", "rope.py", "data/pendulum.py"} <= set(closure) and "audio.py" not in closure
    # what records, tells or lays out results is never followed into a key
    assert not [m for m in closure if m.startswith(("compendium/", "runner/"))]


def test_producers_are_read_from_the_call_stack():
    """An experiment's cached call keys on that experiment's closure (its frames are on the stack)."""
    from romae.experiments import pendulum

    seen = {}

    def fake_cached(*args, **kwargs):
        seen["modules"] = C.producers(depth=2)
        return {}

    ns = {"__name__": pendulum.__name__, "cached": fake_cached}
    exec("def call():\n    return cached()\n", ns)  # a frame whose module is romae.experiments.pendulum
    ns["call"]()
    assert "experiments/pendulum.py" in seen["modules"] and "data/pendulum.py" in seen["modules"]
    assert "audio.py" not in seen["modules"]


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
