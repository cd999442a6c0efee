"""The front page's claims table: each verdict derived by code from the rows, and it moves when they do."""

import pandas as pd
import pytest

from romae.runner import frontpage
from romae.compendium import report
from romae.compendium.report import ROOT, record, scale
from romae.runner.summary import build_summary

FULL = scale(data=(20000, 20000), epochs=(10, 10), seeds=(5, 5))
LEARNED = report.learned(0.05, 200.0, "the constant mean position")


def verdict(tmp_path, claim: str) -> pd.Series:
    view = frontpage.claims_view(build_summary(tmp_path), tmp_path)
    return view[view.claim.str.startswith(f"{claim}. ")].iloc[0]


def tiny(tmp_path, ours=0.06, **kw):
    record("table1_position_reconstruction", "tiny, with [CLS]", "mse", ours, profile="quick", reports_dir=tmp_path,
           **{"scale": FULL, "learned": LEARNED, "device": "NVIDIA H100 80GB HBM3", **kw})


def test_every_claim_has_a_line_and_a_known_verdict(tmp_path):
    view = frontpage.claims_view(build_summary(tmp_path), tmp_path)
    assert view.claim.str.split(".").str[0].tolist() == [c["claim"] for c in frontpage.claims()]
    assert len(view) == 11 and set(view.verdict) == {"not tested at this scale"}  # nothing run: nothing judged
    assert view["to test it"].str.contains("PROFILE=paper|make bench").all()


def test_claim_verdict_follows_the_rows(tmp_path):
    tiny(tmp_path)
    row = verdict(tmp_path, "2")
    assert row.verdict == "confirmed" and row.scale == "paper scale" and row.evidence.startswith("1 of 6 rows judged")
    # the same number from a model that no longer beats its trivial predictor: not tested
    tiny(tmp_path, learned=report.learned(190.0, 200.0, "the constant mean position"))
    assert verdict(tmp_path, "2").verdict == "not tested at this scale"
    # a flagged training: not tested
    tiny(tmp_path, losses=[1.0] * 20 + [900.0] + [0.8] * 20)
    assert verdict(tmp_path, "2").verdict == "not tested at this scale"
    # worse than the paper beyond its tolerance: contradicted
    tiny(tmp_path, ours=0.5)
    assert verdict(tmp_path, "2").verdict == "contradicted"
    # a tenth of the training: not comparable, so not tested at this scale, and the fraction is said
    tiny(tmp_path, scale=scale(data=(20000, 20000), epochs=(1, 10), seeds=(5, 5)))
    row = verdict(tmp_path, "2")
    assert row.verdict == "not tested at this scale" and "10 % of the paper's epochs" in row.scale
    # fewer seeds are judged, and said
    tiny(tmp_path, scale=scale(data=(20000, 20000), epochs=(10, 10), seeds=(1, 5)))
    row = verdict(tmp_path, "2")
    assert row.verdict == "confirmed" and row.scale == "paper scale, fewer seeds (1 / 5)"
    # the same at the paper's scale on a CPU: only the device differs from the paper's, and the scale says so
    tiny(tmp_path, device="cpu (AMD EPYC, 2 threads)")
    assert verdict(tmp_path, "2").scale == "paper scale, CPU"


def test_speed_on_another_device_is_not_comparable(tmp_path):
    for name, v in (("absolute", 1.0), ("quantized", 0.98), ("continuous", 0.87)):
        record("table9_compute", name, "relative_speed", v, profile="quick", reports_dir=tmp_path,
               scale=scale(device=("cpu", "NVIDIA GTX 1650 Ti")))
    assert verdict(tmp_path, "L1").verdict == "not comparable"
    for name, v in (("absolute", 1.0), ("quantized", 0.98), ("continuous", 0.87)):
        record("table9_compute", name, "relative_speed", v, profile="paper", reports_dir=tmp_path,
               scale=scale(device=("NVIDIA GTX 1650 Ti", "NVIDIA GTX 1650 Ti")))
    assert verdict(tmp_path, "L1").verdict == "confirmed"


def test_a_slope_claim_needs_its_interval_to_exclude_zero(tmp_path):
    learned = report.learned(0.05, 0.3, "predicting 0")
    fit = report.slope([9, 10, 11, 12, 13, 14], [0.010, 0.0125, 0.009, 0.013, 0.0105, 0.0115])  # barely rising
    assert fit["low"] < 0 < fit["slope"]
    record("fig3_frequency_retention", "1 mode, f >= 9 Hz", "fft_mse_slope_per_hz", fit["slope"], profile="paper",
           scale=scale(epochs=(200, 200)), learned=learned, interval=fit, reports_dir=tmp_path)
    assert verdict(tmp_path, "9").verdict == "not tested at this scale"
    fit = report.slope([9, 10, 11, 12, 13, 14], [0.010, 0.012, 0.0141, 0.0159, 0.018, 0.0202])
    record("fig3_frequency_retention", "1 mode, f >= 9 Hz", "fft_mse_slope_per_hz", fit["slope"], profile="paper",
           scale=scale(epochs=(200, 200)), learned=learned, interval=fit, reports_dir=tmp_path)
    assert verdict(tmp_path, "9").verdict == "confirmed"


def test_coverage_counts_runs_at_the_papers_scale(tmp_path):
    cov = frontpage.coverage(build_summary(tmp_path), tmp_path)
    assert (cov["cells"], cov["with_row"], cov["paper_scale"]) == (25, 0, 0) and cov["peer_cells"] > 0
    tiny(tmp_path, scale=scale(data=(20000, 20000), epochs=(10, 10), seeds=(1, 5)))
    cov = frontpage.coverage(build_summary(tmp_path), tmp_path)
    assert (cov["with_row"], cov["paper_scale"], cov["paper_scale_fewer_seeds"]) == (1, 0, 1)
    tiny(tmp_path)
    assert frontpage.coverage(build_summary(tmp_path), tmp_path)["paper_scale"] == 1


def test_summary_opens_with_the_claims_table(tmp_path):
    tiny(tmp_path)
    build_summary(tmp_path)
    text = (tmp_path / "SUMMARY.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[:3] == ["## The paper's claims", "## Paper artefacts", "## Every row"]
    assert "**Coverage.**" in text.split("## Paper artefacts")[0]


@pytest.mark.parametrize("status, reading", [
    ("within tolerance (fewer seeds)", "supports"), ("worse than S5 (fewer seeds)", "against"),
    ("not comparable (reduced)", "untested"), ("not comparable (other device, reduced)", "device"),
    ("not tested: training flagged (reduced)", "untested"), ("claim holds", "supports"),
    ("claim does not hold", "against"), ("not resolved at this scale", "untested"), ("not run", "untested"),
])
def test_row_readings(status, reading):
    assert frontpage.row_reading(status) == reading


def test_index_opens_with_the_claims_coloured_by_verdict(tmp_path):
    """index.html shows the claims table before the artefacts, each line's colour from its verdict (green for
    confirmed, grey for not tested / not comparable), and the rows' colours from their gated verdicts."""
    from romae.runner import reproduce

    tiny(tmp_path)  # judged: within tolerance -> claim 2 confirmed
    for name, v in (("absolute", 1.0), ("quantized", 0.98), ("continuous", 0.98)):
        record("table9_compute", name, "relative_speed", v, profile="quick", reports_dir=tmp_path,
               scale=scale(device=("cpu", "NVIDIA GTX 1650 Ti")))
    page = reproduce.build_reports(tmp_path).read_text()
    assert page.index("<h2>The paper's claims</h2>") < page.index("<h2>Paper artefacts</h2>")
    claims = page.split('<table class="claims">')[1].split("</table>")[0]
    assert claims.count("<tr class=") == 11
    assert '<tr class="good"><td>2. [CLS] breaks relative position</td><td>confirmed</td>' in claims
    assert '<tr class="untested"><td>L1. Limitation: continuous RoPE costs compute</td><td>not comparable</td>' in claims
    rows = page.split('<table class="summary">')[1].split("</table>")[0]
    speed = next(r for r in rows.split("<tr ")[1:] if "<td>continuous</td>" in r)
    assert speed.startswith('class="untested"')  # measured on another device: grey, whatever the bare comparison
    assert "Coverage." in page.split("<h2>Paper artefacts</h2>")[0]


def test_an_artefact_of_two_notebooks_reads_each_ones_best_run(tmp_path):
    """Table 7 comes from 15 (paper) and 16 (quick only): its code state reads 15's paper run and 16's quick run,
    not 'no record' for a paper run of 16 that never was; a notebook with no run at all stays stale."""
    import json

    from romae.runner import frontpage
    from romae.runner.provenance import record

    def write(path, profile):
        path.parent.mkdir(parents=True, exist_ok=True)
        code = record(["romae/compendium/report.py", "romae/model.py"], ROOT / "notebooks" / "03_compute_cost.ipynb")
        path.write_text(json.dumps(dict(profile=profile, **code)))

    write(tmp_path / "provenance" / "15_interpolation_spiral_synthetic.json", "paper")
    assert frontpage._code_state(["15", "16"], "paper", tmp_path) == \
        "stale: 16_physionet_interpolation: (no record of the code it ran)"
    write(tmp_path / "quick" / "provenance" / "16_physionet_interpolation.json", "quick")
    assert frontpage._code_state(["15", "16"], "paper", tmp_path) == "current"
    edited = tmp_path / "quick" / "provenance" / "16_physionet_interpolation.json"
    rec = json.loads(edited.read_text())
    edited.write_text(json.dumps(dict(rec, numerics={"model": "other-numbers"})))
    assert frontpage._code_state(["15", "16"], "paper", tmp_path) == "stale: numerics of model"
