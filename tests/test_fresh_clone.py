"""A fresh clone with no data beside it: notebooks whose data is missing are *skipped* (never reported ok,
never replacing a published artefact), with the command that fetches the data; notebook parameters from
the command line; nbval skips the same notebooks; every data notebook declares what it needs."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from romae.runner import reproduce
from romae.data import catalog, files
from romae.compendium.reference import paper_values

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ROW = paper_values()[0]


def _notebook(folder: Path, name: str, params: str, cells: list[str], experiment: str | None = None) -> Path:
    nb = new_notebook(cells=[new_markdown_cell(f"# {name}"), new_code_cell(params, metadata={"tags": ["parameters"]}),
                             *[new_code_cell(c) for c in cells]])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if experiment:
        nb.metadata["romae"] = {"experiment": experiment}
    path = folder / name
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three notebooks run by the runner (one kernel each for two of them), then one again with parameters."""
    tmp = tmp_path_factory.mktemp("fresh")
    nbs, reports, data = tmp / "notebooks", tmp / "reports", tmp / "data"
    nbs.mkdir()
    data.mkdir()
    base = 'profile: str = "smoke"\nreports_dir: str = ""\n'
    _notebook(nbs, "01_needs.ipynb", base + f'datasets: list = ["NoSuchSet"]\ndata_root: str = "{data}"\n',
              ["raise RuntimeError('a skipped notebook must never start')"], experiment="uea")
    _notebook(nbs, "02_late.ipynb", base, ["from romae.data.files import DataMissing\n"
                                           "raise DataMissing('needs the toy set: `make data NAMES=toy`')"])
    _notebook(nbs, "03_ok.ipynb", base + 'datasets: list = []\nn: int = 1\nflag: bool = False\n',
              ["from romae.compendium import report\n"
               f"report.record({ROW['experiment']!r}, {ROW['setting']!r}, {ROW['metric']!r}, {ROW['paper']!r}, "
               "profile=profile, scale={}, reports_dir=reports_dir, note=f'runner test {datasets} {n} {flag}')\n"
               "print('PARAMS', datasets, n, flag)"])
    # a notebook whose dataset a mirror of the archive serves (file://): --download fetches it, then it runs
    fetched = tmp / "fetched"
    _notebook(nbs, "04_fetch.ipynb", base + f'datasets: list = ["Toy"]\ndata_root: str = "{fetched}"\n',
              ["from romae.data import uea\nprint('CLASSES', uea.load(datasets[0], data_root)['classes'])"],
              experiment="uea")
    mirror = tmp / "mirror"
    archive = mirror / "www.timeseriesclassification.com" / "aeon-toolkit" / "Toy.zip"
    archive.parent.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w") as z:
        for split in ("TRAIN", "TEST"):
            z.writestr(f"Toy/Toy_{split}.ts", "@problemName Toy\n@univariate true\n@classLabel true a b\n@data\n"
                                              "1,2,3:a\n3,2,1:b\n")
    # a published copy of 01 from an earlier run with data: a skipped run must leave it as it is
    (reports / "executed").mkdir(parents=True)
    published = reports / "executed" / "01_needs.ipynb"
    nbformat.write(new_notebook(cells=[new_markdown_cell("published earlier")]), published)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "romae.runner.reproduce", "--profile", "smoke", "--notebooks", str(nbs),
                               "--reports", str(reports), "--timeout", "120", *args],
                              capture_output=True, text=True, timeout=600)

    first = run("--only", "01,02,03")
    download = run("--only", "04", "--download", "--mirror", mirror.as_uri())
    main_files = ("SUMMARY.md", "summary.csv", "index.html", "results.csv", "runs.csv", "html/03_ok.html",
                  "executed/03_ok.ipynb")
    before = {f: (reports / f).read_bytes() for f in main_files}
    second = run("--only", "03", "--param", "datasets=A,B", "--param", "n=3", "--param", "flag=yes")
    after = {f: (reports / f).read_bytes() for f in main_files}
    bad = [run("--only", "03", "--param", "n=three"), run("--only", "03", "--param", "nope=1"),
           run("--only", "03", "--param", "datasets")]
    return dict(tmp=tmp, reports=reports, first=first, second=second, bad=bad, published=published, data=data,
                download=download, fetched=fetched, before=before, after=after)


def test_missing_data_is_skipped_with_its_fetch_command_and_exit_0(runs):
    out = runs["first"].stdout + runs["first"].stderr
    assert runs["first"].returncode == 0, out
    rows = pd.read_csv(runs["reports"] / "runs.csv", dtype=str, keep_default_na=False)
    assert list(rows.columns) == reproduce.RUN_COLUMNS
    first = rows[rows.params == ""].set_index("notebook")
    assert first.status.to_dict() == {"01_needs": "skipped", "02_late": "skipped", "03_ok": "ok", "04_fetch": "ok"}
    assert "make data NAMES=uea:NoSuchSet" in first.note["01_needs"]
    # the folder it looked in, named without this machine's path (romae.runner.reproduce.redactor)
    assert f"{reproduce.LOCAL}/data" in first.note["01_needs"] and str(runs["tmp"]) not in first.note["01_needs"]
    assert "make data NAMES=toy" in first.note["02_late"] and first.error["02_late"] == ""
    assert first.seconds["01_needs"] in ("0.0", "0")  # no kernel was started
    assert "SKIPPED, their data is missing: 01_needs.ipynb, 02_late.ipynb" in out


def test_a_paper_run_that_skipped_a_notebook_is_incomplete_and_exits_3_unless_allowed(runs):
    reports = runs["tmp"] / "paper-reports"

    def paper(*args):
        return subprocess.run([sys.executable, "-m", "romae.runner.reproduce", "--profile", "paper", "--device", "cpu",
                               "--notebooks", str(runs["tmp"] / "notebooks"), "--reports", str(reports),
                               "--only", "01", *args], capture_output=True, text=True, timeout=600)

    strict, allowed = paper(), paper("--allow-skips")
    assert strict.returncode == reproduce.INCOMPLETE == 3, strict.stdout + strict.stderr
    assert "PAPER PROFILE INCOMPLETE: notebook 01 skipped (data missing)" in strict.stdout
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "PAPER PROFILE INCOMPLETE" in allowed.stdout and "ALLOW_SKIPS=1: exit 0" in allowed.stdout
    summary = (reports / "SUMMARY.md").read_text()
    assert "**Paper profile incomplete: notebook 01 skipped (data missing)**" in summary
    # a later paper run that is not skipped makes it complete again; quick-profile skips never count
    runs_ = reproduce.latest_runs(reports)
    assert reproduce.paper_skipped(runs_) == ["01_needs"]
    reproduce.append_run(dict(notebook="01_needs", profile="paper", status="ok"), reports)
    reproduce.append_run(dict(notebook="02_late", profile="quick", status="skipped"), reports)
    assert reproduce.paper_skipped(reproduce.latest_runs(reports)) == []
    assert reproduce.incomplete_text(["10_tiny_imagenet.ipynb", "11_esc50"]) == "notebooks 10, 11 skipped (data missing)"


def test_download_fetches_what_the_selected_notebooks_need_first(runs):
    out = runs["download"].stdout + runs["download"].stderr
    assert runs["download"].returncode == 0, out
    assert (runs["fetched"] / "uea" / "Toy" / "Toy_TRAIN.ts").is_file() and "uea:Toy: ->" in out
    printed = nbformat.read(runs["reports"] / "executed" / "04_fetch.ipynb", as_version=4)
    assert "CLASSES ['a', 'b']" in "".join(o.get("text", "") for c in printed.cells for o in c.get("outputs", []))


def test_a_skipped_run_publishes_nothing(runs):
    reports = runs["reports"]
    assert nbformat.read(runs["published"], as_version=4).cells[0].source == "published earlier"
    assert not (reports / "executed" / "02_late.ipynb").exists()
    assert not (reports / "failed").exists()  # a skip is not a failure either
    text = (reports / "SUMMARY.md").read_text().split("## Runs", 1)[1]
    assert "skipped" in text and "make data NAMES=uea:NoSuchSet" in text and "**SKIPPED**" not in text
    page = (reports / "index.html").read_text()
    assert "last run skipped" in page and "make data NAMES=toy" in page


def test_params_are_converted_by_their_declared_type_and_run_as_a_variant(runs):
    out = runs["second"].stdout + runs["second"].stderr
    assert runs["second"].returncode == 0, out
    variants = list((runs["reports"] / "variants").glob("03_ok--smoke--*"))
    assert len(variants) == 1 and "datasets=A,B" in variants[0].name and "n=3" in variants[0].name
    executed = nbformat.read(variants[0] / "executed" / "03_ok.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for c in executed.cells for o in c.get("outputs", []))
    assert "PARAMS ['A', 'B'] 3 True" in printed
    # the default run's executed copy is not replaced by the variant
    assert "PARAMS [] 1 False" in (runs["reports"] / "executed" / "03_ok.ipynb").read_text()
    rows = pd.read_csv(variants[0] / "runs.csv", dtype=str, keep_default_na=False)  # its own log
    assert rows.params.tolist() == ["datasets=A,B; flag=True; n=3"] and rows.status.tolist() == ["ok"]
    assert (variants[0] / "03_ok.html").exists()


def test_a_variant_run_changes_no_file_outside_its_folder(runs):
    """The main summary, index, results, runs log and the notebook's own copy and page are byte for byte what
    they were; the terminal says where the variant went."""
    changed = [f for f in runs["before"] if runs["before"][f] != runs["after"][f]]
    assert not changed, changed
    assert "== variant: " in runs["second"].stdout and "no tracked file outside the folder" in runs["second"].stdout
    assert not (runs["reports"] / "html" / "variants").exists()


def test_a_variant_keeps_its_rows_provenance_and_summary_apart(runs):
    """A variant's result rows go into its own results.csv, never the main one; it has its own provenance
    record and summary, and the main summary and index list it with its code state."""
    reports = runs["reports"]
    variant = next((reports / "variants").glob("03_ok--smoke--*"))
    mine = pd.read_csv(variant / "results.csv")
    assert mine.note.tolist() == ["runner test ['A', 'B'] 3 True"]
    main = pd.read_csv(reports / "results.csv")  # the same (experiment, setting, metric, profile): not replaced
    assert main.note.tolist() == ["runner test [] 1 False"]
    prov = json.loads((variant / "provenance" / "03_ok.json").read_text())
    assert prov["notebook"] == "03_ok" and prov["profile"] == "smoke" and prov["format"] == 3 and prov["code"]["units"]
    assert (reports / "provenance" / "03_ok.json").exists()  # the default run's, beside it
    assert (variant / "summary.csv").exists() and "runner test ['A', 'B']" in (variant / "SUMMARY.md").read_text()
    assert "page: `03_ok.html`" in (variant / "SUMMARY.md").read_text()
    reproduce.build_reports(reports)  # the main pages list it once they are built again
    section = (reports / "SUMMARY.md").read_text().split("## Variants", 1)[1]
    assert variant.name in section and "datasets=A,B; flag=True; n=3" in section
    assert "runner test ['A', 'B']" not in (reports / "SUMMARY.md").read_text()
    index = (reports / "index.html").read_text()
    assert f"variants/{variant.name}/03_ok.html" in index and "code current" in index
    # the page finds MathJax two folders up
    assert "../../html/mathjax/MathJax.js" in (variant / "03_ok.html").read_text()


def test_bad_params_are_usage_errors_before_anything_runs(runs):
    wrong_type, unknown, no_value = runs["bad"]
    assert wrong_type.returncode == 2 and "parameter n: 'three' is not a valid int" in wrong_type.stderr
    assert unknown.returncode == 2 and "no selected notebook has such a parameter" in unknown.stderr
    assert "03_ok.ipynb: profile, reports_dir, datasets, n, flag" in unknown.stderr
    assert no_value.returncode == 2 and "write name=value" in no_value.stderr


def test_runs_csv_of_an_older_layout_is_migrated(tmp_path):
    (tmp_path / "runs.csv").write_text("notebook,profile,device,seconds,commit,status,error\n00_a,quick,cpu,1.0,abc,ok,\n")
    reproduce.append_run(dict(notebook="00_b", profile="quick", status="skipped", note="needs x"), tmp_path)
    rows = pd.read_csv(tmp_path / "runs.csv", dtype=str, keep_default_na=False)
    assert list(rows.columns) == reproduce.RUN_COLUMNS
    assert rows.notebook.tolist() == ["00_a", "00_b"] and rows.note.tolist() == ["", "needs x"]


def test_convert_and_parse_params():
    assert reproduce.convert("A, B,", "list", "datasets") == ["A", "B"]
    assert reproduce.convert('["A", "B"]', "list", "datasets") == ["A", "B"]
    assert reproduce.convert("7", "int", "n") == 7 and reproduce.convert("0.5", "float", "x") == 0.5
    assert reproduce.convert("no", "bool", "b") is False and reproduce.convert("x y", "str", "s") == "x y"
    assert reproduce.parse_params(["a=b=c", "d="]) == {"a": "b=c", "d": ""}
    with pytest.raises(ValueError, match="not a valid bool"):
        reproduce.convert("maybe", "bool", "b")


# ----------------------------------------------------------------------------- the real notebooks

DATA_NOTEBOOKS = {"10": "tiny_imagenet", "11": "esc50", "12": "uea", "13": "elasticc", "16": "physionet"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_data_notebook_declares_what_it_needs(path):
    """A notebook with a data_root parameter names its experiment module, whose data_needs takes the
    notebook's parameters; the others need no external data."""
    params = reproduce.notebook_parameters(path)
    experiment = json.loads(path.read_text())["metadata"].get("romae", {}).get("experiment")
    assert ("data_root" in params) == (experiment is not None), path.name
    assert experiment == DATA_NOTEBOOKS.get(path.name[:2]), path.name
    for profile in ("smoke", "quick", "paper"):
        effective, _ = reproduce.resolve_params(path, profile, {})
        needs = reproduce.notebook_needs(path, effective)
        assert all(isinstance(n, catalog.Need) for n in needs)
        for need in needs:  # every name is a catalog entry (or a user's path)
            for name in need.any_of:
                assert name.startswith("path:") or catalog.get(name)


def test_an_empty_data_root_skips_exactly_the_data_notebooks(tmp_path, monkeypatch):
    """What a stranger's clone sees: 10, 11, 12, 16 need data in every profile, 13 only in paper."""
    monkeypatch.setenv("ROMAE_DATA", str(tmp_path))
    for profile, expected in (("smoke", {"10", "11", "12", "16"}), ("quick", {"10", "11", "12", "16"}),
                              ("paper", {"10", "11", "12", "13", "16"})):
        skipped = set()
        for path in NOTEBOOKS:
            effective, _ = reproduce.resolve_params(path, profile, {})
            gone = catalog.missing(reproduce.notebook_needs(path, effective))
            if gone:
                skipped.add(path.name[:2])
                assert all("make data NAMES=" in n.message() or n.how for n in gone)
        assert skipped == expected, profile


def test_nbval_skips_a_notebook_whose_data_is_missing(tmp_path, monkeypatch):
    import conftest

    monkeypatch.setenv("ROMAE_DATA", str(tmp_path))
    reason = conftest._missing_data(ROOT / "notebooks" / "16_physionet_interpolation.ipynb")
    assert "PhysioNet 2012" in reason and "make data NAMES=physionet2012" in reason
    assert conftest._missing_data(ROOT / "notebooks" / "14_pendulum.ipynb") == ""


def test_a_data_missing_error_is_a_file_not_found_error_naming_the_fetch_command(tmp_path):
    from romae.data import physionet

    with pytest.raises(FileNotFoundError, match="make data NAMES=physionet2012") as e:
        physionet.archive("a", tmp_path)
    assert isinstance(e.value, files.DataMissing) and e.value.names == ("physionet2012",)
