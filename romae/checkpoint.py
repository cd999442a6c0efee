"""Checkpoints and resume of `fit`: atomic saves, checksums, the previous checkpoint to fall back to, the RNG
states that make a resume exact, the out_dir lock, the configuration and history checks of a resume.

A run's out_dir: checkpoint/ (model.safetensors, train_state.pt, config.json with the others' sha256),
checkpoint.prev/ while the run is unfinished, history.jsonl, and .lock while a fit runs. `load_state`,
`load_checkpoint` and `read_config` read a finished run's checkpoint.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import socket
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import torch
from accelerate.utils import gather_object
from safetensors.torch import load_file, save_file

from romae.storage import sha256

try:
    import fcntl
except ImportError:  # Windows: no flock, so out_dir is not locked there
    fcntl = None


def rng_state() -> dict:
    state = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


# A run's out_dir: checkpoint/ is the newest checkpoint; checkpoint.prev/ the one before it, kept while the
# run is unfinished to fall back to if checkpoint/ turns out corrupted; checkpoint.old/ exists only in the
# middle of a swap, checkpoint.tmp-<pid>/ while that process writes a new one, and .lock while a fit runs.
_WEIGHTS, _STATE, _CONFIG = "model.safetensors", "train_state.pt", "config.json"


def _sibling(ckpt: Path, suffix: str) -> Path:
    return ckpt.with_name(f"{ckpt.name}.{suffix}")


def _checkpoint_file(path: str | Path, name: str) -> Path:
    """Accept a checkpoint directory, a run's out_dir (holding checkpoint/) or the file itself."""
    path = Path(path)
    for candidate in (path, path / name, path / "checkpoint" / name):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"no {name} at {path} (nor in {path / 'checkpoint'})")


def _json(file: Path):
    return json.loads(file.read_text(errors="replace"))  # garbled bytes fail as JSON, not as UTF-8


def _load_checked(file: Path, checksums: dict, loader):
    """loader(file), once file matches its sha256 in `checksums` (if listed there) -> ValueError naming the
    file when it is missing, corrupted or unreadable."""
    if not file.is_file():
        raise ValueError(f"{file} is missing")
    # A flipped bit in tensor data loads without complaint: only the checksum notices it.
    if file.name in checksums and sha256(file) != checksums[file.name]:
        raise ValueError(f"{file} is corrupted: its sha256 differs from the one saved in {_CONFIG}")
    try:
        return loader(file)
    except Exception as e:  # cut short or garbled: safetensors, zip, pickle and JSON errors alike
        raise ValueError(f"{file} is unreadable ({type(e).__name__}: {e})") from e


def read(folder: Path) -> tuple[dict, dict, dict]:
    """(weights, train_state, config) of a checkpoint folder, checked against the sha256 sums in its
    config.json; checkpoints from before those sums were saved are only checked by loading them."""
    config = _load_checked(folder / _CONFIG, {}, _json)
    sums = config.get("checksums", {})
    weights = _load_checked(folder / _WEIGHTS, sums, partial(load_file, device="cpu"))
    state = _load_checked(folder / _STATE, sums, partial(torch.load, map_location="cpu", weights_only=False))
    return weights, state, config


def load_state(path: str | Path) -> dict[str, torch.Tensor]:
    """The weights of a checkpoint (a checkpoint folder, a run's out_dir, or the .safetensors file), checked
    against the sha256 in the config.json beside them when it has one (ValueError if they differ)."""
    file = _checkpoint_file(path, _WEIGHTS)
    config = file.with_name(_CONFIG)
    sums = _load_checked(config, {}, _json).get("checksums", {}) if config.is_file() else {}
    return _load_checked(file, sums, partial(load_file, device="cpu"))


def load_checkpoint(model: torch.nn.Module, path: str | Path, strict: bool = True):
    """Load model.safetensors into `model`; returns load_state_dict's (missing_keys, unexpected_keys)."""
    return model.load_state_dict(load_state(path), strict=strict)  # copies onto the parameters' own device


def read_config(path: str | Path) -> dict:
    """The config.json saved beside a checkpoint: the model config, "train" (TrainConfig), "step",
    "total_steps" and "checksums" (sha256 of the checkpoint's other files)."""
    return _load_checked(_checkpoint_file(path, _CONFIG), {}, _json)


def save(ckpt: Path, accelerator, model, train_state: dict, mine: dict, config: dict,
                     keep_prev: bool = True) -> None:
    """Write checkpoint/ atomically: fill checkpoint.tmp-<pid>, then swap it in; a crash leaves an intact
    copy. The replaced checkpoint becomes checkpoint.prev/ (replacing the older one), or with
    `keep_prev=False` is deleted, with any prev. config.json records the other files' sha256.

    `mine` is this process's own state (RNGs, log window); one per process is kept, by rank.
    """
    ranks = gather_object([{**mine, "rng": rng_state()}])  # a collective: every process calls it
    if accelerator.is_main_process:
        tmp, old = _sibling(ckpt, f"tmp-{os.getpid()}"), _sibling(ckpt, "old")  # tmp: no process shares it
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        # copy=True also un-shares tied tensors, which safetensors refuses to save.
        state = {k: v.detach().to("cpu", copy=True).contiguous() for k, v in model.state_dict().items()}
        save_file(state, tmp / _WEIGHTS)
        torch.save({**train_state, "ranks": ranks}, tmp / _STATE)
        sums = {name: sha256(tmp / name) for name in (_WEIGHTS, _STATE)}
        config = {**config, "checksums": sums}
        (tmp / _CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True, default=str))
        if ckpt.exists():
            shutil.rmtree(old, ignore_errors=True)
            ckpt.rename(old)  # killed before the next rename: fit's start moves it back (repair_swap)
        tmp.rename(ckpt)
        _retire_old(ckpt, keep_prev)
    accelerator.wait_for_everyone()


def _retire_old(ckpt: Path, keep_prev: bool = True) -> None:
    """The last part of a swap: checkpoint.old/ (the replaced checkpoint) becomes checkpoint.prev/ or goes."""
    old, prev = _sibling(ckpt, "old"), _sibling(ckpt, "prev")
    if keep_prev and not old.exists():
        return
    shutil.rmtree(prev, ignore_errors=True)
    if keep_prev:
        old.rename(prev)
    else:
        shutil.rmtree(old, ignore_errors=True)


def repair_swap(ckpt: Path) -> None:
    """Finish what a process killed inside save left (the caller holds the lock: no one else
    writes here): checkpoint.old/ is put back if the new checkpoint never arrived, else retired as prev."""
    old = _sibling(ckpt, "old")
    if old.exists() and not ckpt.exists():
        old.rename(ckpt)
    _retire_old(ckpt)
    for tmp in ckpt.parent.glob(f"{ckpt.name}.tmp*"):  # half-written by dead processes
        shutil.rmtree(tmp, ignore_errors=True)


def settle(ckpt: Path) -> tuple[dict, dict, dict] | None:
    """(weights, train_state, config) of the checkpoint to resume from, read and checked, or None if there
    is none. If checkpoint/ is bad (a file missing, corrupted or unreadable) but checkpoint.prev/ is good,
    warn, keep the bad one as checkpoint.corrupt/ and move prev in its place; if neither is, ValueError."""
    prev = _sibling(ckpt, "prev")
    if not ckpt.exists() and not prev.exists():
        return None
    try:
        if ckpt.exists():
            return read(ckpt)
        problem = f"{ckpt} is missing"
    except ValueError as e:
        problem = str(e)
    try:
        if not prev.exists():
            raise ValueError(f"there is no {prev}")
        loaded = read(prev)
    except ValueError as e:
        raise ValueError(f"cannot resume: {problem}; no good previous checkpoint either ({e}). Start over with "
                         "resume=False, or use a fresh out_dir") from None
    warnings.warn(f"{problem}; resuming from the previous checkpoint (step {loaded[1]['step']}) instead, the "
                  f"bad one is kept as {ckpt.name}.corrupt", stacklevel=2)
    if ckpt.exists():
        corrupt = _sibling(ckpt, "corrupt")
        shutil.rmtree(corrupt, ignore_errors=True)
        ckpt.rename(corrupt)  # out of the way, so the next save does not keep it as prev
    prev.rename(ckpt)
    return loaded


@contextlib.contextmanager
def lock(out_dir: str | Path):
    """Hold out_dir/.lock exclusively for the `with` block, or raise RuntimeError naming its holder.

    An flock, which the kernel drops when its process dies (kill -9 too): a lock file left behind never
    blocks. The file is removed on the way out, so a process that opened it just before must check that
    the file it locked is still the one named .lock.
    """
    path = Path(out_dir) / ".lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield
        return
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, host = (os.read(fd, 256).decode(errors="replace").split() + ["?", "?"])[:2]
            os.close(fd)
            raise RuntimeError(f"another fit (pid {pid} on host {host}) is using {out_dir}; wait for it or use "
                               "another out_dir") from None
        try:
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # its holder removed it meanwhile: lock the new one
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        yield
    finally:
        path.unlink(missing_ok=True)  # before unlocking: see above
        os.close(fd)


# TrainConfig fields that change only what is shown, never the weights: a resumed run may change them.
_DISPLAY_ONLY = ("progress", "log_every", "compile", "checkpoint_every", "cuda_graphs")  # equal results (compile,
#                                                                            cuda_graphs: up to rounding)
_ABSENT = "(absent)"


def _diff(saved: dict, now: dict, prefix: str = "") -> dict[str, dict]:
    """{dotted name: {"saved": a, "now": b}} for each entry that differs; nested dicts entry by entry."""
    changes = {}
    for key in sorted(saved.keys() | now.keys()):
        a, b = saved.get(key, _ABSENT), now.get(key, _ABSENT)
        if isinstance(a, dict) and isinstance(b, dict):
            changes.update(_diff(a, b, f"{prefix}{key}."))
        elif a != b:
            changes[f"{prefix}{key}"] = {"saved": a, "now": b}
    return changes


def config_changes(saved: dict, now: dict) -> dict[str, dict]:
    """How `now` ({**model config, "train": TrainConfig dict}) differs from a checkpoint's config.json,
    display-only fields aside; the model config counts only when both sides have one."""
    def comparable(config: dict) -> dict:
        # as config.json reads back: tuples are lists (betas), other objects strings
        config = json.loads(json.dumps(config, default=str))
        config = {k: v for k, v in config.items() if k not in ("step", "total_steps", "checksums")}
        if isinstance(config.get("train"), dict):
            config["train"] = {k: v for k, v in config["train"].items() if k not in _DISPLAY_ONLY}
        return config

    saved, now = comparable(saved), comparable(now)
    keys = {"train"} & saved.keys() & now.keys()
    if saved.keys() - {"train"} and now.keys() - {"train"}:
        keys |= (saved.keys() | now.keys()) - {"train"}
    return _diff({k: v for k, v in saved.items() if k in keys}, {k: v for k, v in now.items() if k in keys})


def config_error(ckpt: Path, changes: dict) -> str:
    show = lambda v: v if v == _ABSENT else json.dumps(v)  # noqa: E731
    lines = "".join(f"\n  {name}: {show(c['saved'])} -> {show(c['now'])}" for name, c in changes.items())
    return (f"{ckpt} was saved with another configuration:{lines}\nResuming would go on with its optimizer "
            "state and schedule under the new settings. Use a fresh out_dir, resume=False to start over, or "
            "allow_config_change=True to continue anyway.")


def append_row(path: Path | None, row: dict) -> None:
    if path is not None:
        with path.open("a") as f:
            f.write(json.dumps(row) + "\n")


def resumed_history(path: Path, saved: list[dict] | None, step: int) -> list[dict]:
    """The history a resumed run goes on from: history.jsonl's rows up to the checkpoint's `step`, checked
    against `saved`, the copy the checkpoint keeps (its rows end at its step). Where the file was cut, deleted
    or edited, the checkpoint's copy wins, with a warning (the file is then rewritten from it). A checkpoint
    without a copy (older code) trusts the file."""
    on_disk = [r for r in read_history(path) if r["step"] <= step] if path.exists() else None
    if saved is None:
        return on_disk or []
    if on_disk != saved:
        what = "is missing" if on_disk is None else f"holds {len(on_disk)} of the {len(saved)} rows up to step {step}" \
            if len(on_disk) < len(saved) else "differs from the checkpoint's record"
        warnings.warn(f"{path} {what}: rewritten from the copy in the checkpoint ({len(saved)} rows), so the "
                      "resumed history has no holes", stacklevel=4)  # resumed_history <- _fit <- fit <- caller
    return list(saved)


def read_history(path: Path) -> list[dict]:
    """The rows of history.jsonl. A last line cut short (no newline after it, not JSON: the process was
    killed while writing it) is dropped with a warning; any other bad line is a ValueError."""
    lines = path.read_text(errors="replace").split("\n")  # ends with "" when the file ends with a newline
    rows = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if isinstance(row, dict) and "step" in row:
            rows.append(row)
        elif i == len(lines):
            warnings.warn(f"dropped a partial last line of {path} (line {i}, cut short by a kill)", stacklevel=5)
        else:
            raise ValueError(f"{path}, line {i} is not a history row: {line[:80]!r}; fix or delete that line "
                             "(or start over with resume=False)")
    return rows
