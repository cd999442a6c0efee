"""The summary of a reports folder: our result rows joined with the paper's values -> summary.csv and SUMMARY.md
(`build_summary`, run by `romae.runner.reproduce`; SUMMARY.md's layout is `romae.runner.frontpage`'s).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..compendium.reference import paper_values
from ..compendium.report import PROFILE_RANK, reports_path, write_atomic
from ..compendium.stats import rederive_verdicts
from ..compendium.verdicts import _parse, comparison, flags_of, interval_text, qualifiers, reference_name, scale_text
from . import claims, judge

# status: the verdict against the reference after the gates (`row_status`); measured: the bare comparison of
# the two numbers (`comparison`), shown for readers, never a verdict
SUMMARY_COLUMNS = ["experiment", "setting", "metric", "reference", "paper", "ours", "ours_std", "n_seeds",
                   "profile", "scale", "status", "measured", "device", "note"]


def build_summary(reports_dir: str | Path | None = None) -> pd.DataFrame:
    """Join our results with the paper's values -> reports/summary.csv and reports/SUMMARY.md."""
    folder = reports_path(reports_dir)
    results = claims.recorded(folder)
    paper = pd.DataFrame(paper_values())
    rows = []

    def ours(r, **extra):
        return dict(experiment=r.experiment, setting=r.setting, metric=r.metric, ours=r.ours, ours_std=r.ours_std,
                    n_seeds=r.n_seeds, profile=r.profile, scale=scale_text(r.scale), device=r.device,
                    note="; ".join(x for x in (rederive_verdicts(str(r.note)) if isinstance(r.note, str) else "",
                                               interval_text(r.interval),
                                               judge.learned_note(r.to_dict()) if _parse(r.learned) else "") if x),
                    **extra)

    for _, p in paper.iterrows():
        mine = results[(results.experiment == p.experiment) & (results.setting == p.setting)
                       & (results.metric == p.metric)]
        if mine.empty:
            rows.append(dict(experiment=p.experiment, setting=p.setting, metric=p.metric,
                             reference=reference_name(p.to_dict()), paper=p.paper, status="not run", note=""))
        for _, r in mine.iterrows():
            rows.append(ours(r, reference=reference_name(p.to_dict()), paper=p.paper,
                             status=judge.judge(p.to_dict(), r.to_dict(), folder / "tables"),
                             measured=comparison(p.to_dict(), r.to_dict())))
    # our rows of a paper experiment and metric that the paper has no value for (e.g. the from-scratch
    # controls): shown, with no reference number and status "no paper value" (qualified by their scale)
    known = set(zip(paper.experiment, paper.setting, paper.metric))
    metrics_of = set(zip(paper.experiment, paper.metric))
    for _, r in results.iterrows():
        if (r.experiment, r.setting, r.metric) not in known and (r.experiment, r.metric) in metrics_of:
            quals = qualifiers(r.scale, r.profile)
            flagged = "training flagged; " if flags_of(r.to_dict()) else ""
            rows.append(ours(r, reference="", paper=None,
                             status=flagged + "no paper value" + (f" ({', '.join(quals)})" if quals else "")))
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    summary["_rank"] = summary.profile.map(PROFILE_RANK).fillna(9)
    summary = summary.sort_values(["experiment", "setting", "metric", "_rank"], kind="stable")
    summary = summary.drop(columns="_rank").reset_index(drop=True)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "summary.csv", summary)
    from . import frontpage

    view, details = claims.claims_view(folder)  # once for both pages
    write_atomic(folder / "SUMMARY.md", frontpage.summary_markdown(summary, folder, view))
    write_atomic(folder / "ROWS.md", frontpage.rows_markdown(summary, details))
    if folder.resolve() == (claims.ROOT / "reports").resolve():  # the committed front page: the README's copy too
        frontpage.write_readme_claims(view, claims.ROOT / "README.md")
    return summary


def artefact_view(summary: pd.DataFrame, reports_dir: str | Path | None = None,
                  runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per paper artefact with the verdicts of its rows (`romae.runner.frontpage.artefact_view`)."""
    from . import frontpage

    return frontpage.artefact_view(summary, reports_dir, runs)
