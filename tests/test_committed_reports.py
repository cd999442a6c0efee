"""The committed reports/: what a reader opens. Every run that is current (its notebook and the romae
modules it imported unchanged since, `report.freshness`) has a readable page: no executed notebook page over
1 MB (progress bars are kept out of executed copies; figures at screen resolution)."""

import json
from pathlib import Path

import pytest

from romae import report, reproduce

REPORTS = Path(__file__).resolve().parents[1] / "reports"
LIMIT = 1_000_000  # bytes of a notebook's HTML page


def provenance_records() -> list[tuple[Path, dict]]:
    """Every committed provenance record, with its file (none in a clone without reports/provenance)."""
    return [(path, json.loads(path.read_text())) for path in sorted((REPORTS / "provenance").glob("*.json"))]


def current_runs() -> list[tuple[str, str]]:
    return [(prov["notebook"], prov["profile"]) for _, prov in provenance_records()
            if report.freshness(prov)[0] == "current"]


def test_provenance_records_are_complete():
    for path, prov in provenance_records():
        assert prov["notebook"] == path.stem and prov["profile"] in report.PROFILE_RANK
        assert prov["modules"] and all(m.startswith("romae/") for m in prov["modules"])
        assert list(prov["notebook_file"]) == [f"notebooks/{path.stem}.ipynb"]


@pytest.mark.parametrize("notebook, profile", current_runs() or [pytest.param("-", "-", marks=pytest.mark.skip(
    reason="no committed run is current yet"))])
def test_pages_of_current_runs_stay_small(notebook, profile):
    page = REPORTS / "html" / f"{notebook}.html"
    executed = REPORTS / "executed" / f"{notebook}.ipynb"
    assert executed.exists() and page.exists(), f"{notebook}: a current run without its executed copy or page"
    assert page.stat().st_size <= LIMIT, f"{page.name} is {page.stat().st_size / 1e6:.2f} MB (limit 1 MB)"
    text = executed.read_text()  # the runner's own pattern of a tqdm bar (it/s and download bars alike)
    assert "it/s]" not in text and not reproduce._BAR.search(text), f"{executed.name} holds progress-bar output"
