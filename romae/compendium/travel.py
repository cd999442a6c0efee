"""Trainings that outlive their machine: a training stopped cleanly before its end (a time budget, SIGTERM or
SIGUSR1: `fit` returns it `paused`) leaves its checkpoint in the committed record of trainings, where the next piece
of the run finds it on a fresh clone, on this device or another (CPU <-> GPU: tensors load onto the CPU first).

    <record>/in_progress/<run id>/model.safetensors, train_state.pt, config.json   the checkpoint, as fit wrote it
    <record>/in_progress/<run id>/progress.json                                      what it is and where it stands

progress.json: {name, run_id, code, notebook, steps, total_steps, planned_seconds, bytes, files: {file: sha256},
pieces: [{device, from_step, to_step, wall_seconds, ended, why}]}. The run id names the training's config, data and
code (`romae.compendium.kept.fit_cached`), so a piece continues only the training it belongs to; the files are
verified by their sha256 before they are used (and by the checksums of config.json when fit loads them).

`arrive` (before a training) brings a travelling checkpoint that is ahead of this machine's into the run's out_dir;
`leave` (after a paused one) writes its checkpoint there with one more piece; `done` (once it finished and was kept)
removes it. `listing` is what `python -m romae.trainings` and the front page show of trainings in progress.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from pathlib import Path

from .. import checkpoint, runtime
from ..storage import sha256, write_atomic
from . import terminal, trainings

FOLDER = "in_progress"
PROGRESS = "progress.json"
FILES = ("model.safetensors", "train_state.pt", "config.json")
NOTEBOOK_ENV = "ROMAE_NOTEBOOK"  # the notebook a kernel runs (set by the runner): said in progress.json


class TrainingPaused(Exception):
    """A training stopped cleanly before its end; its checkpoint continues it (`where`, or this machine's runs/)."""

    def __init__(self, name: str, run_id: str, steps: int, total: int, why: str, planned_seconds: float | None,
                 where: Path | None):
        self.name, self.run_id, self.steps, self.total, self.why = name, run_id, steps, total, why
        self.planned_seconds, self.where = planned_seconds, where
        left = "" if not planned_seconds or not total else \
            f"; about {terminal.duration(planned_seconds * (1 - steps / total))} left by the plan"
        kept = f"its checkpoint travels in {where}" if where is not None else "nothing was trained yet" \
            if not steps else "its checkpoint is in this machine's runs/ only (no record of trainings is open)"
        super().__init__(f"{name} paused at step {steps:,} of {total:,} ({why}){left}; {kept}")


def _records() -> list[Path]:
    return [f / FOLDER for f in trainings.folders()]


def read(folder: Path) -> dict:
    """The progress of a travelling checkpoint, its files verified against their sha256 -> ValueError naming what
    is wrong (a file missing or altered, progress.json unreadable)."""
    try:
        progress = json.loads((folder / PROGRESS).read_text())
        files = progress["files"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{folder / PROGRESS} is unreadable ({type(e).__name__}: {e})") from None
    for name in FILES:
        if not (folder / name).is_file():
            raise ValueError(f"{folder / name} is missing")
        if sha256(folder / name) != files.get(name):
            raise ValueError(f"{folder / name} is altered: its sha256 is not the one {PROGRESS} records")
    if progress.get("run_id") != folder.name:
        raise ValueError(f"{folder / PROGRESS} names run {progress.get('run_id')!r}, not {folder.name!r}")
    return progress


def local_step(out_dir: Path, which: str = "step") -> int:
    """The step of the checkpoint in out_dir (`which="total_steps"`: the steps it plans in all), -1 without one."""
    try:
        return int(checkpoint.read_config(out_dir / "checkpoint")[which])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return -1


def arrive(run_id: str, out_dir: Path) -> dict | None:
    """Before training `run_id` into `out_dir`: the travelling checkpoint of the record, verified, copied into
    out_dir/checkpoint when it is ahead of the one there (a fresh clone has none) -> its progress (the pieces so far),
    or None when there is none. One that fails its checks is said (a warning, a terminal line) and not used."""
    for folder in (r / run_id for r in _records()):
        if not folder.is_dir():
            continue
        try:
            progress = read(folder)
        except ValueError as e:
            line = f"{run_id}: the travelling checkpoint is not used: {e}"
            warnings.warn(line, stacklevel=2)
            terminal.say(line)
            continue
        if progress["steps"] > local_step(out_dir):
            out_dir.mkdir(parents=True, exist_ok=True)
            tmp = out_dir / "checkpoint.tmp-travel"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            for name in FILES:
                shutil.copyfile(folder / name, tmp / name)
            for old in ("checkpoint", "checkpoint.prev"):  # this machine's older state of the run
                shutil.rmtree(out_dir / old, ignore_errors=True)
            (out_dir / "history.jsonl").unlink(missing_ok=True)  # the checkpoint's own history is the run's
            tmp.rename(out_dir / "checkpoint")
            terminal.say(f"{progress['name']}: continues from step {progress['steps']:,} of "
                         f"{progress['total_steps']:,} (piece {len(progress['pieces']) + 1}; the checkpoint "
                         f"travelled from {progress['pieces'][-1]['device'] if progress['pieces'] else '?'})")
        return progress
    _orphans(run_id)
    return None


def _orphans(run_id: str) -> None:
    """Say when a record holds a training of the same name in progress under another run id: started with another
    config, data or code, it cannot continue this one, which trains from the start (the other stays in the record
    until removed: `python -m romae.runner.stales` says what changed since).

    In the record this run writes to (`trainings.open_folder()`), that is what a user must hear (a warning and a terminal
    line): it is usually this run's own training, which a code change keeps from continuing. In another record (a
    quick run beside the paper record's training in progress) or with no record open (a notebook run by hand), it is
    another profile's training, left as it is: a terminal line only, nothing in the notebook's output."""
    name = run_id.rsplit("-", 1)[0]
    open_record = trainings.open_folder()
    open_record = open_record.resolve() if open_record is not None else None
    for folder in sorted(p for r in _records() for p in r.glob(f"{name}-*") if p.is_dir() and p.name != run_id):
        try:
            progress = json.loads((folder / PROGRESS).read_text())
            where = f"at step {progress['steps']:,} of {progress['total_steps']:,}"
        except (OSError, ValueError, KeyError, TypeError):
            where = "(its progress.json unreadable)"
        if open_record is not None and folder.parent.parent.resolve() == open_record:
            line = (f"{name}: the training in progress in {folder} {where} was started under another config, data or "
                    f"code than this run ({run_id}): it cannot continue it; this one trains from the start")
            warnings.warn(line, stacklevel=3)
        else:
            line = (f"{name}: another record's training of this name is in progress in {folder} {where} (another "
                    f"config, data or code: another profile's); it is left as it is, and this run ({run_id}) trains "
                    "its own")
        terminal.say(line)


def leave(run_id: str, out_dir: Path, *, name: str, code: str, started: int, wall_seconds: float, why: str,
          planned_seconds: float | None, before: dict | None) -> Path | None:
    """After training `run_id` stopped cleanly: its checkpoint (out_dir/checkpoint) into the open record with one
    more piece (`before`: the progress it continued from) -> the folder, or None (no record open, or nothing saved)."""
    record = trainings.open_folder()
    ckpt = out_dir / "checkpoint"
    if record is None or not ckpt.is_dir():
        return None
    config = checkpoint.read_config(ckpt)
    dest = record / FOLDER / run_id
    tmp = dest.with_name(f".{run_id}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in FILES:
        shutil.copyfile(ckpt / f, tmp / f)
    files = {f: sha256(tmp / f) for f in FILES}
    for f, expected in config.get("checksums", {}).items():  # what fit wrote, unchanged by the copy
        if files.get(f) != expected:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ValueError(f"{ckpt / f} changed while it was copied into the record: not kept")
    pieces = [*(before or {}).get("pieces", []), piece(started, int(config["step"]), wall_seconds, why)]
    progress = dict(name=name, run_id=run_id, code=code, notebook=_notebook(), steps=int(config["step"]),
                    total_steps=int(config["total_steps"]), planned_seconds=planned_seconds,
                    bytes=sum((tmp / f).stat().st_size for f in FILES), files=files, pieces=pieces)
    write_atomic(tmp / PROGRESS, json.dumps(progress, indent=1, sort_keys=True, default=str) + "\n")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    return dest


def piece(started: int, ended_at: int, wall_seconds: float, why: str) -> dict:
    """One piece of a training: this machine's device, the steps it ran, its wall time, why it ended."""
    return dict(device=runtime.device_label(runtime.current().device), stack=runtime.stack(), from_step=started,
                to_step=ended_at, wall_seconds=round(wall_seconds, 1),
                ended=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), why=why)


def done(run_id: str) -> None:
    """A training finished and was kept: its travelling checkpoint leaves the open record."""
    record = trainings.open_folder()
    if record is not None:
        shutil.rmtree(record / FOLDER / run_id, ignore_errors=True)


def _notebook() -> str:
    return os.environ.get(NOTEBOOK_ENV, "")


def listing(folder: Path | None = None) -> list[dict]:
    """Every training in progress in the record `folder` (default: reports/trainings/): name, notebook, steps done
    and planned, each piece's device, steps and wall time, and what the plan says is left; a damaged one with why."""
    base = (folder or trainings.DEFAULT) / FOLDER
    rows = []
    for entry in sorted(p for p in base.glob("*") if p.is_dir() and not p.name.startswith(".")):
        try:
            p = read(entry)
        except ValueError as e:
            rows.append(dict(name=entry.name, run_id=entry.name, problem=str(e)))
            continue
        total, steps = p["total_steps"], p["steps"]
        planned = p.get("planned_seconds")
        rows.append(dict(name=p["name"], run_id=p["run_id"], notebook=p.get("notebook", ""), steps=steps,
                         total_steps=total, done=steps / total if total else 0.0, bytes=p.get("bytes"),
                         wall_seconds=sum(x.get("wall_seconds", 0.0) for x in p["pieces"]),
                         planned_left_seconds=planned * (1 - steps / total) if planned and total else None,
                         pieces=[f"{x['device']}: steps {x['from_step']:,}-{x['to_step']:,} in "
                                 f"{terminal.duration(x['wall_seconds'])}" for x in p["pieces"]]))
    return rows


def show(folder: Path) -> None:
    """Print the trainings in progress in record `folder` (`listing`), each with its pieces: nothing when none."""
    rows = listing(folder)
    if rows:
        print(f"{len(rows)} training(s) in progress in {folder / FOLDER} (stopped cleanly; the next piece continues "
              "each, on a fresh clone too):")
    for r in rows:
        if "problem" in r:
            print(f"  {r['run_id']}: DAMAGED, not used: {r['problem']}")
            continue
        left = "" if r["planned_left_seconds"] is None else \
            f", about {terminal.duration(r['planned_left_seconds'])} left by the plan"
        print(f"  {r['name']} ({r['notebook'] or 'no notebook'}): step {r['steps']:,} of {r['total_steps']:,} "
              f"({100 * r['done']:.1f} %), {len(r['pieces'])} piece(s), {terminal.duration(r['wall_seconds'])} so far"
              f"{left}; checkpoint {r['bytes'] / 1e6:.1f} MB [{r['run_id']}]")
        for p in r["pieces"]:
            print(f"      {p}")


def main(argv: list[str] | None = None) -> int:
    """`python -m romae.trainings`: each record's kept trainings (`romae.compendium.trainings.main`), then those in
    progress in it (`show`)."""
    import argparse

    status = trainings.main(argv)  # which parses and checks the arguments
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--reports")
    given = parser.parse_known_args(argv)[0].reports
    root = Path(given) / "trainings" if given else trainings.DEFAULT
    for folder in (root, root / "quick"):
        show(folder)
    return status
