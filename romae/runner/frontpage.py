"""The front page: SUMMARY.md's layout (the claims table, the coverage line, the artefact table, every row).

Built from summary.csv's rows by `romae.runner.summary.build_summary` (in the runner's process: the notebooks' kernels
never import this module, so its layout can change without making their artefacts stale).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..compendium.reference import _peer_rows, artefacts, paper_values
from ..compendium.report import PROFILE_RANK, _markdown, reports_path
from ..compendium.verdicts import LEARN_FACTOR, paper_scale
from . import judge
from .provenance import code_state as _code_state  # noqa: F401 (tests and pages read it here)

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


RULES = f"""\
**How a claim is judged** (`romae/compendium/reference/claims.csv` says what each claim asserts and against what;
`romae.runner.claims` derives the verdict, never typed). **Like for like**: a comparison is judged only in one
unit and one protocol; a peer's number counts only when our row follows its protocol
(`romae/compendium/reference/peer_protocols.csv`), else the cell reads *other protocol*; a peer's number whose unit
its paper leaves to be read is compared as read, the reading and its grounds stated beside the number
(`paper_values.csv`: ContiFormer's Spiral RMSE, read as x1e-2); where a claim's own
comparison mixes units, its number is checked in the paper's unit (reproduced or not) and the claim is judged in
the comparator's unit. Each evidence cell is read from our best row: *for* (matches, within tolerance or better
than its reference; a claim in words that holds), *at ceiling* (for, but a trivial predictor or a standard baseline
run beside ours reaches the reference too: it cannot tell models apart), *against* (worse than a comparator the claim
says it beats), *not reproduced* (our number differs from the paper's),
*not tested* (not run, a gate failed, not resolved at this scale, a reduced run), *other device* or *other protocol*.
A claim is **confirmed** when every cell is for, **partially confirmed** when some are for and the others are not
(each named), **contradicted** when some are against and none for, **not reproduced** when our numbers differ and
none is for or against, **insufficient evidence (k of n tested)** when the tested cells are all at ceiling,
**not comparable** when every cell is on another device class or protocol, else **not tested at this scale**. A row
is judged only when it passes the gates, the same in the notebooks: its model learned (its error, or the upper end
of its 95 % t interval over seeds, at most {LEARN_FACTOR:g}x the trivial predictor's: a ratio the paper's own numbers
pass), its training carries no flag, and its setup does not differ from the paper's in a way that decides the
outcome (data, model, training length, positions, device; fewer seeds are judged, and said). Every seed counts: a
row is judged on the mean and t interval of all its seeds, each seed's value listed beside it; none is left out.
"""


def summary_markdown(summary: pd.DataFrame, reports_dir, view: pd.DataFrame) -> str:
    """SUMMARY.md: a six-line headline, the claims table `view` (`romae.runner.claims.claims_view`), the paper
    artefacts; every row is on ROWS.md."""
    from . import claims

    folder = reports_path(reports_dir)
    head = ("# RoMAE reproduced: which of the paper's claims hold\n\n"
            "Generated by `romae.runner.summary.build_summary` (`make reproduce`); do not edit by hand.\n\n")
    return (head + claims.headline(view, coverage(summary, folder)) +
            "\n## The paper's claims\n\n" + _markdown(view) + "\n" + RULES +
            "\n## Paper artefacts\n\n" + _markdown(artefact_view(summary, folder)) +
            "\nEvery row, quick runs under their paper rows: [ROWS.md](ROWS.md) (also `summary.csv`).\n")


ROWS_HEAD = ("Each row's `status` is its verdict against the reference (`paper_values.csv`: `rule`, `tolerance`, `better`,\n"
             "`reference`: the paper, the authors' code or a peer) after the gates (SUMMARY.md's rules): 'not tested: training\n"
             "flagged', 'not tested: the model did not learn', 'not comparable' (stand-in data, another device class,\n"
             "positions rescaled, or a fraction of the paper's training or data); else matches / within tolerance /\n"
             "better or worse than the reference / claim holds or not / not reproduced (and why). `measured` is the bare\n"
             "comparison of the two numbers, never a verdict. Qualifiers in brackets come from the row's `scale` fields\n"
             "(ours / the paper's). `device`: who trained (device, torch, CUDA), then who published. A quick row sits\n"
             "under the paper row of the same cell (marked `quick, under paper`).\n\n")

ROW_COLUMNS = ["experiment", "setting", "metric", "reference", "paper", "ours", "ours_std", "n_seeds", "profile",
               "status", "device", "scale", "note"]


def rows_markdown(summary: pd.DataFrame, details: list[dict]) -> str:
    """ROWS.md: every claim's cells (`details`, from `romae.runner.claims.claims_view`; anchored 'claim-N' for
    SUMMARY.md's links), then every row of summary.csv, a lesser profile's row under the best one of the same cell."""
    from . import claims

    out = ["# Every row: the claims' evidence and all results\n",
           "Generated by `romae.runner.summary.build_summary`; the front page is [SUMMARY.md](SUMMARY.md).\n",
           "## The claims' evidence\n"]
    for d in details:
        c = d["claim"]
        out.append(f'<a id="claim-{c["claim"].lower()}"></a>\n\n### {c["claim"]}. {c["title"]}: {d["outcome"]}\n')
        out.append(f"*Asserts*: {c['asserts']}. *Judged against*: {c['against']}."
                   + (f" *Its own comparison*: {d['mismatch']}." if d["mismatch"] else "") + "\n")
        lines = []
        for cell in d["cells"]:
            r, ref = cell["row"], cell["reference"]
            ours = "not run" if r is None else f"{float(r['ours']):.4g}" + (
                f" +- {float(r['ours_std']):.2g}" if pd.notna(r.get("ours_std")) else "") + \
                f" ({r['profile']}, {int(float(r['n_seeds'])) if pd.notna(r.get('n_seeds')) else '?'} seed(s))"
            lines.append(dict(cell=claims.name_of(cell), reference=f"{ref['paper']:g} ({ref.get('reference', 'paper')})",
                              ours=ours, reading=cell["reading"], status=cell["status"],
                              device=claims.device_text(r.get("device")) if r is not None else ""))
        out.append(_markdown(pd.DataFrame(lines)) if lines else "no evidence cell\n")
    table = summary.astype(object).where(summary.notna(), "")
    shown = []
    last, prev = None, ""
    for r in table.to_dict("records"):
        key = (r["experiment"], r["setting"], r["metric"])
        r = dict(r, device=claims.device_text(r["device"]))
        if key == last:
            r = dict(r, experiment="", setting="", metric="", profile=f"{r['profile']}, under {prev}")
        else:
            prev = r["profile"]
        last = key
        shown.append({k: r.get(k, "") for k in ROW_COLUMNS})
    out += ["## Every row\n", ROWS_HEAD, _markdown(pd.DataFrame(shown, columns=ROW_COLUMNS))]
    return "\n".join(out)


# --- helpers of the claims table (romae.runner.claims) ------------------------------------------------------

def coverage(summary: pd.DataFrame, reports_dir=None) -> dict:
    """How much of the paper's result tables (1-7 and 9) our rows cover: RoMAE's own numeric cells (the paper's
    values in `paper_values.csv`), those with a row of ours, those from a run at the paper's own scale (and with
    fewer seeds allowed); the comparators' published cells (`peer_values.csv`), quoted, never re-run."""
    from . import claims

    folder = reports_path(reports_dir)
    results = claims.results(folder)
    tables = ("table1_", "table2_", "table3_", "table4_", "table5_", "table6_", "table7_", "table9_")
    cells = [p for p in paper_values() if p["experiment"].startswith(tables) and p["reference"] == "paper"]
    peers = [p for p in _peer_rows() if p["experiment"].startswith(tables) and "RoMAE" not in p["model"]]
    with_row = full = seeds = judged = 0
    for p in cells:
        mine = results[(results.experiment == p["experiment"]) & (results.setting == p["setting"])
                       & (results.metric == p["metric"])]
        with_row += bool(len(mine))
        full += any(paper_scale(r.scale, r.profile) for r in mine.itertuples())
        seeds += any(paper_scale(r.scale, r.profile, allow_fewer_seeds=True) for r in mine.itertuples())
        best = claims.best_row(results, p["experiment"], p["setting"], p["metric"])
        judged += best is not None and claims.reading(judge.judge(p, best, folder / "tables")) in claims.JUDGED
    from ..compendium import travel

    return dict(cells=len(cells), with_row=with_row, paper_scale=full, paper_scale_fewer_seeds=seeds,
                peer_cells=len(peers), judged=judged, in_progress=travel.listing(folder / "trainings"))


def coverage_text(cov: dict) -> str:
    return (f"**Coverage.** Of RoMAE's own {cov['cells']} numeric cells in the paper's Tables 1-7 and 9, "
            f"{cov['with_row']} have a row of ours; **{cov['paper_scale']}** "
            f"{'comes' if cov['paper_scale'] == 1 else 'come'} from a run at the paper's own scale "
            f"({cov['paper_scale_fewer_seeds']} if fewer seeds are allowed). The comparators' {cov['peer_cells']} "
            f"published cells in those tables are quoted for reference, never re-run.\n")


def status_class(state: str) -> str:
    """The CSS class of a verdict on the pages (a claim's, a row's, or an artefact's count of its rows' verdicts),
    from the verdicts after the gates, never the bare comparison: 'good' (confirmed; every judged row for),
    'bad' (contradicted; a row against; a failed run), 'mixed' (partially confirmed; not reproduced; rows for beside
    rows not tested), 'untested' (grey: not tested, not comparable, no reference), 'not-run', or 'neutral'."""
    from .claims import AGAINST, SUPPORTS, UNTESTED

    text = str(state or "").lower()
    if "no quantitative check" in text:  # a figure that exists proves nothing by itself
        return "neutral"
    if text.startswith("skipped"):  # its data is missing here: not a failure, not a result
        return "not-run"
    if text.startswith(("partially confirmed", "not reproduced")):
        return "mixed"
    if text.startswith("contradicted") or any(w in text for w in (*AGAINST, "failed", "interrupted")):
        return "bad"
    if "not reproduced" in text:
        return "mixed"
    untested = any(w in text for w in UNTESTED)
    if text.startswith("confirmed") or any(w in text for w in SUPPORTS) or text == "ok":
        return "mixed" if untested else "good"
    if untested:
        return "untested" if not text.startswith("not run") else "not-run"
    return "not-run" if "not made" in text else "neutral"


def inline_html(markdown: str) -> str:
    """One line or paragraph of the front page's Markdown as HTML: escaped, `code`, **strong**, *em*, [links](...)."""
    import html
    import re

    text = re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(markdown))
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"\*([^*]+)\*", r"<em>\1</em>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', text)


def claims_html_intro() -> str:
    """The index page's paragraph under the claims table (SUMMARY.md's rules)."""
    return "<p>" + inline_html(RULES.strip()) + "</p>"


README_CLAIMS = ("<!-- claims:begin (written by make reproduce from the front page's claims table) -->",
                 "<!-- claims:end -->")


def readme_claims(view: pd.DataFrame) -> str:
    """The README's claims table: the front page's claim and verdict columns (`romae.runner.claims.claims_view`)."""
    lines = ["| claim of the paper | verdict |", "|---|---|"]
    return "\n".join(lines + [f"| {r.claim} | {r.verdict} |" for r in view.itertuples()]) + "\n"


def write_readme_claims(view: pd.DataFrame, path: Path) -> bool:
    """Replace the README's claims table (between README_CLAIMS) by `readme_claims(view)` -> whether it changed;
    ValueError when the markers are missing."""
    text = Path(path).read_text()
    begin, end = README_CLAIMS
    if begin not in text or end not in text:
        raise ValueError(f"{path} has no {begin} ... {end} markers for the claims table")
    head, rest = text.split(begin, 1)
    new = f"{head}{begin}\n{readme_claims(view)}{end}{rest.split(end, 1)[1]}"
    if new != text:
        Path(path).write_text(new)
    return new != text

