"""What a long unattended run would meet (issue 31, item 9): every config value is checked where the config
is built, with an error naming the field; fit gives the caller's model back untouched when it fails; a batch
whose mask hides no real token is refused instead of training on a loss of 0."""

from __future__ import annotations

import math

import pytest
import torch

from romae.config import EncoderConfig, RoMAEConfig, TrainConfig, size
from romae.model import RoMAEForPreTraining
from romae.train import ArrayDataset, fit

BAD_TRAIN = [
    ("grad_clip", -1), ("grad_clip", 0), ("grad_clip", float("nan")), ("lr", math.inf), ("lr", 0), ("lr", "1e-3"),
    ("epochs", 2.5), ("epochs", 0), ("epochs", True), ("batch_size", 2.5), ("log_every", 0), ("eval_every", 0),
    ("checkpoint_every", -5), ("seed", -1), ("seed", 2 ** 40), ("seed", 1.5), ("betas", (0.9,)), ("betas", (0.9, 1.0)),
    ("betas", "ab"), ("momentum", 1.0), ("weight_decay", -0.1), ("weight_decay", math.inf), ("bf16", "no"),
    ("progress", 1), ("compile", None), ("length_buckets", -1), ("warmup_fraction", 1.0), ("micro_batch", 0),
]


@pytest.mark.parametrize("name, value", BAD_TRAIN)
def test_train_config_refuses_a_bad_value_naming_the_field(name, value):
    with pytest.raises(ValueError, match=rf"TrainConfig\.{name} must be"):
        TrainConfig(**{name: value})


@pytest.mark.parametrize("name, value", [
    ("norm_eps", -1), ("norm_eps", 0), ("dropout", 1.0), ("dropout", -0.1), ("drop_path", float("nan")),
    ("depth", 2.5), ("d_model", 0), ("n_heads", True), ("d_ff", 0)])
def test_encoder_config_refuses_a_bad_value_naming_the_field(name, value):
    with pytest.raises(ValueError, match=rf"EncoderConfig\.{name} must be"):
        size("tiny", **{name: value})


@pytest.mark.parametrize("name, value", [
    ("token_dim", 0), ("token_dim", 2.5), ("n_axes", 0), ("max_len", 0), ("use_cls", "yes"), ("head_dropout", 1),
    ("mask_ratio", 1.0), ("mask_ratio", "0.5"), ("label_smoothing", -0.1), ("p", 1.5), ("normalize_targets", 0)])
def test_model_config_refuses_a_bad_value_naming_the_field(name, value):
    with pytest.raises(ValueError, match=rf"RoMAEConfig\.{name} must be"):
        RoMAEConfig(**{"token_dim": 4, name: value})


def test_good_values_are_kept_and_whole_floats_become_ints():
    cfg = TrainConfig(epochs=3.0, batch_size=8, grad_clip=math.inf, seed=0, betas=[0.9, 0.95])
    assert cfg.epochs == 3 and isinstance(cfg.epochs, int) and cfg.grad_clip == math.inf and cfg.betas == (0.9, 0.95)
    assert TrainConfig(grad_clip=None).grad_clip is None and EncoderConfig(d_ff=None).d_ff == 720


class _Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Linear(3, 1)

    def forward(self, x, y):
        return None, ((self.net(x).squeeze(-1) - y) ** 2).mean()


def _data(n=64):
    x = torch.randn(n, 3, generator=torch.Generator().manual_seed(0))
    return ArrayDataset(x=x, y=x.sum(1))


def test_fit_that_fails_gives_the_model_back_untouched(tmp_path):
    model = _Lin().eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    # a rate so high that the loss overflows after a few updates: the caller's model must not keep them
    cfg = TrainConfig(epochs=4, batch_size=8, lr=1e30, warmup_steps=0, log_every=1, progress=False)
    with pytest.raises(RuntimeError, match="non-finite training loss"):
        fit(model, _data(), cfg, out_dir=tmp_path, device="cpu")
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert not model.training  # its mode too
    # a good run still trains the model in place
    res = fit(model, _data(), TrainConfig(epochs=1, batch_size=8, lr=1e-2, progress=False), device="cpu")
    assert res.model is model and not torch.equal(model.net.weight, before["net.weight"])


@pytest.mark.parametrize("max_steps", [-1, 2.5, "3"])
def test_fit_refuses_a_bad_max_steps(max_steps):
    with pytest.raises(ValueError, match="fit.max_steps must be a whole number"):
        fit(_Lin(), _data(), TrainConfig(epochs=1, progress=False), device="cpu", max_steps=max_steps)


def test_a_mask_that_hides_only_padding_is_refused():
    model = RoMAEForPreTraining(RoMAEConfig(token_dim=2, encoder=size("tiny", depth=1), decoder=size("tiny-shallow")))
    values, positions = torch.randn(2, 6, 2), torch.arange(6.0).expand(2, 1, 6)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[:, 4:] = True
    mask = pad.clone()  # hides the two padded slots of each sample, no real token
    with pytest.raises(ValueError, match="hides no real"):
        model(values, positions, mask=mask, pad_mask=pad)
    mask[:, 3] = True  # one real token hidden per sample: fine
    mask[:, 5] = False
    _, loss = model(values, positions, mask=mask, pad_mask=pad)
    assert loss > 0


def _cfg(**kw):
    return TrainConfig(**{**dict(epochs=2, batch_size=8, lr=1e-2, warmup_steps=0, log_every=1, progress=False,
                                 seed=0, checkpoint_every=3), **kw})


@pytest.mark.parametrize("damage", ["cut", "deleted", "edited"])
def test_a_resume_whose_history_was_damaged_repairs_it_from_the_checkpoint(tmp_path, damage):
    full = fit(_Lin(), _data(), _cfg(), device="cpu")
    fit(_Lin(), _data(), _cfg(), out_dir=tmp_path, device="cpu", max_steps=9)
    path = tmp_path / "history.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    if damage == "cut":
        path.write_text("".join(lines[:4]))
    elif damage == "deleted":
        path.unlink()
    else:
        path.write_text("".join(lines[:2] + lines[3:]))
    with pytest.warns(UserWarning, match="rewritten from the copy in the checkpoint"):
        rest = fit(_Lin(), _data(), _cfg(), out_dir=tmp_path, device="cpu")
    assert [r["step"] for r in rest.history] == [r["step"] for r in full.history]  # no holes
    assert [r["loss"] for r in rest.history] == pytest.approx([r["loss"] for r in full.history], rel=1e-6)
    assert len(path.read_text().splitlines()) == len(full.history)


def test_a_resume_on_other_data_with_the_same_steps_per_epoch_is_refused(tmp_path):
    fit(_Lin(), _data(), _cfg(), out_dir=tmp_path, device="cpu", max_steps=5)
    other = ArrayDataset(x=_data().tensors["x"] + 1, y=_data().tensors["y"])  # same size, other values
    with pytest.raises(ValueError, match="trained on other data than this run's"):
        fit(_Lin(), other, _cfg(), out_dir=tmp_path, device="cpu")
    fit(_Lin(), _data(), _cfg(), out_dir=tmp_path, device="cpu")  # the same data resumes


# ----------------------------------------------------------------------------- long trainings survive

def test_the_paper_profile_checkpoints_about_every_25_planned_minutes(monkeypatch):
    from romae.compendium import plan

    model_cfg = RoMAEConfig(token_dim=4, encoder=size("tiny"), decoder=size("tiny-shallow"))
    train_cfg = TrainConfig(epochs=10, batch_size=64)
    assert plan.fit_memory(train_cfg, model_cfg, 128, "pretrain", "quick") is train_cfg  # other profiles: as given
    planned = plan.fit_memory(train_cfg, model_cfg, 128, "pretrain", "paper")
    t = plan.Training("", "pretrain", model_cfg, train_cfg, 128, samples=1)
    seconds = plan.step_seconds(t, "cpu", "fp32", 1)
    assert planned.checkpoint_every == max(1, round(plan.CHECKPOINT_MINUTES * 60 / seconds))
    # derived from the plan's time, not a constant: a model twice as deep checkpoints about twice as often
    deep = plan.fit_memory(train_cfg, RoMAEConfig(token_dim=4, encoder=size("tiny", depth=24),
                                                  decoder=size("tiny-shallow")), 128, "pretrain", "paper")
    assert 1.4 < planned.checkpoint_every / deep.checkpoint_every < 2.2
    assert plan.fit_memory(TrainConfig(checkpoint_every=7), model_cfg, 128, "pretrain", "paper").checkpoint_every == 7


KILLED_RUN = """
import sys, time, torch
sys.path.insert(0, "tests")
from test_unattended import _Lin, _data, _cfg
from romae.train import fit
fit(_Lin(), _data(), _cfg(epochs=25, checkpoint_every=4), out_dir=sys.argv[1], device="cpu",
    transform=lambda b: (time.sleep(0.03), b)[1])
"""


def test_a_run_killed_mid_way_resumes_past_step_0_to_the_same_weights(tmp_path):
    import json
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    full = fit(_Lin(), _data(), _cfg(epochs=25, checkpoint_every=4), device="cpu")
    child = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(tmp_path)], cwd=root)
    saved, deadline = tmp_path / "checkpoint" / "config.json", time.monotonic() + 120

    def step() -> int:  # the saved checkpoint's step; -1 while none is there (or mid-swap: checkpoint/ renamed)
        try:
            return json.loads(saved.read_text())["step"]
        except FileNotFoundError:
            return -1

    try:
        while step() < 40:
            assert child.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    from romae.checkpoint import repair_swap

    repair_swap(saved.parent)  # killed inside a swap: the checkpoint it was replacing is the one fit resumes from
    killed_at = step()
    assert 40 <= killed_at < full.steps
    calls = []
    rest = fit(_Lin(), _data(), _cfg(epochs=25, checkpoint_every=4), out_dir=tmp_path, device="cpu",
               transform=lambda b: (calls.append(1), b)[1])
    assert len(calls) <= full.steps - killed_at  # resumed from its last checkpoint, not from step 0
    for k, v in rest.model.state_dict().items():
        assert torch.equal(v, full.model.state_dict()[k]), k
    assert [r["step"] for r in rest.history] == [r["step"] for r in full.history]


# ----------------------------------------------------------------------------- stores built by several processes

BUILDER = """
import os, sys, time
from pathlib import Path
from romae.experiments import elasticc as E
from romae.data import lightcurves
E.CACHE = Path(sys.argv[1])
generate = lightcurves.generate

def slow(*args, **kw):  # the first builder is still writing when the second arrives
    with open(Path(sys.argv[1]) / "builders.txt", "a") as f:
        f.write(f"{os.getpid()}\\n")
    time.sleep(2)
    return generate(*args, **kw)

lightcurves.generate = slow
folder, meta = E._generated_store("standin", lightcurves, 3, 0)
print("ROWS", len(meta), len(E.store.TokenStore(folder)))
"""


def test_two_processes_building_the_same_store_at_once_build_it_once(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    procs = [subprocess.Popen([sys.executable, "-c", BUILDER, str(tmp_path)], cwd=root, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    rows = {line for out, _ in outs for line in out.splitlines() if line.startswith("ROWS")}
    assert len(rows) == 1  # both read the same complete store
    assert len((tmp_path / "builders.txt").read_text().split()) == 1  # one built it, the other waited
    assert not [p for p in (tmp_path / "stores").rglob("*.part*")]  # no temporary left


def test_save_arrays_keeps_a_store_another_process_finished_and_leaves_no_temporary(tmp_path):
    import numpy as np

    from romae import store

    first = store.save_arrays(tmp_path / "s", {"a": np.arange(3)}, {"who": "first"})
    store.save_arrays(tmp_path / "s", {"a": np.arange(5)}, {"who": "second"})  # the same key, written again
    arrays, meta = store.load_arrays(first, ["a"])
    assert meta["who"] == "first" and len(arrays["a"]) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


# ----------------------------------------------------------------------------- summaries written atomically

def test_a_reader_never_sees_a_half_written_summary(tmp_path):
    import shutil
    import threading
    from pathlib import Path

    from romae.runner.summary import build_summary

    root = Path(__file__).resolve().parents[1] / "reports"
    for name in ("results.csv", "runs.csv"):
        shutil.copy(root / name, tmp_path / name)
    shutil.copytree(root / "provenance", tmp_path / "provenance")
    build_summary(tmp_path)
    whole = (tmp_path / "SUMMARY.md").read_text()
    done, seen = threading.Event(), []

    def rebuild():
        for _ in range(15):
            build_summary(tmp_path)
        done.set()

    writer = threading.Thread(target=rebuild)
    writer.start()
    while not done.is_set():
        seen.append((tmp_path / "SUMMARY.md").read_text())
    writer.join()
    assert len(seen) > 10 and all(text == whole for text in seen)
    assert not list(tmp_path.glob(".*.tmp"))
