"""The committed record of kept trainings verifies itself, and says exactly what the next run does with each entry
(romae.compendium.trainings: `check`, the one decision the loader and the command line share; `next_run`).

A hostile tester's findings, each tried on copies of real entries of reports/trainings/ in a temporary folder:
an entry copied under another training's key, twins edited by hand (config, code, code_of, summary, facts), damaged
or missing files. Every kind of damage is set aside by the loader and reported so by the command line; a set-aside
entry is said in the terminal of `make reproduce`, retrained, written under its key, and never deleted beforehand.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from romae.compendium import cache
from romae.compendium import kept as K
from romae.compendium import staleness, terminal, trainings

REAL = trainings.DEFAULT  # the repository's committed record (read only: entries are copied out of it)


def _real_keys(n: int = 2) -> list[str]:
    keys = sorted(p.stem for p in REAL.glob("pendulum_model-*.json") if (REAL / f"{p.stem}.pt").exists())
    first: dict[str, str] = {}  # one entry per training (name and config), whatever code it was kept under
    for k in keys:
        first.setdefault(k.rsplit("-", 1)[0], k)
    keys = list(first.values())
    if len(keys) < n:
        pytest.skip(f"reports/trainings holds fewer than {n} kept Pendulum trainings to copy")
    return keys[:n]


def _carried(src: Path, key: str, dst: Path) -> str:
    """A real entry copied into `dst` as a run would keep it now: its twin's code the sound rule's record of a
    fit_cached training (`staleness.TRAINING_ROOTS`, computed here) and its key made of it -> the new key."""
    meta = _twin(src, key)
    rec = staleness.record(list(staleness.TRAINING_ROOTS))
    meta.update(code=staleness.code_id(rec), code_of=rec)
    new = cache.key_of(key.rsplit("-", 2)[0], meta["config"], meta["code"])
    shutil.copyfile(src / f"{key}.pt", dst / f"{new}.pt")
    (dst / f"{new}.json").write_text(json.dumps(meta, indent=1))
    return new


def _copy(src: Path, key: str, dst: Path, as_key: str | None = None) -> None:
    for ext in (".pt", ".json"):
        shutil.copyfile(src / f"{key}{ext}", dst / f"{as_key or key}{ext}")


def _twin(folder: Path, key: str) -> dict:
    return json.loads((folder / f"{key}.json").read_text())


def _edit(folder: Path, key: str, change) -> None:
    """Edit the twin of `key` by hand: `change(meta)` mutates it."""
    meta = _twin(folder, key)
    change(meta)
    (folder / f"{key}.json").write_text(json.dumps(meta, indent=1))


def _files(folder: Path) -> dict[str, bytes]:
    """Every file of a record folder but its lock: what must stay as it was."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != ".lock"}


@pytest.fixture
def record(tmp_path, monkeypatch):
    """Copies of two real Pendulum entries in <tmp>/reports/trainings, carried to the sound rule's keys (their code is
    the code's now); no record open; the repository's own record empty."""
    folder = tmp_path / "reports" / "trainings"
    folder.mkdir(parents=True)
    a, b = (_carried(REAL, k, folder) for k in _real_keys())
    shutil.copytree(folder, folder.parent / "carried")  # pristine copies, for tests that need one
    monkeypatch.setattr(trainings, "DEFAULT", tmp_path / "empty-repo-record")
    monkeypatch.delenv(trainings.ENV, raising=False)
    monkeypatch.delenv(terminal.ECHO, raising=False)
    return SimpleNamespace(folder=folder, a=a, b=b, tmp=tmp_path)


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


# every kind of damage: (what it does to the record, the entry it damages: "a" or "b")
DAMAGES = {
    "copied under another training's key": lambda f, a, b: _copy(f, a, f, as_key=b),
    "config edited": lambda f, a, b: _edit(f, b, lambda m: m["config"].update(init_seed=m["config"]["init_seed"] + 1)),
    "code edited": lambda f, a, b: _edit(f, b, lambda m: m.update(code="0" * 64)),
    "code_of edited": lambda f, a, b: _edit(f, b, lambda m: m["code_of"]["numbers"].update(model="0" * 12)),
    "code_of unit edited": lambda f, a, b: _edit(f, b, lambda m: m["code_of"]["units"].update({"train.py:fit": "0"})),
    "code_of removed": lambda f, a, b: _edit(f, b, lambda m: m.pop("code_of")),
    "code_of swapped for the old format's modules": lambda f, a, b: _edit(
        f, b, lambda m: (m.pop("code_of"), m.update(modules=["model.py"]))),
    "summary edited": lambda f, a, b: _edit(f, b, lambda m: m["summary"].update(steps=1)),
    "bytes edited": lambda f, a, b: _edit(f, b, lambda m: m.update(bytes=m["bytes"] + 1)),
    "weights said left out though kept": lambda f, a, b: _edit(f, b, lambda m: m.update(dropped=["state_dict"])),
    "dropped not a list of names": lambda f, a, b: _edit(f, b, lambda m: m.update(dropped=7)),
    "sha256 edited": lambda f, a, b: _edit(f, b, lambda m: m.update(sha256="0" * 64)),
    ".pt with a byte flipped": lambda f, a, b: _flip(f / f"{b}.pt"),
    ".pt truncated": lambda f, a, b: (f / f"{b}.pt").write_bytes((f / f"{b}.pt").read_bytes()[:1000]),
    ".pt of another training, twin re-hashed": lambda f, a, b: (
        shutil.copyfile(f / f"{a}.pt", f / f"{b}.pt"),
        _edit(f, b, lambda m: m.update(sha256=_twin(f, a)["sha256"], bytes=_twin(f, a)["bytes"]))),
    ".pt missing": lambda f, a, b: (f / f"{b}.pt").unlink(),
    "twin missing": lambda f, a, b: (f / f"{b}.json").unlink(),
    "twin unreadable": lambda f, a, b: (f / f"{b}.json").write_text('{"config": '),
    "twin not an object": lambda f, a, b: (f / f"{b}.json").write_text("[1, 2]"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_every_kind_of_damage_is_set_aside_by_the_loader_and_said_so_by_the_command_line(record, damage):
    """Findings 1-3: what the command line says of an entry is what `load` does with it (one shared decision), and
    a damaged entry is never used, whatever was damaged."""
    f, a, b = record.folder, record.a, record.b
    assert trainings.next_run(f, b).action == trainings.USE  # before: a good entry
    DAMAGES[damage](f, a, b)
    before = _files(f)
    verdict = trainings.next_run(f, b)
    assert verdict.action == trainings.SET_ASIDE and verdict.why, verdict
    with pytest.warns(UserWarning, match=r"set aside .*; retraining"):
        assert trainings.load(b, folders=[f]) == (False, None)
    row = trainings.table(f).set_index("key").loc[b]
    assert row.next_run == str(verdict) and row.next_run.startswith("set aside (why: ")
    assert _files(f) == before  # looked at, never deleted nor changed
    found, result = trainings.load(a, folders=[f])  # the other entry is untouched and still used
    assert found and result["steps"] == _twin(f, a)["summary"]["steps"]


def test_the_verdict_of_every_entry_is_what_the_loader_does(record):
    """For each entry of a record with some damage, use <=> load() returns it; retrain <=> the run's key is another."""
    f, a, b = record.folder, record.a, record.b
    _flip(f / f"{b}.pt")
    for key in (a, b):
        verdict = trainings.next_run(f, key)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found, _ = trainings.load(key, folders=[f])
        assert found == (verdict.action == trainings.USE), (key, verdict)


def test_a_stale_entry_is_retrained_under_a_new_key_and_never_asked_for(record, monkeypatch):
    """'retrain (why: <unit>: changed)': the run's key for that training is another one, which the record does not
    hold; the stale entry itself is still whole (a run that did ask for it would use it)."""
    f, a = record.folder, record.a
    meta = _twin(f, a)
    now = json.loads(json.dumps(meta["code_of"]))
    now["units"]["train.py:fit"] = "another hash"  # as if fit had changed since
    monkeypatch.setattr(staleness, "check", lambda rec, tree=None: staleness.explain(rec, now))
    verdict = trainings.next_run(f, a)
    assert str(verdict) == "retrain (why: train.py:fit: changed)"
    run_key = cache.key_of(a.rsplit("-", 2)[0], meta["config"], staleness.code_id(now))  # what the run asks for
    assert run_key != a and trainings.load(run_key, folders=[f]) == (False, None)
    assert trainings.check(f, a)[0].action == trainings.USE


def test_an_entry_of_the_previous_rule_is_retrained_unless_proven():
    """A twin whose code_of is the rule before issue 51's (numerics and definitions) is not used: nothing proves the
    code it ran is the code now (issue 51's re-key carried what it could prove)."""
    key = _real_keys(1)[0]
    meta = _twin(REAL, key)
    if staleness.is_record(meta.get("code_of")):
        pytest.skip("the committed Pendulum entries are kept under the sound rule already")
    verdict = trainings.next_run(REAL, key)
    assert verdict.action == trainings.RETRAIN and verdict.why == trainings.PREVIOUS


def test_the_command_line_says_what_the_next_run_does_with_each_entry(record, capsys):
    f, a, b = record.folder, record.a, record.b
    reports = f.parent
    assert trainings.main(["--reports", str(reports)]) == 0
    out = capsys.readouterr().out
    assert "2 current (the next run uses them), 0 stale" in out and "0 damaged" in out
    assert "2 of them unsealed" in out  # kept before seals: their facts are descriptive
    _copy(f, a, f, as_key=b)  # finding 1: one training's files under another's key
    (f / "orphan-0000000000000000-00000000.pt").write_bytes(b"a .pt without its twin")
    assert trainings.main(["--reports", str(reports)]) == 1  # damaged entries: exit status 1
    out = capsys.readouterr().out
    assert "3 kept trainings" in out and "1 current" in out and "2 damaged (set aside" in out
    assert f"  {b}: set aside (why: its config and code do not hash to its key" in out
    assert "  orphan-0000000000000000-00000000: set aside (why: its twin orphan-" in out
    assert trainings.main(["--reports", str(reports), "--each"]) == 1
    out = capsys.readouterr().out
    assert "use (unsealed" in out and out.count("set aside (why:") >= 2


# ----------------------------------------------------------------------------- new entries are sealed

def _saved(folder: Path, made_of: dict, result=None, name: str = "sealed") -> str:
    """A new entry written by `trainings.save` (as `kept` writes one) -> its key."""
    config = {"seed": 0}
    code = staleness.code_id(made_of)
    key = cache.key_of(name, config, code)
    trainings.save(key, result if result is not None else {"steps": 3, "history": [{"loss": 0.5}]},
                   {"config": config, "code": code, "code_of": made_of, "facts": {"wall_seconds": 12.5}},
                   folder=folder)
    return key


def test_a_new_entry_is_sealed_and_an_edit_of_its_facts_is_detected(record, monkeypatch):
    """Finding 2: a twin's facts (wall time, device, memory) are no part of its key; a new twin's seal covers them, so
    an edit is flagged (a warning and a terminal line, and the command line's verdict) while its verified numbers
    are still used."""
    f = record.folder
    key = _saved(f, _twin(f, record.a)["code_of"])
    twin = _twin(f, key)
    assert twin[trainings.SEAL] == trainings.seal_of(twin)
    assert str(trainings.next_run(f, key)) == "use"
    echo = record.tmp / "echo.log"
    monkeypatch.setenv(terminal.ECHO, str(echo))
    for change in (lambda m: m["facts"].update(wall_seconds=1.0), lambda m: m.update(device="NVIDIA H200")):
        _edit(f, key, change)
        assert str(trainings.next_run(f, key)).startswith("use (its twin was edited after it was written")
        with pytest.warns(UserWarning, match="its twin was edited after it was written"):
            found, result = trainings.load(key, folders=[f])
        assert found and result["steps"] == 3
    assert echo.read_text().count(f"kept training {key}: used from {f}, but its twin was edited") == 2
    _edit(f, key, lambda m: m["summary"].update(steps=4))  # what the .pt holds: set aside, sealed or not
    assert trainings.next_run(f, key).action == trainings.SET_ASIDE


def test_an_entry_kept_without_its_weights_is_retrained_where_they_are_needed(record, monkeypatch):
    f = record.folder
    monkeypatch.setattr(trainings, "WEIGHTS_LIMIT", 0)
    key = _saved(f, _twin(f, record.a)["code_of"], result={"state_dict": {"w": torch.ones(3)}, "steps": 1})
    assert _twin(f, key)["dropped"] == ["state_dict"]
    verdict = trainings.check(f, key, require=("state_dict",))[0]
    assert str(verdict) == "retrain (why: kept without its state_dict, which this run needs)"
    assert trainings.load(key, require=("state_dict",), folders=[f]) == (False, None)
    assert trainings.load(key, folders=[f])[0]  # where weights are not needed: used
    _edit(f, key, lambda m: m.update(dropped=[]))  # the twin no longer says they were left out: a caller would crash
    assert trainings.check(f, key, require=("state_dict",))[0].action == trainings.SET_ASIDE


def test_every_committed_entry_passes_its_checks():
    """The committed record itself: every entry of reports/trainings/ (and quick/) verifies (none set aside)."""
    folders = [p for p in (REAL, REAL / "quick") if p.is_dir()]
    keys = [(folder, k) for folder in folders for k in trainings._stems(folder)]
    if not keys:
        pytest.skip("no committed record of trainings here")
    bad = {k: str(v) for folder, k in keys if (v := trainings.check(folder, k, lock=False)[0]).action != trainings.USE}
    assert not bad, bad


# ----------------------------------------------------------------------------- the terminal of `make reproduce`

def test_a_set_aside_entry_is_said_in_the_terminal_of_the_run(record, monkeypatch, capsys):
    """Finding 4: the kernel's warning stays in the executed notebook; a line also goes to $ROMAE_ECHO, which the
    runner prints as it comes (`romae.runner.notebooks._echoed`, what `make reproduce` shows)."""
    from romae.runner.notebooks import _echoed

    f, a, b = record.folder, record.a, record.b
    _copy(f, a, f, as_key=b)
    good = record.tmp / "other-record"
    good.mkdir()
    _copy(f.parent / "carried", b, good)  # the entry as the fixture carried it
    echo = record.tmp / "echo.log"
    monkeypatch.setenv(terminal.ECHO, str(echo))
    with _echoed(echo), pytest.warns(UserWarning):
        assert trainings.load(b, folders=[f]) == (False, None)
        assert trainings.load(b, folders=[f, good])[0]
    lines = [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip()]
    why = trainings.next_run(f, b).why
    assert lines == [f"kept training {b}: set aside in {f} ({why}); retraining",
                     f"kept training {b}: set aside in {f} ({why}); using {good / f'{b}.pt'}"]


# ----------------------------------------------------------------------------- what the run does then

def _ask(key: str, meta: dict, cache_dir: Path, computed: list):
    """What a run does when it asks for training `key`: `kept` with the name, config and code its twin records."""
    def compute():
        computed.append(key)
        return {"steps": 7, "history": []}

    return K.kept(key.rsplit("-", 2)[0], meta["config"], compute, cache_dir=cache_dir, roots=meta["code_of"]["roots"])


def test_a_set_aside_entry_is_retrained_and_written_under_its_key(record, monkeypatch):
    """Finding 5, in the open record: the run asks for B, sets aside A's files found under B's key, trains B and
    writes it under B's key (replacing what was set aside: git keeps it); A's own entry is untouched."""
    f, a, b = record.folder, record.a, record.b
    monkeypatch.setenv(trainings.ENV, str(f))
    meta_b, a_files = _twin(f, b), {n: v for n, v in _files(f).items() if n.startswith(a)}
    computed: list = []
    assert _ask(b, meta_b, record.tmp / "cache-1", computed)["steps"] == meta_b["summary"]["steps"]
    assert computed == []  # a good entry: used, not trained
    _copy(f, a, f, as_key=b)
    with pytest.warns(UserWarning, match="set aside"):
        assert _ask(b, meta_b, record.tmp / "cache-2", computed) == {"steps": 7, "history": []}
    assert computed == [b]
    assert str(trainings.next_run(f, b)) == "use" and _twin(f, b)["config"] == meta_b["config"]
    assert trainings.load(b, folders=[f]) == (True, {"steps": 7, "history": []})
    assert {n: v for n, v in _files(f).items() if n.startswith(a)} == a_files


def test_set_aside_files_of_the_repository_record_stay_while_the_run_writes_its_own(record, monkeypatch):
    """Finding 5, another record open: the damaged entry of the repository's record is left byte for byte as it was;
    the retrained one goes to the open record, under its key."""
    f, a, b = record.folder, record.a, record.b
    monkeypatch.setattr(trainings, "DEFAULT", f)
    opened = record.tmp / "open-record"
    monkeypatch.setenv(trainings.ENV, str(opened))
    meta_b = _twin(f, b)
    _flip(f / f"{b}.pt")
    before = _files(f)
    computed: list = []
    with pytest.warns(UserWarning, match=r"set aside .*corrupted"):
        _ask(b, meta_b, record.tmp / "cache", computed)
    assert computed == [b] and _files(f) == before
    assert trainings.next_run(opened, b).action == trainings.USE
    assert trainings.next_run(f, b).action == trainings.SET_ASIDE


def test_the_summary_names_set_aside_entries_apart_from_stale_ones(record):
    """SUMMARY.md's section on kept trainings says 'set aside' for a damaged entry, not 'stale (retrained when next
    run)' as if only its code had moved."""
    from romae.runner import pages

    reports = record.tmp / "reports"
    (reports / "SUMMARY.md").write_text("# summary\n")
    _edit(record.folder, record.a, lambda m: m["config"].update(seed=12345))  # no longer hashes to its key
    pages.add_trainings_section(reports)
    text = (reports / "SUMMARY.md").read_text()
    assert "**1 set aside**" in text and "stale" not in text.split("## Finished paper trainings kept", 1)[1].split(
        "wall / planned")[0]
