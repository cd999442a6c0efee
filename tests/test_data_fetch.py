"""Downloads as a stranger's `make data` makes them, without internet: a local HTTP server on 127.0.0.1
(Range requests, a connection cut short, corrupted bytes, a server that ignores Range) and file:// sources;
`make data NAMES=... MIRROR=...` end to end; the catalog's names, presence checks and messages."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from romae.data import catalog, files, physionet, uea

ROOT = Path(__file__).resolve().parents[1]
TS = """@problemName Toy
@timeStamps false
@univariate true
@classLabel true a b
@data
1,2,3,4:a
4,3,2,1:b
1,1,2,2:a
2,2,1,1:b
"""


class Server:
    """Files served at http://127.0.0.1:<port>/<path>; modes per path: "truncate" (the next response stops
    halfway), "corrupt" (other bytes of the same length), "norange" (Range headers ignored)."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.mode: dict[str, str] = {}
        self.log: list[tuple[str, str | None]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                path = urlsplit(self.path).path
                rng = self.headers.get("Range")
                server.log.append((path, rng))
                if path not in server.files:
                    self.send_error(404)
                    return
                data = server.files[path]
                mode = server.mode.get(path, "")
                if mode == "corrupt":
                    data = bytes(b ^ 0xFF for b in data)
                start = int(rng.split("=")[1].split("-")[0]) if rng and mode != "norange" else 0
                if start >= len(data) and rng and mode != "norange":
                    self.send_error(416)
                    return
                body = data[start:]
                self.send_response(206 if start else 200)
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if mode == "truncate":
                    server.mode.pop(path)
                    self.wfile.write(body[: len(body) // 2])
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def ranges(self, path: str) -> list:
        return [r for p, r in self.log if p == path]


@pytest.fixture
def server():
    s = Server()
    yield s
    s.httpd.shutdown()


def _payload(n: int = 300_000) -> bytes:
    return bytes((i * 7919) % 251 for i in range(n))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------------------- files.download_url

def test_a_good_download_is_verified_and_leaves_nothing_else(server, tmp_path):
    data = _payload()
    server.files["/a.bin"] = data
    dest = files.download_url(f"{server.url}/a.bin", tmp_path / "a.bin", sha256=_sha(data), progress=False)
    assert dest.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]  # no .part, no lock file


def test_a_truncated_download_is_kept_and_resumed_with_a_range_request(server, tmp_path):
    data = _payload()
    server.files["/a.bin"], server.mode["/a.bin"] = data, "truncate"
    with pytest.raises(files.IncompleteDownload, match="run the same command again to resume"):
        files.download_url(f"{server.url}/a.bin", tmp_path / "a.bin", sha256=_sha(data), progress=False)
    part = tmp_path / "a.bin.part"
    assert not (tmp_path / "a.bin").exists() and part.stat().st_size == len(data) // 2
    files.download_url(f"{server.url}/a.bin", tmp_path / "a.bin", sha256=_sha(data), progress=False)
    assert (tmp_path / "a.bin").read_bytes() == data and not part.exists()
    assert server.ranges("/a.bin") == [None, f"bytes={len(data) // 2}-"]  # the second request resumed


def test_a_server_that_ignores_range_restarts_the_download_cleanly(server, tmp_path):
    data = _payload()
    server.files["/a.bin"], server.mode["/a.bin"] = data, "norange"
    (tmp_path / "a.bin.part").write_bytes(b"left over from an earlier try")
    files.download_url(f"{server.url}/a.bin", tmp_path / "a.bin", sha256=_sha(data), progress=False)
    assert (tmp_path / "a.bin").read_bytes() == data  # the old part was replaced, not appended to


def test_a_corrupted_download_is_removed_and_the_next_try_starts_afresh(server, tmp_path):
    data = _payload()
    server.files["/a.bin"], server.mode["/a.bin"] = data, "corrupt"
    with pytest.raises(ValueError, match="corrupt: expected SHA-256"):
        files.download_url(f"{server.url}/a.bin", tmp_path / "a.bin", sha256=_sha(data), progress=False)
    assert list(tmp_path.iterdir()) == []  # neither the file nor its part
    server.mode.clear()
    files.download_url(f"{server.url}/a.bin", tmp_path / "a.bin", sha256=_sha(data), progress=False)
    assert (tmp_path / "a.bin").read_bytes() == data and server.ranges("/a.bin") == [None, None]


def test_file_urls_and_md5(tmp_path):
    data = _payload(10_000)
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    out = files.download_url(src.as_uri(), tmp_path / "out" / "x.bin", md5=hashlib.md5(data).hexdigest(), progress=False)
    assert out.read_bytes() == data
    with pytest.raises(ValueError, match="expected MD5"):
        files.download_url(src.as_uri(), tmp_path / "out" / "y.bin", md5="0" * 32, progress=False)


def test_a_mirror_serves_the_official_paths(tmp_path):
    (tmp_path / "m" / "example.org" / "a").mkdir(parents=True)
    (tmp_path / "m" / "example.org" / "a" / "f.txt").write_text("hi")
    with files.mirror((tmp_path / "m").as_uri()):
        assert files.mirrored("https://example.org/a/f.txt?download") == f"{(tmp_path / 'm').as_uri()}/example.org/a/f.txt"
        files.download_url("https://example.org/a/f.txt?download", tmp_path / "f.txt", progress=False)
    assert (tmp_path / "f.txt").read_text() == "hi"
    assert files.mirrored("https://example.org/a") == "https://example.org/a"  # outside the block: unchanged


# ----------------------------------------------------------------------------- the catalog

def test_catalog_names_and_messages(tmp_path):
    assert [d.name for d in catalog.expand("uea")] == [f"uea:{n}" for n in uea.TABLE6]
    assert [d.name for d in catalog.expand("physionet2012,uea:Epilepsy librispeech")] == [
        "physionet2012", "uea:Epilepsy", "librispeech:train-clean-100"]
    assert [d.name for d in catalog.expand("")] == [d.name for d in catalog.expand(catalog.ALL)]
    with pytest.raises(ValueError, match="unknown data set 'physionet'"):
        catalog.get("physionet")
    with pytest.raises(ValueError, match="bad UEA data set name"):
        catalog.get("uea:../etc")
    need = catalog.Need(("esc50-subset", "esc50"), "ESC-50 clips")
    assert not need.satisfied(tmp_path) and need.fetchable() == ["esc50"]
    assert "make data NAMES=esc50" in need.message(tmp_path) and str(tmp_path) in need.message(tmp_path)
    with pytest.raises(files.DataMissing, match="make data NAMES=esc50") as e:
        catalog.require([need], tmp_path)
    assert e.value.names == ("esc50",)
    demo = catalog.Need(("elasticc-sample", "elasticc"), "SNANA light curves", optional=True)
    assert "`make data NAMES=elasticc-sample` (or another of: elasticc)" in demo.message(tmp_path)  # not tens of GB
    assert catalog.missing([need, demo], tmp_path) == [need] and catalog.missing([need, demo], tmp_path, True) == [demo]


def test_fetch_needs_fetches_a_missing_dataset_from_a_mirror(tmp_path):
    mirror = tmp_path / "mirror"
    zip_path = mirror / _served(uea.URL.format(name="Toy")).lstrip("/")
    zip_path.parent.mkdir(parents=True)
    zip_path.write_bytes(_toy_zip())
    need = catalog.Need(("uea:Toy",), "UEA Toy")
    with files.mirror(mirror.as_uri()):
        assert catalog.fetch_needs([need], tmp_path / "data", progress=False, log=lambda *a: None) == []
    assert need.satisfied(tmp_path / "data") and not (tmp_path / "data" / "uea" / "Toy.zip").exists()
    bad = mirror / _served(uea.URL.format(name="Other")).lstrip("/")
    bad.write_bytes(b"not a zip")  # a bad archive: removed, with a message, so the next try downloads afresh
    with files.mirror(mirror.as_uri()), pytest.raises(RuntimeError, match="not a usable zip"):
        catalog.fetch(["uea:Other"], tmp_path / "data", progress=False, log=lambda *a: None)
    assert not (tmp_path / "data" / "uea" / "Other.zip").exists()


def test_the_default_data_root_is_a_git_ignored_folder_of_the_clone(monkeypatch):
    monkeypatch.delenv("ROMAE_DATA", raising=False)
    assert files.data_root() == ROOT / "data" == files.DEFAULT_ROOT
    assert "default" in files.describe_root()
    ignored = subprocess.run(["git", "check-ignore", "-q", "data/uea/x.ts"], cwd=ROOT).returncode
    assert ignored == 0, "data/ must be git-ignored"
    monkeypatch.setenv("ROMAE_DATA", "/some/where")
    assert files.data_root() == Path("/some/where") and files.data_root("x") == Path("x")


# ----------------------------------------------------------------------------- make data, end to end

def _served(url: str) -> str:
    """Where a mirror serves an official URL: /<host>/<path>."""
    parts = urlsplit(url)
    return f"/{parts.netloc}{parts.path}"


def _toy_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("Toy/Toy_TRAIN.ts", TS)
        z.writestr("Toy/Toy_TEST.ts", TS)
    return buf.getvalue()


def _mirror_tree(server: Server) -> dict:
    """The official files, served at <server>/<host>/<path>: a UEA zip and PhysioNet's two archives with
    PhysioNet's own SHA256SUMS.txt."""
    server.files[_served(uea.URL.format(name="Toy"))] = _toy_zip()
    sums = []
    for s in ("a", "b"):
        tb = io.BytesIO()
        with tarfile.open(fileobj=tb, mode="w:gz") as t:
            rec = f"Time,Parameter,Value\n00:00,RecordID,{132539 + ord(s)}\n00:00,Age,54\n".encode()
            info = tarfile.TarInfo(f"set-{s}/{132539 + ord(s)}.txt")
            info.size = len(rec)
            t.addfile(info, io.BytesIO(rec))
        server.files[_served(physionet.URL.format(name=f"set-{s}.tar.gz"))] = tb.getvalue()
        sums.append(f"{_sha(tb.getvalue())}  set-{s}.tar.gz")
    server.files[_served(physionet.SUMS_URL)] = ("\n".join(sums) + "\n").encode()
    return {"toy": _served(uea.URL.format(name="Toy")), "set-b": _served(physionet.URL.format(name="set-b.tar.gz"))}


def _make_data(names: str, root: Path, mirror: str) -> subprocess.CompletedProcess:
    if not (ROOT / ".venv" / "bin" / "python").exists() or shutil.which("make") is None:
        pytest.skip("needs make and the project's .venv (make venv)")
    env = {k: v for k, v in os.environ.items() if k != "ROMAE_DATA"}
    return subprocess.run(["make", "-s", "data", f"NAMES={names}", f"MIRROR={mirror}", f"ROMAE_DATA={root}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_make_data_end_to_end_good_truncated_and_corrupted(server, tmp_path):
    paths = _mirror_tree(server)
    root = tmp_path / "data"
    server.mode[paths["toy"]] = "truncate"  # the UEA zip breaks off halfway; PhysioNet's archives are fine
    first = _make_data("uea:Toy,physionet2012", root, server.url)
    out = first.stdout + first.stderr
    assert first.returncode != 0 and "run the same command again to resume" in out, out
    assert (root / "physionet2012" / "set-a.tar.gz").is_file() and (root / "physionet2012" / "set-b.tar.gz").is_file()
    assert str(root) in out  # says where the data went
    assert not (root / "uea" / "Toy").exists() and (root / "uea" / "Toy.zip.part").is_file()
    second = _make_data("uea:Toy,physionet2012", root, server.url)
    assert second.returncode == 0, second.stdout + second.stderr
    assert server.ranges(paths["toy"])[-1] is not None  # resumed where the first try stopped
    assert uea.load("Toy", root)["train"].labels.tolist() == ["a", "b", "a", "b"]
    assert "Toy_TRAIN.ts" in (root / "uea" / "Toy" / "SHA256SUMS").read_text()  # recorded on first download
    assert "physionet2012: already here" in second.stdout
    physionet.archive("a", root)  # verified against the SHA256SUMS recorded from PhysioNet's list

    fresh = tmp_path / "fresh"
    server.mode[paths["set-b"]] = "corrupt"  # bytes that do not match PhysioNet's published SHA-256
    bad = _make_data("physionet2012", fresh, server.url)
    assert bad.returncode != 0 and "corrupt" in bad.stdout + bad.stderr
    assert not (fresh / "physionet2012" / "set-b.tar.gz").exists()
    assert not list((fresh / "physionet2012").glob("*.part"))
    server.mode.clear()
    assert _make_data("physionet2012", fresh, server.url).returncode == 0
    assert catalog.get("physionet2012").present(fresh)


def test_status_lists_what_is_here(tmp_path, capsys):
    from romae.data.__main__ import main

    (tmp_path / "uea" / "Toy").mkdir(parents=True)
    for split in ("TRAIN", "TEST"):
        (tmp_path / "uea" / "Toy" / f"Toy_{split}.ts").write_text(TS)
    assert main(["status", "uea:Toy,physionet2012", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "here    uea:Toy" in out and "missing physionet2012" in out
