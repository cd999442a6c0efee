"""Reports: result rows, the paper join and the status rules."""

import pandas as pd
import pytest

from romae.reference import paper_value, paper_values
from romae.report import build_summary, record, save_table, status


def test_status_rules():
    assert status(200.33, 200.1, "rel", 0.05) == "matches"
    assert status(200.33, 195.0, "rel", 0.05) == "within tolerance"
    assert status(200.33, 150.0, "rel", 0.05) == "differs"
    assert status(0.87, 0.99, "min", 0.02) == "matches"  # legacy rule: faster than the paper is fine
    assert status(0.98, 0.965, "min", 0.02) == "within tolerance"
    assert status(0.98, 0.90, "min", 0.02) == "differs"
    with pytest.raises(ValueError, match="unknown comparison rule"):
        status(1, 1, "close", 0.1)


def test_record_replaces_same_key_and_summary_joins_paper(tmp_path):
    record("table9_compute", "continuous", "relative_speed", 0.5, profile="smoke", reports_dir=tmp_path)
    record("table9_compute", "continuous", "relative_speed", 0.99, profile="smoke", reports_dir=tmp_path)
    record("table9_compute", "continuous", "relative_speed", 0.95, profile="quick", reports_dir=tmp_path)
    results = pd.read_csv(tmp_path / "results.csv")
    assert len(results) == 2 and set(results.ours) == {0.99, 0.95}
    summary = build_summary(tmp_path)
    rows = summary[(summary.experiment == "table9_compute") & (summary.setting == "continuous")]
    assert rows.profile.tolist() == ["quick", "smoke"]  # best available first
    assert rows.status.tolist() == ["better than the paper", "better than the paper"]  # 0.99, 0.95 vs 0.87
    assert (summary[summary.setting == "small"].status == "not run").all()
    # a row of a paper experiment and metric without a paper value (a control) is listed, unjudged;
    # a metric the paper does not report for that experiment is not
    record("table6_uea", "BasicMotions, from scratch", "accuracy", 0.9, profile="quick", reports_dir=tmp_path)
    record("table6_uea", "BasicMotions", "seconds", 12.0, profile="quick", reports_dir=tmp_path)
    summary = build_summary(tmp_path)
    extra = summary[summary.setting == "BasicMotions, from scratch"]
    assert extra.status.tolist() == ["no paper value"] and extra.paper.isna().all() and extra.ours.tolist() == [0.9]
    assert not (summary.metric == "seconds").any()
    every = (tmp_path / "SUMMARY.md").read_text().split("## Every row", 1)[1]
    assert every.count("\n| ") == len(summary) + 1  # + header
    with pytest.raises(ValueError, match="unknown profile"):
        record("x", "y", "z", 1.0, profile="fast", reports_dir=tmp_path)
    with pytest.raises(ValueError, match="not finite"):
        record("x", "y", "z", float("nan"), profile="smoke", reports_dir=tmp_path)


def test_save_table_writes_csv_and_markdown(tmp_path):
    csv, md = save_table(pd.DataFrame({"a": [1, 2], "b": [0.5, 0.25]}), "table_x", tmp_path)
    assert pd.read_csv(csv).b.tolist() == [0.5, 0.25]
    assert md.read_text().splitlines()[0] == "| a | b |"


def test_paper_values_have_rules():
    rows = paper_values()
    assert all(r["rule"] in ("rel", "abs", "min", "gt") for r in rows)
    assert all(r["tolerance"] > 0 for r in rows if r["rule"] != "gt")
    assert all(r["better"] in ("", "higher", "lower") for r in rows)
    assert paper_value("table1_position_reconstruction", "tiny, no [CLS]", "mse") == 200.33
