"""Variants (runs with other notebook parameters) kept apart, without a kernel: `publish` puts a variant's rows in
its own results.csv, `build_reports` gives it its own summary, lists it in the main SUMMARY.md and index.html with
its code state (current / stale as `romae.runner.provenance.freshness` reads its own provenance record), and writes none of this
machine's paths."""

from __future__ import annotations

import json

import nbformat
import pandas as pd
from nbformat.v4 import new_markdown_cell, new_notebook

from romae.compendium import report
from romae.runner import reproduce
from romae.compendium.reference import paper_values

ROW = paper_values()[0]
NOTEBOOK = "12_uea_classification"  # a real notebook: its provenance record hashes a real file


def _stage(folder, value: float, note: str):
    """A finished run's staging folder: a result row (its note names the data root and the staging folder, as
    kernels' messages do), a table, an executed copy and a provenance record of the real notebook."""
    (folder / "executed").mkdir(parents=True)
    nbformat.write(new_notebook(cells=[new_markdown_cell(f"# {note}")]), folder / "executed" / f"{NOTEBOOK}.ipynb")
    report.save_table(pd.DataFrame({"note": [f"written to {folder}/tables"]}), "table_x", folder)
    report.record(ROW["experiment"], ROW["setting"], ROW["metric"], value, profile="quick", scale={},
                  reports_dir=folder, note=note)
    reproduce.write_provenance(folder, reproduce.ROOT / "notebooks" / f"{NOTEBOOK}.ipynb", "quick", "abc")
    return folder


def test_a_variant_publishes_apart_and_is_listed_with_its_code_state(tmp_path, monkeypatch):
    monkeypatch.setenv("ROMAE_DATA", str(tmp_path / "shared-data"))
    reports = tmp_path / "reports"
    dest = reproduce.publish(_stage(tmp_path / "s1", 1.0, "the default run"), reports, NOTEBOOK, "quick")
    reproduce.append_run(dict(notebook=NOTEBOOK, profile="quick", status="ok"), reports)
    assert dest == reports
    slug = reproduce.variant_slug(NOTEBOOK, "quick", {"datasets": ["JapaneseVowels"]})
    note = f"ran without data under $ROMAE_DATA={tmp_path / 'shared-data'}; files in {tmp_path / 'shared-data'}/uea"
    dest = reproduce.publish(_stage(tmp_path / "s2", 2.0, note), reports, NOTEBOOK, "quick", slug)
    reproduce.append_run(dict(notebook=NOTEBOOK, profile="quick", status="ok", params="datasets=JapaneseVowels"),
                         reports)
    assert dest == reports / "variants" / slug
    # its row in its own results.csv, without this machine's paths; the main results keep the default run's row
    main, mine = pd.read_csv(reports / "results.csv"), pd.read_csv(dest / "results.csv")
    assert main.ours.tolist() == [1.0] and mine.ours.tolist() == [2.0]
    assert mine.note[0] == "ran without data under $ROMAE_DATA; files in $ROMAE_DATA/uea"
    assert "[reports]/variants/" in (dest / "tables" / "table_x.csv").read_text()  # its staging folder, as published
    assert str(tmp_path) not in (dest / "tables" / "table_x.csv").read_text()
    assert report.provenance_of(NOTEBOOK, "quick", dest)["notebook"] == NOTEBOOK

    reproduce.build_reports(reports)
    assert (dest / "summary.csv").exists()
    own = (dest / "SUMMARY.md").read_text()
    assert own.startswith(f"# Variant {slug}") and "Code: **current**" in own and "$ROMAE_DATA/uea" in own
    summary = (reports / "SUMMARY.md").read_text()
    assert "$ROMAE_DATA/uea" not in summary.split("## Runs")[0]  # the variant's row is not among the main rows
    variants = summary.split("## Variants", 1)[1]
    assert f"[{slug}](variants/{slug}/)" in variants and "| datasets=JapaneseVowels | current |" in variants
    index = (reports / "index.html").read_text()
    assert f"variants/{slug}/SUMMARY.md" in index and "code current" in index
    for path in (reports / "SUMMARY.md", reports / "index.html", reports / "runs.csv", dest / "SUMMARY.md"):
        assert str(tmp_path) not in path.read_text(), path

    # a variant whose record no longer matches the code (or that has none) reads stale, naming why
    record = dest / "provenance" / f"{NOTEBOOK}.json"
    rec = json.loads(record.read_text())
    now, rec["code"]["numbers"]["model"] = rec["code"]["numbers"]["model"], "other-numbers"
    record.write_text(json.dumps(rec))
    table = reproduce.variant_table(reports)
    assert table.code.tolist() == [f"stale: numbers of the model workload: other-numbers -> {now}"]
    record.unlink()
    assert reproduce.variant_table(reports).code.tolist() == ["stale: (no record of the code it ran)"]
