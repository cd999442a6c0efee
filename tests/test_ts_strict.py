"""The `.ts` reader fails fast (a stream, a line at a time) and refuses files that contradict their own header;
`uea.load` refuses a test file that does not fit its train file."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from romae.data import uea


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def peak_mib(fn) -> tuple[float, Exception | None]:
    """(tracemalloc's peak in MiB while `fn` runs, the exception it raised)."""
    tracemalloc.start()
    err = None
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        err = e
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20, err


# ----------------------------------------------------------------------------- fail fast

def test_random_bytes_fail_at_the_first_line_without_reading_the_file(tmp_path):
    p = tmp_path / "noise.ts"
    p.write_bytes(np.random.default_rng(0).bytes(20 * 2**20))
    peak, err = peak_mib(lambda: uea.read_ts(p))
    assert isinstance(err, ValueError) and str(err).startswith("noise.ts line ")
    assert "expected a header line (@...) or @data" in str(err)
    assert peak < 5, f"{peak:.1f} MiB to refuse 20 MiB of random bytes"  # the old reader: > 150 MiB


def test_a_huge_first_line_is_judged_from_its_start(tmp_path):
    p = tmp_path / "blob.ts"
    p.write_bytes(b"\x00" * (20 * 2**20))  # binary, no line break at all
    peak, err = peak_mib(lambda: uea.read_ts(p))
    assert str(err).startswith("blob.ts line 1: expected a header line (@...) or @data, got '\\x00")
    assert peak < 5, f"{peak:.1f} MiB"
    p.write_text("@problemName " + "x" * (2 * 2**20) + "\n@data\n1\n")  # a header line is bounded too
    with pytest.raises(ValueError, match=r"blob\.ts line 1: a line before @data longer than 1048576 characters"):
        uea.read_ts(p)


def test_a_bad_last_line_is_named_and_memory_follows_the_parsed_data(tmp_path):
    rng = np.random.default_rng(1)
    rows = [":".join(",".join(f"{v:.6f}" for v in rng.standard_normal(300)) for _ in range(2)) + ":a"
            for _ in range(1000)]
    p = write(tmp_path / "long.ts", "@problemName Long\n@dimensions 2\n@equalLength true\n@classLabel true a\n"
              "@data\n" + "\n".join(rows) + "\n1,2:3,x:a\n")
    text_mib = p.stat().st_size / 2**20  # ~5.5 MiB of text, ~4.6 MiB of float64
    peak, err = peak_mib(lambda: uea.read_ts(p))
    assert str(err) == "long.ts line 1006: dimension 2: value 'x' is not a number"
    assert peak < text_mib, f"{peak:.1f} MiB for a {text_mib:.1f} MiB file"  # the old reader: text + its lines


def test_lines_are_numbered_as_before_across_rare_line_breaks(tmp_path):
    # str.splitlines also breaks at \f, \u2028...; a long header line is read in pieces
    p = write(tmp_path / "ff.ts", "#" + "c" * 9000 + "\n@classLabel true a\x0c@data\r\n1,2:a\u20281,y:a\n")
    with pytest.raises(ValueError, match=r"^ff\.ts line 5: dimension 1: value 'y' is not a number$"):
        uea.read_ts(p)
    with pytest.raises(ValueError, match=r"^at\.ts line 2: '@' without a tag name$"):
        uea.read_ts(write(tmp_path / "at.ts", "#\n @ \n@data\n1\n"))


# ----------------------------------------------------------------------------- header contradictions

def test_equal_length_true_refuses_a_shorter_dimension(tmp_path):
    case = "1,2,3:4,5,6:7,8:a\n"
    with pytest.raises(ValueError, match=r"^eq\.ts line 4: dimension 3 has 2 values but dimension 1 has 3, "
                                         r"under @equalLength true$"):
        uea.read_ts(write(tmp_path / "eq.ts", "@equalLength true\n@classLabel true a\n@data\n" + case))
    d = uea.read_ts(write(tmp_path / "ok.ts", "@equalLength false\n@classLabel true a\n@data\n" + case))
    np.testing.assert_array_equal(d.series[0][:, 2], [7, 8, np.nan])  # without the claim: padded, as before
    with pytest.raises(ValueError, match=r"^t\.ts line 5: dimension 2 has 1 values but dimension 1 has 2"):
        uea.read_ts(write(tmp_path / "t.ts", "@timeStamps true\n@equalLength true\n@classLabel true a\n@data\n"
                          "(0,1),(1,2):(0,3):a\n"))


@pytest.mark.parametrize("case, where", [("1,?,3:4,5,6:a", "dimension 1: missing value ('?' or NaN, value 2)"),
                                         ("1,2,3:4,5,NaN:a", "dimension 2: missing value ('?' or NaN, value 3)"),
                                         ("1,2:3,nan:a", "dimension 2: missing value ('?' or NaN, value 2)")])
def test_missing_false_refuses_missing_values(tmp_path, case, where):
    with pytest.raises(ValueError) as err:
        uea.read_ts(write(tmp_path / "m.ts", f"@missing false\n@classLabel true a\n@data\n1,2:3,4:a\n{case}\n"))
    assert str(err.value) == f"m.ts line 5: {where} under @missing false"
    d = uea.read_ts(write(tmp_path / "ok.ts", f"@missing true\n@classLabel true a\n@data\n{case}\n"))
    assert np.isnan(d.series[0]).sum() == 1  # allowed where the header allows it
    with pytest.raises(ValueError, match=r"^t\.ts line 5: dimension 1: missing value \('\?' or NaN, at time 2\)"):
        uea.read_ts(write(tmp_path / "t.ts", "@timeStamps true\n@missing false\n@classLabel true a\n@data\n"
                          "(0,1),(2,?):a\n"))


@pytest.mark.parametrize("stamp, why", [("inf", "is not finite"), ("-inf", "is not finite"),
                                        ("nan", "is not finite"), ("1e300", "is beyond float32's range"),
                                        ("-3.5e38", "is beyond float32's range")])
def test_timestamps_must_be_finite_and_within_float32(tmp_path, stamp, why):
    p = write(tmp_path / "t.ts", f"@timeStamps true\n@classLabel true a\n@data\n(0,1),(1,2):(0,1):a\n"
                                 f"(0,1):(5,1),({stamp},2):a\n")
    with pytest.raises(ValueError) as err:
        uea.read_ts(p)
    assert str(err.value).startswith(f"t.ts line 5: dimension 2: timestamp '{stamp}' {why}")


def test_infinite_values_are_read_and_left_to_the_builders(tmp_path):
    d = uea.read_ts(write(tmp_path / "v.ts", "@timeStamps true\n@classLabel true a\n@data\n(0,inf),(3e38,1):a\n"))
    assert np.isinf(d.series[0][0, 0]) and d.times[0][1] == 3e38


# ----------------------------------------------------------------------------- load: train and test must fit

TRAIN = "@classLabel true a b\n@data\n1,2:3,4:a\n5,6:7,8:b\n"


@pytest.mark.parametrize("train, test, message", [
    (TRAIN, "@classLabel true a b\n@data\n1,2:3,4:5,6:a\n",
     "Foo_TEST.ts has 3 channels but the train file {root}/Foo/Foo_TRAIN.ts has 2"),
    (TRAIN, "@targetLabel true\n@data\n1,2:3,4:0.5\n",
     "Foo_TRAIN.ts is classification (@classLabel true) but {root}/Foo/Foo_TEST.ts is regression"),
    ("@targetLabel true\n@data\n1,2:3,4:0.5\n", TRAIN,
     "Foo_TRAIN.ts is regression (@targetLabel true) but {root}/Foo/Foo_TEST.ts is classification"),
])
def test_load_refuses_a_test_file_unlike_its_train_file(tmp_path, train, test, message):
    write(tmp_path / "Foo" / "Foo_TRAIN.ts", train)
    write(tmp_path / "Foo" / "Foo_TEST.ts", test)
    with pytest.raises(ValueError) as err:
        uea.load("Foo", tmp_path)
    assert message.format(root=tmp_path) in str(err.value)
    write(tmp_path / "Foo" / "Foo_TEST.ts", "@classLabel false\n@data\n1,2:3,4\n")
    assert uea.load("Foo", tmp_path)["test"].labels is None  # an unlabelled test file fits either


# ---- the proof that issue 45's reader changed no number: on every file both accept, the new reader reads what the
# reader before issue 45 read (published artefacts that imported romae.data.uea stay current on that proof)

BEFORE = "eba8918"  # the last commit with the reader before issue 45


def _reader_before():
    import subprocess
    import types

    try:
        source = subprocess.run(["git", "show", f"{BEFORE}:romae/data/uea.py"], cwd=Path(uea.__file__).parents[2],
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"no git history with commit {BEFORE} here (a shallow or exported copy)")
    import sys

    module = types.ModuleType("romae.data._uea_before")
    module.__package__ = "romae.data"
    sys.modules[module.__name__] = module  # its dataclass looks itself up there
    try:
        exec(compile(source, "uea_before.py", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


def _facts(d) -> tuple:
    arr = lambda a: None if a is None else (str(a.dtype), a.shape, a.tobytes())  # noqa: E731
    return (tuple(arr(x) for x in d.series), None if d.times is None else tuple(arr(t) for t in d.times),
            arr(d.labels), d.class_names, d.problem_name, d.equal_length, d.n_channels)


def test_the_new_reader_reads_what_the_old_one_read(tmp_path):
    import os

    before = _reader_before()
    files = sorted(Path(os.environ.get("ROMAE_DATA", tmp_path)).glob("uea/*/*.ts"))
    try:  # aeon's bundled archive files (the baselines extra): JapaneseVowels, BasicMotions, GunPoint, ...
        import aeon

        files += sorted(Path(aeon.__file__).parent.joinpath("datasets", "data").glob("*/*.ts"))
    except ImportError:
        pass
    for k, (series, timestamps) in enumerate([((30, 30), False), ((10, 40), False), ((10, 40), True)]):
        d = uea.generate("Gen", 12, 6, 3, 3, series)
        lines = [f"@problemName Gen{k}", f"@timeStamps {str(timestamps).lower()}", "@missing true",
                 "@classLabel true " + " ".join(map(str, sorted(set(d["train"].labels.tolist())))), "@data"]
        for x, y in zip(d["train"].series, d["train"].labels):
            dims = [",".join(f"({t},{v})" if timestamps else f"{v}" for t, v in enumerate(col) if v == v)
                    if timestamps else ",".join("?" if v != v else repr(float(v)) for v in col) for col in x.T]
            lines.append(":".join(dims) + f":{y}")
        files.append(write(tmp_path / f"gen{k}.ts", "\n".join(lines) + "\n"))
    read = 0
    for path in files:
        try:
            old = before.read_ts(path)
        except ValueError:
            continue  # refused before: the new reader may refuse it too, or read it; nothing was published from it
        try:
            new = uea.read_ts(path)
        except ValueError as e:  # refused now: must be a header the file contradicts, never a file that was fine
            assert any(w in str(e) for w in ("@equalLength", "@missing", "timestamp")), (path, e)
            continue
        assert _facts(new) == _facts(old), path
        read += 1
    assert read >= 3
