"""The committed reports/: what a reader opens. Every run that is current (its notebook and the romae
modules it imported unchanged since, `romae.runner.provenance.freshness`) has a readable page: no executed notebook page over
1 MB (progress bars are kept out of executed copies; figures at screen resolution). Variants (runs with other
parameters, reports/variants/) obey the same page rules whatever their freshness, and keep their rows, provenance
and summary to themselves; the main summary and index list them with their code state."""

import json
from pathlib import Path

import pandas as pd
import pytest

from romae.runner.provenance import freshness

from romae.compendium import report
from romae.runner import reproduce

REPORTS = Path(__file__).resolve().parents[1] / "reports"
LIMIT = 1_000_000  # bytes of a notebook's HTML page


def provenance_records() -> list[tuple[Path, dict]]:
    """Every committed provenance record, with its file (none in a clone without reports/provenance)."""
    return [(path, json.loads(path.read_text())) for path in sorted((REPORTS / "provenance").glob("*.json"))]


def current_runs() -> list[tuple[str, str]]:
    return [(prov["notebook"], prov["profile"]) for _, prov in provenance_records()
            if freshness(prov)[0] == "current"]


def _complete(prov: dict) -> None:
    if prov["format"] == 3:  # the sound rule's (issue 51)
        assert prov["code"]["units"] and prov["code"]["roots"]
    else:  # the rule before it, kept until a run of the notebook re-publishes it, and marked unproven
        assert prov["format"] == 2 and prov.get("unproven", "").startswith("not proven under the sound rule")


def test_provenance_records_are_complete():
    for path, prov in provenance_records():
        assert prov["notebook"] == path.stem and prov["profile"] in report.PROFILE_RANK
        _complete(prov)
        assert list(prov["notebook_code"]) == [f"notebooks/{path.stem}.ipynb"]


@pytest.mark.parametrize("notebook, profile", current_runs() or [pytest.param("-", "-", marks=pytest.mark.skip(
    reason="no committed run is current yet"))])
def test_pages_of_current_runs_stay_small(notebook, profile):
    page = REPORTS / "html" / f"{notebook}.html"
    executed = REPORTS / "executed" / f"{notebook}.ipynb"
    assert executed.exists() and page.exists(), f"{notebook}: a current run without its executed copy or page"
    assert page.stat().st_size <= LIMIT, f"{page.name} is {page.stat().st_size / 1e6:.2f} MB (limit 1 MB)"
    text = executed.read_text()  # the runner's own pattern of a tqdm bar (it/s and download bars alike)
    assert "it/s]" not in text and not reproduce._BAR.search(text), f"{executed.name} holds progress-bar output"


# ---- variants (runs with other notebook parameters, reports/variants/<variant>/): the same rules as the
# notebooks' own pages, whatever their freshness, and their rows kept out of the main results

def variant_folders() -> list[Path]:
    return sorted(p for p in (REPORTS / "variants").glob("*") if p.is_dir())


def test_variant_provenance_records_are_complete():
    for folder in variant_folders():
        for path in sorted((folder / "provenance").glob("*.json")):
            prov = json.loads(path.read_text())
            assert prov["notebook"] == path.stem and folder.name.startswith(f"{path.stem}--{prov['profile']}--")
            _complete(prov)
            assert list(prov["notebook_code"]) == [f"notebooks/{path.stem}.ipynb"]


@pytest.mark.parametrize("folder", variant_folders() or [pytest.param(None, marks=pytest.mark.skip(
    reason="no committed variant"))], ids=lambda f: getattr(f, "name", "-"))
def test_variant_pages_stay_small_and_apart(folder):
    notebook = folder.name.split("--")[0]
    executed = folder / "executed" / f"{notebook}.ipynb"
    page = folder / f"{notebook}.html"
    assert executed.exists() and page.exists(), f"{folder.name}: a variant without its executed copy or page"
    assert page.stat().st_size <= LIMIT, f"{page.name} is {page.stat().st_size / 1e6:.2f} MB (limit 1 MB)"
    text = executed.read_text()
    assert "it/s]" not in text and not reproduce._BAR.search(text), f"{executed.name} holds progress-bar output"
    # its rows are its own: in its results.csv, summarised in its own SUMMARY.md, none in the main results
    assert (folder / "results.csv").exists() and (folder / "SUMMARY.md").exists()
    mine = pd.read_csv(folder / "results.csv")
    main = pd.read_csv(REPORTS / "results.csv")
    # a variant may share its rows' names with the notebook's own run (e.g. another dropout placement), and may
    # record again rows its parameters do not touch (15's decoder variant: the notebook's own Spiral and Synthetic
    # rows, from the same trainings); but some of its rows are its own, and those are not in the main results
    key = ["experiment", "setting", "metric", "profile", "ours", "note"]
    own = mine[key].merge(main[key], how="left", indicator=True).query("_merge == 'left_only'")
    assert len(own), f"{folder.name}: every one of its rows is also in the main results.csv:\n{mine[key]}"
    # the main summary and the index list it, with its code state as report.freshness reads it now
    state, _ = freshness(report.provenance_of(notebook, folder.name.split("--")[1], folder))
    section = (REPORTS / "SUMMARY.md").read_text().split("## Variants", 1)
    assert len(section) == 2 and folder.name in section[1], "the main SUMMARY.md does not list the variant"
    line = next(x for x in section[1].splitlines() if folder.name in x)
    assert f"| {state}" in line, f"the variant's code state is not {state!r}: {line}"
    index = (REPORTS / "index.html").read_text()
    assert f"variants/{folder.name}/{notebook}.html" in index and f"code {state}" in index


@pytest.mark.skipif(not (REPORTS / "SUMMARY.md").exists(), reason="no committed SUMMARY.md in this copy")
def test_the_front_page_reads_in_30_seconds():
    """SUMMARY.md opens with its headline in words, then the claims; under 40 KB, every row on ROWS.md (issue 43)."""
    text = (REPORTS / "SUMMARY.md").read_text()
    assert len(text.encode()) < 40_000, f"SUMMARY.md is {len(text.encode()) / 1e3:.0f} KB"
    head = text.split("\n## ", 1)[0]
    assert all(f"**{w}.**" in head for w in ("Claims", "Coverage", "Cost")), head
    assert text.index("## The paper's claims") < text.index("## Paper artefacts")
    assert "## Every row" not in text and "## Every row" in (REPORTS / "ROWS.md").read_text()


def test_published_records_name_the_code_their_notebook_runs():
    """A run's record (format 3) holds every unit its notebook's cells can run: its experiment and the library."""
    for path in sorted((REPORTS / "provenance").glob("*.json")):
        prov = json.loads(path.read_text())
        if prov.get("format") != 3:
            continue
        units = prov["code"]["units"]
        assert any(u.startswith("experiments/") for u in units) and any(u.startswith("model.py:") for u in units)
