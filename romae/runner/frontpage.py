"""The front page: SUMMARY.md's layout (the claims table, the coverage line, the artefact table, every row).

Built from summary.csv's rows by `romae.runner.summary.build_summary` (in the runner's process: the notebooks' kernels
never import this module, so its layout can change without making their artefacts stale).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ..compendium.reference import _peer_rows, artefacts, paper_values
from ..compendium.report import PROFILE_RANK, ROOT, _markdown, derived_rows, provenance_of, reports_path
from .provenance import freshness
from ..compendium.verdicts import _parse, paper_scale, qualifiers

ARTEFACT_COLUMNS = ["artefact", "paper", "notebook", "status", "profile", "code", "what"]


def _best_ok_profile(runs: pd.DataFrame | None, notebooks: list[str]) -> str:
    """The best profile with a successful run of any of `notebooks` (NN prefixes) in runs.csv, or ''."""
    if runs is None or runs.empty:
        return ""
    ok = runs[(runs.status == "ok") & runs.notebook.str[:2].isin(notebooks)]
    return min(ok.profile, key=lambda p: PROFILE_RANK.get(p, 9)) if len(ok) else ""


def artefact_view(summary: pd.DataFrame, reports_dir: str | Path | None = None,
                  runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per paper artefact (reference/artefacts.csv): the statuses of its rows at their best
    profile, counted ("2 matches, 1 worse than the paper"), or "not run"; figures also say whether the
    figure file exists. The compact front page, before the long table."""
    folder = reports_path(reports_dir)
    if runs is None and (folder / "runs.csv").exists():
        runs = pd.read_csv(folder / "runs.csv", dtype=str, keep_default_na=False)
    out = []
    for a in artefacts():
        mine = summary[summary.experiment.isin(a["experiments"])]
        best = mine.assign(_r=mine.profile.map(PROFILE_RANK).fillna(9)).sort_values("_r", kind="stable")
        best = best.drop_duplicates(["experiment", "setting", "metric"])  # best profile of each row, every run
        counts = best.status.value_counts()
        state = ", ".join(f"{n} {s}" for s, n in counts.items()) if len(best) else ""
        profiles = [p for p in best.profile.dropna().unique() if p]
        profile = min(profiles, key=lambda p: PROFILE_RANK.get(p, 9)) if profiles else ""
        if a["figure"]:
            made = (folder / "figures" / f"{a['figure']}.png").exists()
            fig = "figure made" if made else "figure not made"
            state = f"{fig}; {state}" if state else (fig + ("" if a["experiments"] else ", no quantitative check"))
            profile = profile or (_best_ok_profile(runs, a["notebook"]) if made else "")
        out.append(dict(artefact=a["artefact"], paper=a["paper_ref"], notebook=" ".join(a["notebook"]),
                        status=state or "not run", profile=profile,
                        code=_code_state(a["notebook"], profile, folder) if profile else "", what=a["what"]))
    return pd.DataFrame(out, columns=ARTEFACT_COLUMNS)


def _code_state(notebooks: list[str], profile: str, folder: Path) -> str:
    """'current', or 'stale: <what changed its numbers since the run>' (`romae.runner.provenance.freshness`) for the runs of an artefact's notebooks: each notebook's
    run in `profile`, or, for a notebook without one (Table 7: 15 ran at the paper's scale, 16 only in quick), its
    best-ranked run, the one whose rows the front page shows for it."""
    stems = sorted({p.stem for nb in notebooks for p in (ROOT / "notebooks").glob(f"{nb}_*.ipynb")})
    changed: set[str] = set()
    for stem in stems:
        record = provenance_of(stem, profile, folder)
        for other in sorted(PROFILE_RANK, key=PROFILE_RANK.get):
            record = record or provenance_of(stem, other, folder)
        state, files = freshness(record)
        changed.update(f"{stem}: {f}" if f.startswith("(") else f for f in files)
    return "current" if not changed else "stale: " + ", ".join(sorted(changed))


CLAIMS_HEAD = """\
## The paper's claims

One line per claim of the paper (`romae/reference/claims.csv`: the nine numbered claims of the paper and two of
its stated limitations), its verdict derived by code from the rows below (`romae.runner.frontpage.claims_view`), never
typed: **confirmed** / **contradicted** when at least one row passed every gate and was judged against the paper
(all judged rows for, or one against); **not comparable** when the rows were measured on another device class;
else **not tested at this scale**, with what it would take. A row passes the gates when its model beat its trivial
predictor, its training carries no flag, and its setup does not differ from the paper's in a way that decides the
outcome (data, model, training length, positions, device; fewer seeds alone are judged, and said).
"""


def summary_markdown(summary: pd.DataFrame, reports_dir=None) -> str:
    """SUMMARY.md: the claims table and the coverage line first, then the paper artefacts, then every row."""
    head = ("# Summary: the paper's claims, its numbers and ours\n\n"
            "Generated by `romae.runner.summary.build_summary` (run `make reproduce`); do not edit by hand.\n"
            "`paper` comes from `romae/reference/paper_values.csv`; `ours` from running the code in the\n"
            "named profile on the named device. **smoke** rows are seconds-long CI runs, not "
            "reproductions; **quick** rows are reduced CPU runs; **paper** rows use the paper's settings.\n\n")
    rows_head = ("Each row's `status` is its verdict against the reference (`paper_values.csv`: `rule`, `tolerance`,\n"
                 "`better`, `reference`: the paper, the authors' code or a peer) after the gates: 'not tested: training\n"
                 "flagged', 'not tested: the model did not learn' (it did not beat its trivial predictor), 'not comparable'\n"
                 "(stand-in data, another device class, positions rescaled, or a fraction of the paper's training or data);\n"
                 "else matches / within tolerance / better or worse than the reference / claim holds or not (a statement\n"
                 "in words checked as a number: with an interval, it holds only when the whole interval does). `measured` is\n"
                 "the bare comparison of the two numbers, shown for the reader, never a verdict. The qualifiers in brackets\n"
                 "come from the row's `scale` fields (ours / the paper's), never from its note: 'reduced', 'fewer seeds',\n"
                 "'stand-in', 'other device', 'positions rescaled'. Paired comparisons in the notes carry their 95 % t interval\n"
                 "(n - 1 degrees of freedom); those a run judged by the retired 2-standard-error rule are re-derived and\n"
                 "marked. `code`: 'current' while the code the run imported would compute the same numbers (its library\n"
                 "paths' numerics fingerprints, its other modules' definitions and its notebook's code, in `provenance/`:\n"
                 "docs/house.md), else 'stale', naming what changed.\n\n")
    return (head + CLAIMS_HEAD + "\n" + _markdown(claims_view(summary, reports_dir)) + "\n"
            + coverage_text(coverage(summary, reports_dir)) +
            "\n## Paper artefacts\n\n" + _markdown(artefact_view(summary, reports_dir)) +
            "\n## Every row\n\n" + rows_head + _markdown(summary.astype(object).where(summary.notna(), "")))


# --- the claims table: one line per claim of the paper, its verdict derived from the rows -------------------

CLAIMS = Path(__file__).resolve().parents[1] / "compendium" / "reference" / "claims.csv"
CLAIM_COLUMNS = ["claim", "verdict", "evidence", "scale", "device", "code", "to test it"]
# the words of a row's verdict (`romae.compendium.report.row_status`) that say how it reads, for a claim and for the pages
SUPPORTS = ("matches", "within tolerance", "better than", "claim holds")
AGAINST = ("worse than", "does not hold", "differs")
UNTESTED = ("not tested", "not comparable", "not run", "no paper value", "not resolved", "training flagged")


def claims() -> list[dict]:
    """The paper's claims and stated limitations that the compendium measures (`reference/claims.csv`): claim (1-9,
    L1, L2), title, statement, evidence [(experiment, setting pattern, metric)], notebooks, reading."""
    import csv

    with open(CLAIMS, newline="") as f:
        out = []
        for row in csv.DictReader(f):
            evidence = [tuple(e.split("|")) for e in row["evidence"].split(";") if e.strip()]
            if any(len(e) != 3 for e in evidence):
                raise ValueError(f"{CLAIMS.name}: claim {row['claim']}: evidence must be experiment|setting|metric")
            out.append(dict(row, evidence=evidence, notebooks=row["notebooks"].split()))
        return out


def row_reading(status: str) -> str:
    """How a summary row's verdict counts for a claim: 'supports' (matches, within tolerance, better than the
    reference, claim holds), 'against' (worse, differs, claim does not hold), 'device' (not comparable: measured
    on another device class) or 'untested' (not run, not tested, not comparable, not resolved, no reference)."""
    s = str(status or "").lower()
    if s.startswith("not comparable") and "other device" in s:
        return "device"
    if s.startswith(UNTESTED):
        return "untested"
    if any(w in s for w in AGAINST):
        return "against"
    if any(w in s for w in SUPPORTS):
        return "supports"
    return "untested"


def evidence_rows(summary: pd.DataFrame, evidence) -> pd.DataFrame:
    """The summary rows a claim rests on: those matching its (experiment, setting pattern, metric), at the best
    profile of each (paper > quick > smoke; rows not run yet included)."""
    from fnmatch import fnmatchcase

    # only rows with a reference value: a claim is judged against the paper's numbers (or the peer it names)
    hit = [any(r.experiment == e and fnmatchcase(str(r.setting), s) and r.metric == m for e, s, m in evidence)
           and isinstance(r.reference, str) and r.reference.strip() != "" for r in summary.itertuples()]
    rows = summary[hit] if len(summary) else summary
    if rows.empty:
        return rows
    rank = rows.profile.map(PROFILE_RANK).fillna(9)
    return rows.assign(_r=rank).sort_values("_r", kind="stable").drop_duplicates(
        ["experiment", "setting", "metric"]).drop(columns="_r")


def claim_verdict(readings: list[str]) -> str:
    """confirmed: at least one row judged and none against; contradicted: a judged row against the claim;
    not comparable: nothing judged and the rows were measured on another device class; else not tested."""
    if "against" in readings:
        return "contradicted"
    if "supports" in readings:
        return "confirmed"
    if readings and all(r == "device" for r in readings):
        return "not comparable"
    return "not tested at this scale"


def _fraction(scale_cell) -> str:
    """'5 % of the paper's steps' from a row's scale: the smallest of ours / the paper's over its numeric
    training fields (steps, epochs, data), '' when none is smaller."""
    fields = _parse(scale_cell) if isinstance(scale_cell, str) else None
    best = None
    for k in ("steps", "epochs", "data"):
        ours, paper = (fields or {}).get(k, (None, None))
        if isinstance(ours, (int, float)) and isinstance(paper, (int, float)) and paper > 0 and ours < paper:
            if best is None or ours / paper < best[0]:
                best = (ours / paper, k)
    return "" if best is None else f"{100 * best[0]:.2g} % of the paper's {best[1]}"


def _on_cpu_only(device_cell) -> bool:
    """A row's device column ('cpu (...); torch ...' or 'trained on NVIDIA H200, cpu (...); published on ...'): every
    device its trainings ran on is a CPU."""
    first = str(device_cell).split(";")[0].lower()
    while (bare := re.sub(r"\([^()]*\)", "", first)) != first:  # innermost parentheses first: 'cpu (Intel(R) Xeon(R) ...)'
        first = bare
    return all(part.strip().startswith("cpu") for part in first.removeprefix("trained on ").split(","))


def _scale_of(rows: pd.DataFrame, results: pd.DataFrame) -> str:
    """The scale a claim's rows were run at, from their scale facts: 'paper scale', 'paper scale, fewer seeds
    (1 / 5)', or the smallest fraction and the qualifiers of a reduced run."""
    if rows.empty or rows.profile.isna().all():
        return "not run"
    out = []
    for r in rows[rows.profile.notna()].itertuples():
        raw = results[(results.experiment == r.experiment) & (results.setting == r.setting)
                      & (results.metric == r.metric) & (results.profile == r.profile)]
        cell = raw.scale.iloc[0] if len(raw) else None
        quals = qualifiers(cell, r.profile)
        # at the paper's scale on a CPU: only the device differs (the paper trained on GPUs), said so
        cpu = ", CPU" if len(raw) and _on_cpu_only(raw.device.iloc[0]) else ""
        if not quals:
            text = "paper scale" + cpu
        elif quals == ["fewer seeds"]:
            text = f"paper scale, fewer seeds ({_pair(cell, 'seeds')}){cpu}"
        else:
            text = ", ".join(x for x in (_fraction(cell), ", ".join(quals)) if x)
        out.append(text)
    return "; ".join(dict.fromkeys(out))


def _pair(scale_cell, field: str) -> str:
    ours, paper = (_parse(scale_cell) or {}).get(field, ("?", "?"))
    return f"{ours} / {paper}"


def planned_hours(plan_json: Path | None = None) -> dict[str, tuple[str, str]]:
    """{notebook: (hours FP32, hours BF16)} of the paper profile on one H100, from the plan `make plan` writes
    (reports/plan/paper_h100.json, `python -m romae.bench plan ... --out`); {} without it."""
    import json

    from ..compendium.plan import _hours

    path = plan_json or ROOT / "reports" / "plan" / "paper_h100.json"
    try:
        totals = json.loads(path.read_text())["totals"]
    except (OSError, ValueError, KeyError):
        return {}
    return {nb: (_hours(t.get("fp32")), _hours(t.get("bf16"))) for nb, t in totals.items() if nb != "all"}


def _to_test(claim: dict, verdict: str, rows: pd.DataFrame, hours: dict) -> str:
    """What it would take to test the claim at the paper's scale: the paper profile of its notebooks, with the
    plan's hours on one H100 where the plan has them (`hours`: `planned_hours`)."""
    if verdict in ("confirmed", "contradicted") and not rows.empty and (rows.profile == "paper").all():
        return ""
    if claim["claim"] == "L1":
        return "`make bench` on a GPU of the paper's class (Table 9: an NVIDIA GTX 1650 Ti)"
    parts = []
    for nb in claim["notebooks"]:
        h = hours.get(nb)
        parts.append(f"{nb}: {h[0]} h FP32 / {h[1]} h BF16" if h else nb)
    return ("`make reproduce PROFILE=paper ONLY=" + ",".join(claim["notebooks"]) + "`" +
            (f" (plan, one H100: {'; '.join(parts)})" if hours else ""))


def claims_view(summary: pd.DataFrame, reports_dir=None) -> pd.DataFrame:
    """The claims table: one row per claim (`claims`), its verdict derived by `claim_verdict` from the verdicts of
    its evidence rows in the summary (`row_reading`), those rows, the scale and device they were run at, whether
    their code is current, and what it would take to test it at the paper's scale."""
    folder = reports_path(reports_dir)
    results = _results(folder)
    names = {e: a["paper_ref"] for a in artefacts() for e in a["experiments"]}
    hours = planned_hours()
    out = []
    for c in claims():
        rows = evidence_rows(summary, c["evidence"])
        readings = [row_reading(s) for s in rows.status] if len(rows) else []
        verdict = claim_verdict(readings)
        judged = [x in ("supports", "against") for x in readings]
        if any(judged):  # the judged rows first; the scale is theirs
            rows = pd.concat([rows[judged], rows[[not j for j in judged]]])
        n = sum(judged)
        evidence = (f"{n} of {len(rows)} rows judged: " + "; ".join(
            f"{names.get(r.experiment, r.experiment)} {r.setting}: {r.status}" for r in rows.itertuples())
            if len(rows) else "no row")
        scale_rows = rows.iloc[:n] if n else rows
        devices = sorted({str(d).split(";")[0] for d in rows.device.dropna() if str(d).strip()}) if len(rows) else []
        profiles = [p for p in rows.profile.dropna().unique()] if len(rows) else []
        profile = min(profiles, key=lambda p: PROFILE_RANK.get(p, 9)) if profiles else ""
        code = _code_state(c["notebooks"], profile, folder) if profile else ""
        out.append({"claim": f"{c['claim']}. {c['title']}", "verdict": verdict, "evidence": evidence,
                    "scale": _scale_of(scale_rows, results), "device": ", ".join(devices),
                    "code": code.split(":")[0] if code else "", "to test it": _to_test(c, verdict, rows, hours)})
    return pd.DataFrame(out, columns=CLAIM_COLUMNS)


def _results(folder: Path) -> pd.DataFrame:
    """The recorded rows of `folder`'s results.csv with the checks derived from them (`report.derived_rows`):
    the raw scale facts behind the summary's rows."""
    if not (folder / "results.csv").exists():
        return pd.DataFrame(columns=["experiment", "setting", "metric", "profile", "scale"])
    results = pd.read_csv(folder / "results.csv")
    return pd.concat([results, derived_rows(results)], ignore_index=True) if len(results) else results


def coverage(summary: pd.DataFrame, reports_dir=None) -> dict:
    """How much of the paper's result tables (1-7 and 9) our rows cover: RoMAE's own numeric cells (the paper's
    values in `paper_values.csv`), those with a row of ours, those from a run at the paper's own scale (and with
    fewer seeds allowed); the comparators' published cells (`peer_values.csv`), quoted, never re-run."""
    results = _results(reports_path(reports_dir))
    tables = ("table1_", "table2_", "table3_", "table4_", "table5_", "table6_", "table7_", "table9_")
    cells = [p for p in paper_values() if p["experiment"].startswith(tables) and p["reference"] == "paper"]
    peers = [p for p in _peer_rows() if p["experiment"].startswith(tables) and "RoMAE" not in p["model"]]
    with_row = full = seeds = 0
    for p in cells:
        mine = results[(results.experiment == p["experiment"]) & (results.setting == p["setting"])
                       & (results.metric == p["metric"])]
        with_row += bool(len(mine))
        full += any(paper_scale(r.scale, r.profile) for r in mine.itertuples())
        seeds += any(paper_scale(r.scale, r.profile, allow_fewer_seeds=True) for r in mine.itertuples())
    return dict(cells=len(cells), with_row=with_row, paper_scale=full, paper_scale_fewer_seeds=seeds,
                peer_cells=len(peers))


def coverage_text(cov: dict) -> str:
    return (f"**Coverage.** Of RoMAE's own {cov['cells']} numeric cells in the paper's Tables 1-7 and 9, "
            f"{cov['with_row']} have a row of ours; **{cov['paper_scale']}** "
            f"{'comes' if cov['paper_scale'] == 1 else 'come'} from a run at the paper's own scale "
            f"({cov['paper_scale_fewer_seeds']} if fewer seeds are allowed). The comparators' {cov['peer_cells']} "
            f"published cells in those tables are quoted for reference, never re-run.\n")


def status_class(state: str) -> str:
    """The CSS class of a verdict on the pages (a claim's, a row's, or an artefact's count of its rows' verdicts),
    from the verdicts after the gates, never the bare comparison: 'good' (confirmed; every judged row for),
    'bad' (contradicted; a judged row against; a failed run), 'mixed' (rows for beside rows not tested),
    'untested' (grey: not tested, not comparable, no reference), 'not-run', or 'neutral'."""
    text = str(state or "").lower()
    if "no quantitative check" in text:  # a figure that exists proves nothing by itself
        return "neutral"
    if text.startswith("skipped"):  # its data is missing here: not a failure, not a result
        return "not-run"
    if text.startswith("contradicted") or any(w in text for w in (*AGAINST, "failed", "interrupted")):
        return "bad"
    untested = any(w in text for w in UNTESTED)
    if text.startswith("confirmed") or any(w in text for w in SUPPORTS) or text == "ok":
        return "mixed" if untested else "good"
    if untested:
        return "untested" if not text.startswith("not run") else "not-run"
    return "not-run" if "not made" in text else "neutral"


def claims_html_intro() -> str:
    """The index page's paragraph above the claims table (the same rules as SUMMARY.md's)."""
    import html
    import re

    text = re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(CLAIMS_HEAD.split("\n", 2)[2].strip()))
    return "<p>" + re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text) + "</p>"
