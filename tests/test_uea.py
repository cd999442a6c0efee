"""The UEA `.ts` reader/loader (romae.data.uea) and the shared file helpers (romae.data.files)."""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from romae.data import files, uea

nan = np.nan
CLASSES = ["Standing", "Running", "Walking", "Badminton"]


@pytest.fixture
def real_root() -> Path:
    """$ROMAE_DATA holding uea/BasicMotions (read-only: never written to)."""
    from romae.data import catalog

    if why := catalog.unavailable("uea:BasicMotions"):
        pytest.skip(why)
    return files.data_root()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def read_arff(path: Path) -> tuple[list[np.ndarray], list[str]]:
    """Tiny reader for the UEA multivariate ARFF layout (scipy is not a dependency).

    After @data each line is 'ch1v1,ch1v2,...\\nch2v1,...',Label: a quoted relational block whose
    rows (separated by a literal backslash-n) are the channels.
    """
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().lower() == "@data") + 1
    series, labels = [], []
    for line in lines[start:]:
        if not line.strip():
            continue
        block, label = line.rsplit(",", 1)
        assert block[0] == block[-1] == "'"
        rows = [np.array(r.split(","), dtype=float) for r in block[1:-1].split("\\n")]
        series.append(np.stack(rows, axis=1))  # channels-first in the file -> [T, C]
        labels.append(label.strip())
    return series, labels


# ----------------------------------------------------------------------------- real data: BasicMotions

def test_basicmotions_shapes_and_classes(real_root):
    d = uea.load("BasicMotions", real_root)
    assert d["name"] == "BasicMotions"
    assert d["classes"] == CLASSES
    for split in ("train", "test"):
        data = d[split]
        assert len(data.series) == 40 and data.times is None
        assert all(x.shape == (100, 6) and x.dtype == np.float64 for x in data.series)
        assert data.n_channels == 6 and data.equal_length and data.problem_name == "BasicMotions"
        assert data.class_names == CLASSES
        names, counts = np.unique(data.labels, return_counts=True)
        assert sorted(names.tolist()) == sorted(CLASSES) and counts.tolist() == [10] * 4
        assert not any(np.isnan(x).any() for x in data.series)


@pytest.mark.parametrize("split", ["TRAIN", "TEST"])
def test_basicmotions_equals_arff(real_root, split):
    d = uea.load("BasicMotions", real_root)[split.lower()]
    ref_series, ref_labels = read_arff(real_root / "uea" / "BasicMotions" / f"BasicMotions_{split}.arff")
    assert len(ref_series) == 40
    assert d.labels.tolist() == ref_labels
    diff = max(np.abs(a - b).max() for a, b in zip(d.series, ref_series, strict=True))
    assert diff == 0.0
    # first value of the first training case, as written in the file
    if split == "TRAIN":
        assert d.series[0][0, 0] == 0.079106 and d.series[0][0, 1] == 0.394032


def test_available_real(real_root):
    assert "BasicMotions" in uea.available(real_root)
    assert "BasicMotions" in uea.TABLE6 and len(uea.TABLE6) == 5


# ----------------------------------------------------------------------------- synthetic .ts files

def test_unequal_lengths_and_missing(tmp_path):
    p = write(tmp_path / "Uneq.ts", """# a comment
@problemName Uneq
@timeStamps false
@missing true
@univariate false
@dimensions 2
@equalLength false
@classLabel true a b
@data
1,2,?,4:5,6,7,8:a
1,?:3,NaN:b
1,2,3:4,5:a
""")
    d = uea.read_ts(p)
    assert [x.shape for x in d.series] == [(4, 2), (2, 2), (3, 2)]
    np.testing.assert_array_equal(d.series[0], [[1, 5], [2, 6], [nan, 7], [4, 8]])
    np.testing.assert_array_equal(d.series[1], [[1, 3], [nan, nan]])
    # dimensions of unequal length within one case: the shorter one is NaN-padded at the end
    np.testing.assert_array_equal(d.series[2], [[1, 4], [2, 5], [3, nan]])
    assert d.labels.tolist() == ["a", "b", "a"] and d.class_names == ["a", "b"]
    assert not d.equal_length and d.n_channels == 2 and d.times is None and d.problem_name == "Uneq"


def test_univariate_mixed_case_headers_and_comments(tmp_path):
    p = write(tmp_path / "Uni.ts", """#comment one
# comment two

@PROBLEMNAME Uni
@TimeStamps FALSE
@Univariate True
@EqualLength true
@SeriesLength 3
@ClassLabel TRUE 1 2
@DATA
0.5,1.5,2.5:1
# a comment among the cases

-1,-2,3e2:2
""")
    d = uea.read_ts(p)
    assert d.n_channels == 1 and d.equal_length and d.problem_name == "Uni"
    np.testing.assert_array_equal(d.series[0], [[0.5], [1.5], [2.5]])
    np.testing.assert_array_equal(d.series[1], [[-1], [-2], [300]])
    assert d.labels.tolist() == ["1", "2"] and d.class_names == ["1", "2"]


def test_timestamps_union_alignment(tmp_path):
    p = write(tmp_path / "Times.ts", """@problemName Times
@timeStamps true
@missing true
@univariate false
@dimensions 2
@equalLength false
@classLabel true x y
@data
(0,1.5),(2,3.0):(0,0.1),(1,0.2):x
(1.5,?),(0.5,2):(3,4):y
""")
    d = uea.read_ts(p)
    np.testing.assert_array_equal(d.times[0], [0, 1, 2])
    np.testing.assert_array_equal(d.series[0], [[1.5, 0.1], [nan, 0.2], [3.0, nan]])
    np.testing.assert_array_equal(d.times[1], [0.5, 1.5, 3])  # pairs sorted by time
    np.testing.assert_array_equal(d.series[1], [[2, nan], [nan, nan], [nan, 4]])
    assert d.labels.tolist() == ["x", "y"] and d.times[0].dtype == np.float64


def test_regression_targets(tmp_path):
    p = write(tmp_path / "Reg.ts", """@problemName Reg
@timeStamps false
@univariate false
@dimensions 2
@equalLength true
@seriesLength 2
@classLabel false
@targetLabel true
@data
1,2:3,4:0.5
5,6:7,8:-1.25e1
""")
    d = uea.read_ts(p)
    assert d.labels.dtype == np.float64 and d.labels.tolist() == [0.5, -12.5]
    assert d.class_names is None
    np.testing.assert_array_equal(d.series[1], [[5, 7], [6, 8]])


def test_no_labels(tmp_path):
    d = uea.read_ts(write(tmp_path / "NoLab.ts", "@classLabel false\n@data\n1,2:3,4\n"))
    assert d.labels is None and d.n_channels == 2
    np.testing.assert_array_equal(d.series[0], [[1, 3], [2, 4]])


# ----------------------------------------------------------------------------- errors

HEADER = "@problemName Bad\n@dimensions 2\n@equalLength false\n@classLabel true a b\n@data\n"  # 5 lines


@pytest.mark.parametrize("case, message", [
    ("1,2:3,4:5,6:a", "line 7: case has 3 dimensions, expected 2"),
    ("1,2:3,4:c", "line 7: class label 'c' is not declared in @classLabel (a, b)"),
    ("1,x,3:3,4:a", "line 7: dimension 1: value 'x' is not a number"),
    ("1,2,3:3,,4:b", "line 7: dimension 2: value '' is not a number"),
])
def test_bad_case(tmp_path, case, message):
    p = write(tmp_path / "bad.ts", HEADER + "1,2:3,4:a\n" + case + "\n")
    with pytest.raises(ValueError) as err:
        uea.read_ts(p)
    assert str(err.value) == f"bad.ts {message}"


def test_bad_timestamps(tmp_path):
    head = "@timeStamps true\n@classLabel true a\n@data\n"
    p = write(tmp_path / "dates.ts", head + "(2020-01-01 10:00:00,1.0):a\n")
    with pytest.raises(ValueError, match=r"dates\.ts line 4: dimension 1: timestamp '2020-01-01 10:00:00'"
                                         r" is not a number"):
        uea.read_ts(p)
    p = write(tmp_path / "dup.ts", head + "(1,1.0),(1,2.0):a\n")
    with pytest.raises(ValueError, match=r"dup\.ts line 4: dimension 1: timestamp 1 appears twice"):
        uea.read_ts(p)
    p = write(tmp_path / "triple.ts", head + "(0,1.0),(1,2,3):a\n")
    with pytest.raises(ValueError, match=r"triple\.ts line 4: dimension 1: pair \(1,2,3\) is not"):
        uea.read_ts(p)
    p = write(tmp_path / "plain.ts", head + "(0,1.0),2.0:a\n")
    with pytest.raises(ValueError, match=r"plain\.ts line 4: dimension 1: expected \(timestamp,value\)"):
        uea.read_ts(p)


def test_bad_headers(tmp_path):
    with pytest.raises(ValueError, match=r"h1\.ts: no @data line"):
        uea.read_ts(write(tmp_path / "h1.ts", "@problemName X\n"))
    with pytest.raises(ValueError, match=r"h2\.ts line 2: @equalLength must be true or false, got 'yes'"):
        uea.read_ts(write(tmp_path / "h2.ts", "@problemName X\n@equalLength yes\n@data\n1\n"))
    with pytest.raises(ValueError, match=r"h3\.ts line 4: series length 2, but @equalLength true with "
                                         r"length 3"):
        uea.read_ts(write(tmp_path / "h3.ts", "@equalLength true\n@seriesLength 3\n@data\n1,2\n"))


def test_missing_dataset(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        uea.load("Nope", tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "uea" / "Nope" / "Nope_TRAIN.ts") in msg
    assert "http://www.timeseriesclassification.com/aeon-toolkit/Nope.zip" in msg
    assert "download=True" in msg


def test_without_romae_data_the_clones_data_folder_is_used(monkeypatch, tmp_path):
    monkeypatch.delenv("ROMAE_DATA", raising=False)
    assert files.data_root() == files.DEFAULT_ROOT
    with pytest.raises(FileNotFoundError, match=f"{files.DEFAULT_ROOT}/uea/NoSuchSet.*make data NAMES=uea:NoSuchSet"):
        uea.load("NoSuchSet")
    monkeypatch.setenv("ROMAE_DATA", "/some/where")
    assert files.data_root() == Path("/some/where") and files.data_root("x") == Path("x")


def test_known_checksum_mismatch(real_root, tmp_path):
    folder = tmp_path / "uea" / "BasicMotions"
    folder.mkdir(parents=True)
    for split in ("TRAIN", "TEST"):
        shutil.copy(real_root / "uea" / "BasicMotions" / f"BasicMotions_{split}.ts", folder)
    assert len(uea.load("BasicMotions", tmp_path)["train"]) == 40  # intact copies pass
    p = folder / "BasicMotions_TRAIN.ts"
    text = p.read_text()
    p.write_text(text.replace("0.079106", "0.079107", 1))  # flip one digit
    with pytest.raises(ValueError, match=r"BasicMotions_TRAIN\.ts.*expected SHA-256 8dc43cc6"):
        uea.load("BasicMotions", tmp_path)


TINY = "@problemName Foo\n@classLabel true a b\n@data\n1,2:3,4:a\n5,6:7,8:b\n"


@pytest.mark.parametrize("where", ["root", "folder"])
def test_sha256sums_mismatch(tmp_path, where):
    for split in ("TRAIN", "TEST"):
        write(tmp_path / "uea" / "Foo" / f"Foo_{split}.ts", TINY)
    good = hashlib.sha256(TINY.encode()).hexdigest()
    bad = "0" * 64
    if where == "root":
        sums = tmp_path / "uea" / "SHA256SUMS"
        write(sums, f"{good}  Foo/Foo_TRAIN.ts\n{good} *Foo/Foo_TEST.ts\n{bad}  Other/Other_TRAIN.ts\n")
    else:
        sums = tmp_path / "uea" / "Foo" / "SHA256SUMS"
        write(sums, f"{good}  Foo_TRAIN.ts\n{good}  Foo_TEST.ts\n")
    assert uea.load("Foo", tmp_path)["classes"] == ["a", "b"]  # unlisted names are not checked
    key = "Foo/Foo_TEST.ts" if where == "root" else "Foo_TEST.ts"
    write(sums, "".join(f"{bad if name == key else digest}  {name}\n"
                        for name, digest in files.read_sums(sums).items()))
    with pytest.raises(ValueError, match=r"Foo_TEST\.ts: expected SHA-256 0000"):
        uea.load("Foo", tmp_path)


# ----------------------------------------------------------------------------- download (file:// only)

@pytest.mark.parametrize("members", [("Foo/Foo_TRAIN.ts", "Foo/Foo_TEST.ts"),
                                     ("data/foo/foo_train.ts", "data/foo/FOO_TEST.ts")])
def test_download_from_zip(tmp_path, monkeypatch, members):
    server = tmp_path / "server"
    server.mkdir()
    train, test = TINY, TINY.replace("5,6", "9,6")
    with zipfile.ZipFile(server / "Foo.zip", "w") as zf:
        zf.writestr(members[0], train)
        zf.writestr(members[1], test)
        zf.writestr("Foo/README.txt", "not a data file")
    monkeypatch.setattr(uea, "URL", server.as_uri() + "/{name}.zip")
    root = tmp_path / "data"

    d = uea.load("Foo", root, download=True)
    folder = root / "uea" / "Foo"
    assert sorted(p.name for p in folder.iterdir()) == ["Foo_TEST.ts", "Foo_TRAIN.ts", "SHA256SUMS"]
    assert (folder / "Foo_TEST.ts").read_text() == test
    assert not (root / "uea" / "Foo.zip").exists() and (server / "Foo.zip").exists()
    assert files.read_sums(folder / "SHA256SUMS") == {
        "Foo_TRAIN.ts": hashlib.sha256(train.encode()).hexdigest(),
        "Foo_TEST.ts": hashlib.sha256(test.encode()).hexdigest()}
    assert d["test"].series[1][0, 0] == 9.0 and uea.available(root) == ["Foo"]

    assert len(uea.load("Foo", root)["train"]) == 2  # second load: verified against SHA256SUMS
    (folder / "Foo_TRAIN.ts").write_text(train.replace("1,2", "1,3"))
    with pytest.raises(ValueError, match=r"Foo_TRAIN\.ts"):
        uea.load("Foo", root)


def test_download_zip_without_member(tmp_path, monkeypatch):
    with zipfile.ZipFile(tmp_path / "Foo.zip", "w") as zf:
        zf.writestr("Foo/Foo_TRAIN.ts", TINY)
    monkeypatch.setattr(uea, "URL", tmp_path.as_uri() + "/{name}.zip")
    with pytest.raises(ValueError, match="holds no Foo_TEST.ts; members: Foo/Foo_TRAIN.ts"):
        uea.load("Foo", tmp_path / "data", download=True)


def test_download_url_checks_sha256(tmp_path):
    src = write(tmp_path / "src.bin", "hello")
    dest = tmp_path / "out" / "dest.bin"
    files.download_url(src.as_uri(), dest, sha256=hashlib.sha256(b"hello").hexdigest())
    assert dest.read_text() == "hello"
    dest.unlink()
    with pytest.raises(ValueError, match="expected SHA-256 " + "1" * 64):
        files.download_url(src.as_uri(), dest, sha256="1" * 64)
    assert list((tmp_path / "out").iterdir()) == []  # no partial or temporary file left behind


# ----------------------------------------------------------------------------- listing, helpers

def test_available(tmp_path):
    assert uea.available(tmp_path) == []  # no uea/ folder
    for name in ("Zed", "Alpha"):
        for split in ("TRAIN", "TEST"):
            write(tmp_path / "uea" / name / f"{name}_{split}.ts", TINY)
    write(tmp_path / "uea" / "Half" / "Half_TRAIN.ts", TINY)  # no test file: not listed
    assert uea.available(tmp_path) == ["Alpha", "Zed"]


def test_read_sums_and_verify_folder(tmp_path):
    a = write(tmp_path / "a.txt", "A")
    ha = hashlib.sha256(b"A").hexdigest()
    write(tmp_path / "SHA256SUMS", f"{ha}  a.txt\n{ha} *b.txt\n")
    assert files.read_sums(tmp_path / "SHA256SUMS") == {"a.txt": ha, "b.txt": ha}
    assert files.verify_folder(tmp_path, ["a.txt", "c.txt"]) == [a]
    with pytest.raises(FileNotFoundError, match="b.txt"):
        files.verify_folder(tmp_path)
    assert files.verify_folder(tmp_path / "nowhere") == []
    err = files.missing_file_error(tmp_path / "x.ts", "http://example.org/x.zip", "pass download=True")
    assert str(err) == (f"data file not found: {tmp_path / 'x.ts'}. Official source: "
                        f"http://example.org/x.zip. To get it: pass download=True.")
