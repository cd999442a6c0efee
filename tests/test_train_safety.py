"""Tests of what guards a run's out_dir in romae.train.fit: resume refuses a changed configuration,
corrupted checkpoints are caught (sha256) and checkpoint.prev/ resumed instead, a history line cut by a
kill is dropped, and an flock on out_dir/.lock keeps a second fit out.

A toy MLP whose forward(x, y) draws noise from the global RNG (as RoMAE's masking does) returns
(prediction, MSE); 64 samples in batches of 16: 4 steps per epoch, 12 in a run of 3 epochs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

from romae import checkpoint, train
from romae.config import TrainConfig
from romae.train import ArrayDataset, fit, load_checkpoint, load_state, read_config

REPO = Path(__file__).resolve().parents[1]


class Toy(nn.Module):
    def __init__(self, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.net = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.Dropout(0.2), nn.Linear(16, 1))

    def forward(self, x, y):
        pred = self.net(x + 0.1 * torch.randn_like(x)).squeeze(-1)
        return pred, ((pred - y) ** 2).mean()


class Recording(ArrayDataset):
    """Counts `batch` calls: how many steps a resumed fit really ran."""

    def __init__(self, ds: ArrayDataset):
        super().__init__(**ds.tensors)
        self.calls = 0

    def batch(self, idx):
        self.calls += 1
        return super().batch(idx)


def data(n: int = 64) -> ArrayDataset:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, 4, generator=g)
    return ArrayDataset(x=x, y=x @ torch.tensor([1.0, -2.0, 0.5, 3.0]))


def cfg(**kw) -> TrainConfig:
    base = dict(epochs=3, batch_size=16, lr=1e-2, warmup_steps=2, log_every=1, progress=False, seed=0)
    return TrainConfig(**{**base, **kw})


def run(out=None, c=None, **kw):
    return fit(Toy(), kw.pop("train_data", data()), c or cfg(), out_dir=out, device="cpu", **kw)


def same(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def rows(history):  # without wall-clock times
    return [{k: v for k, v in r.items() if k != "seconds"} for r in history]


@pytest.fixture(autouse=True, scope="module")
def one_thread():  # tiny models run fastest on one thread (and `full` runs under it too)
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def full():
    """The uninterrupted 12-step run every resumed one must equal."""
    return run()


# ----------------------------------------------------------------------------- 1. changed configuration

def test_resume_with_another_lr_is_refused(tmp_path):
    run(tmp_path, max_steps=5)
    before = (tmp_path / "history.jsonl").read_text()
    with pytest.raises(ValueError) as e:
        run(tmp_path, cfg(lr=2e-2, seed=3))
    msg = str(e.value)
    assert "train.lr: 0.01 -> 0.02" in msg and "train.seed: 0 -> 3" in msg
    assert "fresh out_dir" in msg and "resume=False" in msg and "allow_config_change=True" in msg
    assert (tmp_path / "history.jsonl").read_text() == before  # nothing touched
    assert run(tmp_path, cfg(lr=2e-2), resume=False).steps == 12  # starting over is allowed


@dataclasses.dataclass
class Enc:
    dropout: float = 0.0
    widths: tuple[int, int] = (8, 16)  # a tuple, which config.json reads back as a list


@dataclasses.dataclass
class ModelCfg:
    d_model: int = 32
    encoder: Enc = dataclasses.field(default_factory=Enc)


def test_model_config_is_compared_entry_by_entry(tmp_path):
    run(tmp_path, max_steps=5, config=ModelCfg())
    with pytest.raises(ValueError, match=r"encoder\.dropout: 0\.0 -> 0\.1") as e:
        run(tmp_path, config=ModelCfg(encoder=Enc(dropout=0.1)))
    assert "d_model" not in str(e.value) and "widths" not in str(e.value)  # only what differs
    assert run(tmp_path, config=ModelCfg()).steps == 12  # the same config (tuples, betas) resumes


def test_allow_config_change_continues_and_records_it(tmp_path):
    run(tmp_path, max_steps=5)
    res = run(tmp_path, cfg(lr=2e-2), max_steps=9, allow_config_change=True)
    event = [r for r in res.history if r.get("event")]
    assert event == [{"step": 5, "event": "config_changed", "changes": {"train.lr": {"saved": 0.01, "now": 0.02}}}]
    assert event[0] in [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert read_config(tmp_path)["train"]["lr"] == 0.02  # the new checkpoint records the new value
    assert run(tmp_path, cfg(lr=2e-2)).steps == 12  # and resumes with it without complaint


def test_progress_and_log_every_may_change(tmp_path, full):
    # log_every changes the rows written, never the weights: the run still equals the uninterrupted one
    run(tmp_path, max_steps=5)
    res = run(tmp_path, cfg(log_every=4, progress=True))
    assert same(res.model, full.model)
    assert not any(r.get("event") for r in res.history)


# ----------------------------------------------------------------------------- 2. corrupted checkpoints

def stopped_run(out: Path) -> None:
    """Checkpoints at steps 3, 6 and 9 (stopped there): checkpoint/ is step 9, checkpoint.prev/ step 6."""
    run(out, cfg(checkpoint_every=3), max_steps=9)


def flip_tensor_byte(file: Path) -> None:
    raw = bytearray(file.read_bytes())
    start = 8 + int.from_bytes(raw[:8], "little")  # after the header: the tensor data
    raw[(start + len(raw)) // 2] ^= 0xFF
    file.write_bytes(bytes(raw))


DAMAGE = {
    "flipped byte": ("model.safetensors", flip_tensor_byte, "corrupted"),
    "truncated": ("train_state.pt", lambda f: f.write_bytes(f.read_bytes()[: f.stat().st_size // 2]), "corrupted"),
    "empty": ("model.safetensors", lambda f: f.write_bytes(b""), "corrupted"),
    "missing": ("train_state.pt", Path.unlink, "missing"),
    "garbled config": ("config.json", lambda f: f.write_text(f.read_text()[:-40]), "unreadable"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_checkpoint_falls_back_to_the_previous_one(tmp_path, full, damage):
    name, hurt, reason = DAMAGE[damage]
    stopped_run(tmp_path)
    assert read_config(tmp_path / "checkpoint.prev")["step"] == 6
    hurt(tmp_path / "checkpoint" / name)
    counted = Recording(data())
    with pytest.warns(UserWarning, match=rf"checkpoint/{re.escape(name)} is {reason}.*previous checkpoint \(step 6\)"):
        res = run(tmp_path, cfg(checkpoint_every=3), train_data=counted)
    assert counted.calls == 12 - 6  # resumed from step 6: its later history rows were redone
    assert same(res.model, full.model) and rows(res.history) == rows(full.history)
    assert (tmp_path / "checkpoint.corrupt").is_dir()  # the bad one is kept aside, not as the next prev


def test_flipped_byte_loads_silently_without_the_checksum(tmp_path):
    stopped_run(tmp_path)
    file = tmp_path / "checkpoint" / "model.safetensors"
    good = load_file(file)
    flip_tensor_byte(file)
    assert load_file(file).keys() == good.keys()  # safetensors itself sees nothing wrong
    with pytest.raises(ValueError, match=r"checkpoint/model\.safetensors is corrupted"):
        load_state(tmp_path)  # as from_pretrained reads it
    with pytest.raises(ValueError, match=r"model\.safetensors is corrupted"):
        load_checkpoint(Toy(), tmp_path / "checkpoint")


def test_no_good_checkpoint_left_raises(tmp_path):
    stopped_run(tmp_path)
    flip_tensor_byte(tmp_path / "checkpoint" / "model.safetensors")
    (tmp_path / "checkpoint.prev" / "train_state.pt").write_bytes(b"")
    with pytest.raises(ValueError, match=r"checkpoint/model\.safetensors is corrupted.*train_state\.pt.*resume=False"):
        run(tmp_path)


def test_checkpoint_without_checksums_is_still_checked_by_loading(tmp_path, full):
    # as written before checksums existed: no "checksums" in config.json and no checkpoint.prev/
    run(tmp_path, max_steps=9)
    conf = tmp_path / "checkpoint" / "config.json"
    conf.write_text(json.dumps({k: v for k, v in json.loads(conf.read_text()).items() if k != "checksums"}))
    assert same(run(tmp_path).model, full.model)  # resumes as before
    run(tmp_path, max_steps=9, resume=False)
    conf.write_text(json.dumps({k: v for k, v in json.loads(conf.read_text()).items() if k != "checksums"}))
    (tmp_path / "checkpoint" / "train_state.pt").write_bytes(b"PK\x03\x04")
    with pytest.raises(ValueError, match=r"checkpoint/train_state\.pt is unreadable.*resume=False"):
        run(tmp_path)


def test_prev_is_kept_while_unfinished_and_checksums_match(tmp_path):
    stopped_run(tmp_path)
    sums = read_config(tmp_path)["checksums"]
    assert set(sums) == {"model.safetensors", "train_state.pt"}
    assert all(checkpoint.sha256(tmp_path / "checkpoint" / f) == h for f, h in sums.items())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "checkpoint.prev", "history.jsonl"]
    run(tmp_path, cfg(checkpoint_every=3))  # finished: no fallback is needed any more
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "history.jsonl"]


def test_repair_after_a_crash_past_the_second_rename(tmp_path):
    ckpt = tmp_path / "checkpoint"
    for name in ("checkpoint", "checkpoint.old", "checkpoint.prev", "checkpoint.tmp-12345"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "tag").write_text(name)
    checkpoint.repair_swap(ckpt)  # the new checkpoint is in; the replaced one (.old) becomes the prev
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "checkpoint.prev"]
    assert (tmp_path / "checkpoint.prev" / "tag").read_text() == "checkpoint.old"


def test_temporary_checkpoint_folder_is_per_process(tmp_path, monkeypatch):
    written = []
    real = checkpoint.save_file
    monkeypatch.setattr(checkpoint, "save_file", lambda state, path: (written.append(Path(path)), real(state, path)))
    run(tmp_path, max_steps=2)
    assert [p.parent.name for p in written] == [f"checkpoint.tmp-{os.getpid()}"]


# ----------------------------------------------------------------------------- 3. history cut by a kill

def test_partial_last_history_line_is_dropped(tmp_path, full):
    run(tmp_path, max_steps=9)
    with (tmp_path / "history.jsonl").open("a") as f:
        f.write('{"step": 10, "epoch": 2.5, "lr": 0.00')  # killed in the middle of a row
    with pytest.warns(UserWarning, match=r"dropped a partial last line of .*history\.jsonl"):
        res = run(tmp_path)
    assert rows(res.history) == rows(full.history)
    on_disk = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert rows(on_disk) == rows(full.history)


def test_bad_history_line_in_the_middle_raises(tmp_path):
    run(tmp_path, max_steps=9)
    path = tmp_path / "history.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:15] + "\n"
    path.write_text("".join(lines))
    with pytest.raises(ValueError, match=r"history\.jsonl, line 3 is not a history row"):
        run(tmp_path)


# ----------------------------------------------------------------------------- 4. one fit per out_dir

LOCK_HOLDER = textwrap.dedent("""
    import sys, time
    from romae.checkpoint import lock as _lock
    with _lock(sys.argv[1]):
        time.sleep(300)
""")


def test_second_process_on_the_same_out_dir_is_refused(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(tmp_path)], cwd=REPO, env=env)
    try:
        lock, deadline = tmp_path / ".lock", time.monotonic() + 120
        while not (lock.exists() and lock.read_text().startswith(f"{child.pid} ")):
            assert child.poll() is None, "the lock-holding process died"
            assert time.monotonic() < deadline, "the lock-holding process never took the lock"
            time.sleep(0.05)
        pattern = rf"another fit \(pid {child.pid} on host \S+\) is using {re.escape(str(tmp_path))}; wait for it"
        with pytest.raises(RuntimeError, match=pattern):
            run(tmp_path)
        assert not (tmp_path / "history.jsonl").exists()  # refused before touching anything
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert lock.exists()  # left behind by kill -9, and the kernel released its flock
    assert run(tmp_path).steps == 12
    assert not lock.exists()


def test_stale_lock_file_does_not_block_and_is_released_on_errors(tmp_path):
    (tmp_path / ".lock").write_text("999999999 some-host\n")  # a dead process's
    nan = ArrayDataset(x=torch.full((8, 4), float("nan")), y=torch.zeros(8))
    with pytest.raises(RuntimeError, match="non-finite"):  # an exception inside fit ...
        run(tmp_path, train_data=nan)
    assert run(tmp_path).steps == 12  # ... still released the lock
    assert not (tmp_path / ".lock").exists()  # removed on the way out


def test_lock_is_exclusive_within_one_process_too(tmp_path):
    with checkpoint.lock(tmp_path):
        with pytest.raises(RuntimeError, match=rf"another fit \(pid {os.getpid()} "):
            run(tmp_path)


def test_fit_cached_run_folder_names_the_code_and_reports_real_training_time(tmp_path, monkeypatch):
    """A checkpoint folder in runs/ is tied to the code version (a finished folder of other code was
    returned as it was), and the reported training time comes from the history, not the wall time of a
    resume that found the run finished."""
    from romae.compendium import staleness as S
    from romae.compendium.kept import fit_cached, seconds_of

    assert seconds_of([{"step": 5, "seconds": 1.5}, {"step": 10, "val_loss": 1.0}, {"step": 10, "seconds": 3.0}],
                            99.0) == 3.0
    assert seconds_of([], 7.0) == 7.0
    ids = set()
    for code in ("a", "b"):
        monkeypatch.setattr(S, "code_id", lambda rec, code=code: code)  # as if the code had changed
        ids.add(fit_cached("safety_probe", lambda _: Toy(), _ProbeCfg(), data(), cfg(epochs=1), {"probe": 1},
                           seed=0, cache_dir=tmp_path)["run_id"])
    assert len(ids) == 2


@dataclasses.dataclass
class _ProbeCfg:
    toy: int = 1

    def to_dict(self):
        return dataclasses.asdict(self)
