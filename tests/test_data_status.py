"""`python -m romae.data status` lists everything under the data root: the catalog's data sets, a UEA data set
the user added (uea/<Name>/ with .ts files), other catalog entries found there, and folders it does not know."""

from __future__ import annotations

from romae.data import catalog, files
from romae.data.__main__ import main

TS = "@problemName MyOwnSet\n@classLabel true a b\n@data\n1,2,3:a\n3,2,1:b\n"


def _status(capsys, *args) -> str:
    capsys.readouterr()
    assert main(["status", *args]) == 0
    return capsys.readouterr().out


def _line(out: str, name: str) -> str:
    lines = [line for line in out.splitlines() if f" {name} " in line]
    assert len(lines) == 1, (name, out)
    return lines[0]


def test_status_lists_a_uea_dataset_the_user_added(tmp_path, capsys):
    own = tmp_path / "uea" / "MyOwnSet"
    own.mkdir(parents=True)
    (own / "MyOwnSet_TRAIN.ts").write_text(TS)
    line = _line(_status(capsys, "--root", str(tmp_path)), "uea:MyOwnSet")
    assert str(own) in line and "not one of Table 6's" in line and "MyOwnSet_TEST.ts is not there" in line
    assert not line.lstrip().startswith("here")

    (own / "MyOwnSet_TEST.ts").write_text(TS)
    out = _status(capsys, "--root", str(tmp_path))
    line = _line(out, "uea:MyOwnSet")
    assert line.lstrip().startswith("here") and "no checksum known" in line
    assert "missing uea:BasicMotions" in out  # the catalog's list is still there, above

    (own / "SHA256SUMS").write_text("".join(f"{files.sha256(own / b)}  {b}\n"
                                            for b in ("MyOwnSet_TRAIN.ts", "MyOwnSet_TEST.ts")))
    line = _line(_status(capsys, "--root", str(tmp_path)), "uea:MyOwnSet")
    assert line.lstrip().startswith("here") and "checksum recorded" in line
    (own / "MyOwnSet_TEST.ts").write_text(TS + "2,2,2:a\n")
    line = _line(_status(capsys, "--root", str(tmp_path)), "uea:MyOwnSet")
    assert line.lstrip().startswith("missing") and "fails its checksum" in line


def test_status_lists_unknown_folders_and_only_the_names_asked_for(tmp_path, capsys):
    (tmp_path / "uea" / "OnlyArff").mkdir(parents=True)
    (tmp_path / "uea" / "OnlyArff" / "OnlyArff_TRAIN.arff").write_text("@relation x\n")
    (tmp_path / "my_notes").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "README.md").write_text("not a folder\n")
    out = _status(capsys, "--root", str(tmp_path))
    assert "unknown my_notes/" in _line(out, "my_notes/") and "unknown uea/OnlyArff/" in _line(out, "uea/OnlyArff/")
    assert ".hidden" not in out and "README" not in out and "physionet2012/" not in out

    (tmp_path / "uea" / "MyOwnSet").mkdir()
    for split in ("TRAIN", "TEST"):
        (tmp_path / "uea" / "MyOwnSet" / f"MyOwnSet_{split}.ts").write_text(TS)
    out = _status(capsys, "uea:MyOwnSet", "--root", str(tmp_path))  # names given: those alone
    assert "here    uea:MyOwnSet" in out and "my_notes" not in out and "physionet2012" not in out


def test_found_rows(tmp_path):
    (tmp_path / "uea" / "BasicMotions").mkdir(parents=True)
    (tmp_path / "uea" / "BasicMotions" / "BasicMotions_TRAIN.ts").write_text(TS)
    (tmp_path / "librispeech" / "LibriSpeech" / "dev-clean").mkdir(parents=True)
    rows = {r["name"]: r for r in catalog.found(tmp_path)}
    assert set(rows) == {"uea:BasicMotions", "librispeech:dev-clean"}
    assert rows["uea:BasicMotions"]["here"] is False and "Table 6" in rows["uea:BasicMotions"]["note"]
    assert catalog.found(tmp_path, skip=["uea:BasicMotions", "librispeech:dev-clean"]) == []
    assert catalog.found(tmp_path / "nowhere") == []
