"""A file that fails its checksum is never "here": presence checks (what `make data` calls "already here" and
what skips a notebook) do not count it, a fetch or a load moves it aside (`<name>.corrupt`) with a message
naming it, both checksums and the command, and `make data` then downloads it afresh. Known checksums always
win over trust on first use: a mirror's bytes that differ from a known checksum are refused, even with no
checksum list on the mirror, and nothing is recorded in SHA256SUMS. No internet: mirrors are file:// folders."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import time
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from romae.data import audioset, catalog, files, librispeech, physionet, tiny_imagenet, uea

TS = "@problemName Toy\n@univariate true\n@classLabel true a b\n@data\n1,2,3,4:a\n4,3,2,1:b\n1,1,2,2:a\n2,2,1,1:b\n"
BAD = TS.replace("1,2,3,4:a", "1,2,3,5:a")  # one digit flipped: same size
QUIET = dict(progress=False, log=lambda *a: None)


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _serve(mirror: Path, url: str, data: bytes) -> Path:
    """Put `data` where a file:// mirror serves the official `url`: <mirror>/<host>/<path>."""
    parts = urlsplit(url)
    path = mirror / parts.netloc / parts.path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _zip(train: str = TS, test: str = TS) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("Toy/Toy_TRAIN.ts", train)
        z.writestr("Toy/Toy_TEST.ts", test)
    return buf.getvalue()


def _age(path: Path) -> None:
    """Date a file an hour back, as a file fetched earlier is (a digest cached for it is then trusted)."""
    t = time.time() - 3600
    os.utime(path, (t, t))


@pytest.fixture
def toy(tmp_path, monkeypatch, request):
    """(root, mirror) with uea:Toy fetched from a file:// mirror; its checksums known (KNOWN_SHA256) or, with
    the parameter "recorded", only recorded on first use (SHA256SUMS)."""
    if request.param == "known":
        for split in ("TRAIN", "TEST"):
            monkeypatch.setitem(uea.KNOWN_SHA256, f"Toy/Toy_{split}.ts", _sha(TS))
    mirror, root = tmp_path / "mirror", tmp_path / "data"
    _serve(mirror, uea.URL.format(name="Toy"), _zip())
    with files.mirror(mirror.as_uri()):
        catalog.fetch(["uea:Toy"], root, **QUIET)
    assert catalog.get("uea:Toy").present(root)
    for split in ("TRAIN", "TEST"):
        _age(root / "uea" / "Toy" / f"Toy_{split}.ts")
    assert catalog.get("uea:Toy").present(root)  # a digest cached for the aged files from here on
    return root, mirror


def _corrupt(path: Path, text: str = BAD) -> None:
    """Change a file's bytes in place, keeping its size (as a bad disk or a stray edit would)."""
    path.chmod(0o644)
    path.write_text(text)


# ----------------------------------------------------------------------------- UEA: presence, quarantine, refetch

@pytest.mark.parametrize("toy", ["known", "recorded"], indirect=True)
def test_a_corrupted_uea_file_is_not_present_and_make_data_fetches_it_afresh(toy):
    root, mirror = toy
    train = root / "uea" / "Toy" / "Toy_TRAIN.ts"
    _corrupt(train)
    need = catalog.Need(("uea:Toy",), "UEA Toy")
    assert not catalog.get("uea:Toy").present(root)
    assert catalog.status(["uea:Toy"], root)[0]["here"] is False
    assert catalog.missing([need], root) == [need] and catalog.unavailable("uea:Toy", root=root)
    lines = []
    with files.mirror(mirror.as_uri()), pytest.warns(UserWarning) as warned:
        done = catalog.fetch(["uea:Toy"], root, progress=False, log=lines.append)
    assert "already here" not in done["uea:Toy"] and not any("already here" in line for line in lines)
    message = " ".join(str(w.message) for w in warned)
    assert str(train) in message and f"expected SHA-256 {_sha(TS)}" in message and f"got {_sha(BAD)}" in message
    assert "make data NAMES=uea:Toy" in message and f"{train}.corrupt" in message
    assert train.read_text() == TS and Path(f"{train}.corrupt").read_text() == BAD  # fresh copy; the bad one kept aside
    assert need.satisfied(root) and uea.load("Toy", root)["train"].labels.tolist() == ["a", "b", "a", "b"]
    assert files.read_sums(root / "uea" / "Toy" / "SHA256SUMS")["Toy_TRAIN.ts"] == _sha(TS)


@pytest.mark.parametrize("toy", ["known", "recorded"], indirect=True)
def test_loading_a_corrupted_uea_file_quarantines_it_and_says_how_to_fetch_it_again(toy):
    root, mirror = toy
    test = root / "uea" / "Toy" / "Toy_TEST.ts"
    _corrupt(test)
    with pytest.raises(files.ChecksumMismatch) as err:
        uea.load("Toy", root)
    message = str(err.value)
    assert isinstance(err.value, ValueError) and str(test) in message
    assert f"expected SHA-256 {_sha(TS)}" in message and f"got {_sha(BAD)}" in message
    assert "make data NAMES=uea:Toy" in message and err.value.names == ("uea:Toy",)
    assert not test.exists() and Path(f"{test}.corrupt").read_text() == BAD
    assert not catalog.get("uea:Toy").present(root)
    with files.mirror(mirror.as_uri()):
        done = catalog.fetch(["uea:Toy"], root, **QUIET)
    assert "already here" not in done["uea:Toy"] and test.read_text() == TS and uea.load("Toy", root)


def test_load_with_download_replaces_a_corrupted_file(tmp_path, monkeypatch):
    monkeypatch.setitem(uea.KNOWN_SHA256, "Toy/Toy_TRAIN.ts", _sha(TS))
    folder = tmp_path / "data" / "uea" / "Toy"
    folder.mkdir(parents=True)
    (folder / "Toy_TRAIN.ts").write_text(BAD)
    (folder / "Toy_TEST.ts").write_text(TS)
    _serve(tmp_path / "mirror", uea.URL.format(name="Toy"), _zip())
    with files.mirror((tmp_path / "mirror").as_uri()), pytest.warns(UserWarning, match="Toy_TRAIN.ts"):
        d = uea.load("Toy", tmp_path / "data", download=True)
    assert len(d["train"]) == 4 and (folder / "Toy_TRAIN.ts").read_text() == TS
    assert (folder / "Toy_TRAIN.ts.corrupt").read_text() == BAD


# ----------------------------------------------------------------------------- known checksums win

def test_a_mirror_serving_other_bytes_than_the_known_checksum_is_refused_and_nothing_is_recorded(tmp_path, monkeypatch):
    for split in ("TRAIN", "TEST"):
        monkeypatch.setitem(uea.KNOWN_SHA256, f"Toy/Toy_{split}.ts", _sha(TS))
    mirror, root = tmp_path / "mirror", tmp_path / "data"
    _serve(mirror, uea.URL.format(name="Toy"), _zip(train=BAD))  # no checksum list on the mirror
    with files.mirror(mirror.as_uri()), pytest.raises(RuntimeError) as err:
        catalog.fetch(["uea:Toy"], root, **QUIET)
    assert all(s in str(err.value) for s in ("Toy_TRAIN.ts", _sha(BAD), _sha(TS))), err.value
    folder = root / "uea" / "Toy"
    assert not (folder / "Toy_TRAIN.ts").exists() and not (folder / "SHA256SUMS").exists()
    assert not (root / "uea" / "Toy.zip").exists()  # the next try downloads afresh
    assert not catalog.get("uea:Toy").present(root)


def test_a_recorded_line_that_contradicts_a_known_checksum_neither_passes_a_bad_file_nor_fails_a_good_one(
        tmp_path, monkeypatch):
    monkeypatch.setitem(uea.KNOWN_SHA256, "Toy/Toy_TRAIN.ts", _sha(TS))
    folder = tmp_path / "uea" / "Toy"
    folder.mkdir(parents=True)
    (folder / "Toy_TRAIN.ts").write_text(BAD)
    (folder / "Toy_TEST.ts").write_text(TS)
    (folder / "SHA256SUMS").write_text(f"{_sha(BAD)}  Toy_TRAIN.ts\n{_sha(TS)}  Toy_TEST.ts\n")  # trusted, wrongly
    assert not uea.present("Toy", tmp_path)
    with pytest.raises(files.ChecksumMismatch, match=f"expected SHA-256 {_sha(TS)}"):
        uea.load("Toy", tmp_path)
    (folder / "Toy_TRAIN.ts").write_text(TS)  # the good file: the known checksum decides, not the stale line
    assert uea.present("Toy", tmp_path) and len(uea.load("Toy", tmp_path)["train"]) == 4


def test_physionet_checks_a_mirror_without_a_list_against_the_published_one(tmp_path, monkeypatch):
    good = {s: _tar(s) for s in physionet.SETS}
    published = tmp_path / "physionet" / "SHA256SUMS.txt"  # PhysioNet's own list, where the mirror has none
    published.parent.mkdir()
    published.write_text("".join(f"{_sha(data)}  set-{s}.tar.gz\n" for s, data in good.items()))
    monkeypatch.setattr(physionet, "SUMS_URL", published.as_uri())
    mirror, root = tmp_path / "mirror", tmp_path / "data"
    _serve(mirror, physionet.URL.format(name="set-a.tar.gz"), good["a"])
    _serve(mirror, physionet.URL.format(name="set-b.tar.gz"), good["a"])  # the wrong file under set-b's name
    with files.mirror(mirror.as_uri()), pytest.raises(RuntimeError, match="set-b.tar.gz.*corrupt"):
        catalog.fetch(["physionet2012"], root, **QUIET)
    folder = physionet.folder(root)
    assert not (folder / "set-b.tar.gz").exists() and "set-b.tar.gz" not in files.read_sums(folder / "SHA256SUMS")
    assert not physionet.present(root)
    _serve(mirror, physionet.URL.format(name="set-b.tar.gz"), good["b"])
    with files.mirror(mirror.as_uri()):
        catalog.fetch(["physionet2012"], root, **QUIET)
    assert physionet.present(root) and physionet.archive("b", root)

    _corrupt_bytes(folder / "set-a.tar.gz")  # later damaged: not here, moved aside and fetched afresh
    assert not physionet.present(root)
    with files.mirror(mirror.as_uri()), pytest.warns(UserWarning, match="set-a.tar.gz.*make data NAMES=physionet2012"):
        done = catalog.fetch(["physionet2012"], root, **QUIET)
    assert "set-a.tar.gz (already here)" not in done["physionet2012"] and "set-b.tar.gz (already here)" in done["physionet2012"]
    assert (folder / "set-a.tar.gz").read_bytes() == good["a"]
    assert (folder / "set-a.tar.gz.corrupt").is_file()


def _tar(s: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        rec = f"Time,Parameter,Value\n00:00,RecordID,{140000 + ord(s)}\n00:00,Age,54\n".encode()
        info = tarfile.TarInfo(f"set-{s}/{140000 + ord(s)}.txt")
        info.size = len(rec)
        t.addfile(info, io.BytesIO(rec))
    return buf.getvalue()


def _corrupt_bytes(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


# ----------------------------------------------------------------------------- the other loaders

def test_audioset_lists_that_fail_their_known_checksum_are_not_here_and_are_fetched_afresh(tmp_path, monkeypatch):
    lists = {"balanced_train_segments.csv": b"# segments\n", "class_labels_indices.csv": b"index,mid,display_name\n"}
    monkeypatch.setattr(audioset, "KNOWN_SHA256", {name: _sha(data) for name, data in lists.items()})
    mirror, root = tmp_path / "mirror", tmp_path / "data"
    for name in lists:
        _serve(mirror, audioset.META_URL.format(name=name), b"other bytes")
    with files.mirror(mirror.as_uri()), pytest.raises(RuntimeError, match="corrupt"):
        catalog.fetch(["audioset-meta"], root, **QUIET)  # refused: the known checksum, whatever the mirror serves
    meta = root / "audioset_meta"
    assert not any(meta.glob("*.csv")) and not (meta / "SHA256SUMS").exists()
    for name, data in lists.items():
        _serve(mirror, audioset.META_URL.format(name=name), data)
    (meta / "class_labels_indices.csv").write_bytes(b"a stale copy\n")  # there, but not the known file
    assert not audioset.meta_present(root)
    with files.mirror(mirror.as_uri()), pytest.warns(UserWarning, match="class_labels_indices.csv"):
        done = catalog.fetch(["audioset-meta"], root, **QUIET)
    assert "already here" not in done["audioset-meta"] and audioset.meta_present(root)
    assert (meta / "class_labels_indices.csv.corrupt").read_bytes() == b"a stale copy\n"


def test_a_corrupted_tiny_imagenet_archive_is_not_here_and_is_quarantined_on_load(tmp_path, monkeypatch):
    folder = tiny_imagenet.folder(tmp_path)
    folder.mkdir(parents=True)
    archive = folder / tiny_imagenet.OFFICIAL
    archive.write_bytes(b"not the official archive")
    assert not catalog.get("tiny_imagenet").present(tmp_path)
    with pytest.raises(files.ChecksumMismatch, match=f"expected MD5 {tiny_imagenet.OFFICIAL_MD5}.*make data NAMES=tiny_imagenet"):
        tiny_imagenet.load("train", root=tmp_path, progress=False)
    assert not archive.exists() and Path(f"{archive}.corrupt").is_file()


def test_a_file_found_by_globbing_that_was_moved_aside_stops_the_load_instead_of_vanishing(tmp_path):
    split = librispeech.folder(tmp_path) / "LibriSpeech" / "test-clean" / "1" / "2"
    split.mkdir(parents=True)
    for name in ("1-2-0000.flac", "1-2-0001.flac"):
        (split / name).write_bytes(b"audio " + name.encode())
    rel = "LibriSpeech/test-clean/1/2/1-2-0000.flac"
    (librispeech.folder(tmp_path) / "SHA256SUMS").write_text(f"{'0' * 64}  {rel}\n")
    assert librispeech.present("test-clean", tmp_path)
    with pytest.raises(files.ChecksumMismatch, match="1-2-0000.flac.*make data NAMES=librispeech:test-clean"):
        librispeech.load("test-clean", tmp_path, progress=False)
    assert (split / "1-2-0000.flac.corrupt").is_file() and not librispeech.present("test-clean", tmp_path)
    with pytest.raises(files.ChecksumMismatch, match="moved aside.*1-2-0000.flac"):  # not one utterance fewer
        librispeech.load("test-clean", tmp_path, progress=False)


def test_an_archive_left_over_is_checked_before_it_is_unpacked(tmp_path):
    good, stale = _tar("a"), _tar("b")
    served = tmp_path / "served.tar.gz"
    served.write_bytes(good)
    archive = tmp_path / "data" / "set.tar.gz"
    archive.parent.mkdir()
    archive.write_bytes(stale)  # a whole archive from an earlier try, other bytes than the known ones
    unpacked = []
    with pytest.warns(UserWarning, match="set.tar.gz"):
        files.fetch_archive(served.as_uri(), archive, lambda a: unpacked.append(a.read_bytes()), sha256=_sha(good),
                            record=False, progress=False)
    assert unpacked == [good]


# ----------------------------------------------------------------------------- files: the presence check's cost

def test_intact_hashes_an_unchanged_file_once_and_a_changed_one_again(tmp_path, monkeypatch):
    path = tmp_path / "big.bin"
    path.write_bytes(b"x" * 1000)
    _age(path)
    calls = []
    real = files.digest
    monkeypatch.setattr(files, "digest", lambda p, a="sha256": calls.append(p) or real(p, a))
    monkeypatch.setattr(files, "_DIGESTS", {})  # the in-process memory forgotten: the json beside the data serves
    assert files.intact(path, _sha(b"x" * 1000)) and len(calls) == 1
    monkeypatch.setattr(files, "_DIGESTS", {})
    assert files.intact(path, _sha(b"x" * 1000)) and len(calls) == 1  # (size, mtime) unchanged: not hashed again
    assert (tmp_path / files.VERIFIED).is_file()
    path.write_bytes(b"y" * 1000)  # same size, new mtime
    assert not files.intact(path, _sha(b"x" * 1000)) and len(calls) == 2
    assert not files.intact(tmp_path / "absent.bin", None) and files.intact(path, None)


def test_a_read_only_folder_is_left_as_it_is(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "a.txt"
    path.write_text("A")
    _age(path)
    folder.chmod(0o555)  # a shared, read-only data folder (even for root: its mode says so)
    try:
        assert files.intact(path, _sha("A")) and not (folder / files.VERIFIED).exists()
        with pytest.raises(files.ChecksumMismatch, match="could not move it aside"):
            files.check_sha256(path, "0" * 64)
        assert path.read_text() == "A" and sorted(p.name for p in folder.iterdir()) == ["a.txt"]
    finally:
        folder.chmod(0o755)
