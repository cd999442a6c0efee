"""What a run leaves besides its own files, built from what is on disk: SUMMARY.md's sections (runs, trainings,
variants), each variant's own summary, the HTML pages of the executed notebooks and index.html. Used by
`romae.runner.reproduce` (`build_reports`).
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import shutil
from pathlib import Path

import pandas as pd

from . import claims, frontpage, provenance
from ..compendium import report, trainings
from ..compendium.report import _slug
from .staging import MATHJAX_URL, all_runs, latest_runs, mathjax_src, redact_file, redactor, runs_with_variants
from .summary import artefact_view, build_summary
# MathJax 2.7 as shipped by jupyter-server-mathjax: the combined TeX + HTML-CSS configuration and the
# files it loads on demand (STIX web fonts; no SVG output, no translations) -- about 2.5 MB.
MATHJAX_PARTS = ("MathJax.js", "LICENSE", "config/TeX-AMS-MML_HTMLorMML-full.js", "config/Safe.js",
                 "extensions", "jax/input/TeX", "jax/element/mml", "jax/output/HTML-CSS",
                 "fonts/HTML-CSS/STIX-Web/woff")
MATHJAX_SKIP = ("a11y", "HTML-CSS", "MathML")  # sub-folders of extensions/ that the pages never load
# The package has only the STIX-Web fonts; MathJax's default web font (TeX) would be missing.
MATHJAX_LOCAL_CONFIG = """\
MathJax.Hub.Config({"HTML-CSS": {availableFonts: [], webFont: "STIX-Web", imageFont: null},
                    menuSettings: {renderer: "HTML-CSS"}});
MathJax.Ajax.loadComplete("[MathJax]/config/local/romae.js");
"""
# MATHJAX_URL (the src a page in <reports>/html/ loads MathJax from) lives in staging, which rewrites it


def add_runs_section(reports: Path) -> None:
    """Append the latest run of every notebook and profile to SUMMARY.md; failures in bold."""
    runs = latest_runs(reports)
    if runs.empty:
        return
    runs["status"] = runs.status.map(lambda s: f"**{s.upper()}**" if s not in ("ok", "skipped") else s)
    text = ("\n## Runs\n\nLatest run of each notebook per profile (`python -m romae.runner.reproduce`; full log in "
            "`runs.csv`; executed notebooks in `executed/`, as HTML in `index.html`).\n\n")
    skipped = paper_skipped(runs)
    if skipped:
        text += (f"**Paper profile incomplete: {incomplete_text(skipped)}** in their latest paper-profile run; the "
                 "paper's tables they make were not regenerated at the paper's scale (their rows above come from "
                 "other profiles, if any).\n\n")
    path = reports / "SUMMARY.md"
    report.write_atomic(path, path.read_text() + text + report._markdown(runs))


def add_trainings_section(reports: Path) -> None:
    """Append the committed record of finished paper trainings (<reports>/trainings/, `romae.compendium.trainings`) to SUMMARY.md:
    per training name and device, how many are kept, current or stale, their wall time beside the plan's, peak memory."""
    folder = reports / "trainings"
    if not folder.is_dir():
        return
    table = trainings.table(folder)
    if table.empty:
        return
    g = trainings.grouped(table)
    stale = int(g.stale.sum())
    aside = int(table.action.eq(trainings.SET_ASIDE).sum())
    devices = ", ".join(sorted(set(table.device)))
    text = ("\n## Finished paper trainings kept\n\nEvery training of a paper-profile run is kept in `trainings/` "
            "when it finishes (`python -m romae.compendium.trainings`): a run done in pieces trains only what is missing. "
            f"{len(table)} kept ({devices}); "
            + (f"**{stale - aside} stale** (their code would compute other numbers now: retrained when next run)"
               if stale - aside else "")
            + (f"{'; ' if stale - aside else ''}**{aside} set aside** (damaged or not the training their name says: "
               "never used; retrained when a run asks for them; `python -m romae.trainings` says why)" if aside else "")
            + ("" if stale else "all current")
            + ". wall / planned: the measured hours beside `romae.compendium.plan`'s estimate for the device, as the plan stood "
            "when it trained, recorded then (the reference CPU on a CPU); ratio: their quotient.\n\n")
    path = reports / "SUMMARY.md"
    report.write_atomic(path, path.read_text() + text + report._markdown(g))


def paper_skipped(runs: pd.DataFrame) -> list[str]:
    """The notebooks whose latest paper-profile run (the notebook's own parameters) was skipped for missing
    data, from `latest_runs`."""
    rows = runs[(runs.profile == "paper") & (runs.params.fillna("") == "")]
    return sorted(rows.notebook[rows.status.str.strip("*").str.lower() == "skipped"])


# ---------------------------------------------------------------- variants: runs with other parameters

VARIANT_COLUMNS = ["variant", "notebook", "profile", "params", "code"]


def variant_table(reports: Path) -> pd.DataFrame:
    """One row per folder of <reports>/variants/: its notebook, profile and parameters (as runs.csv wrote them,
    else as its folder name says), and `code`: 'current' when its provenance record
    (variants/<variant>/provenance/<notebook>.json) matches the files on disk, else 'stale: <why>' (a variant
    without a record, from before records were kept, is stale: nobody can say which code made it)."""
    # a folder holding only the runs.csv of failed runs is no variant (yet)
    folders = sorted(p for p in (reports / "variants").glob("*") if (p / "executed").is_dir()) \
        if (reports / "variants").is_dir() else []
    runs = runs_with_variants(reports)
    runs = runs[(runs.params != "") & (runs.status == "ok")]
    slugs = {_slug([r.notebook, r.profile, *r.params.split("; ")]): r.params for r in runs.itertuples()}
    rows = []
    for folder in folders:
        parts = folder.name.split("--")  # <notebook>--<profile>--<name=value>...
        notebook, profile, params = parts[0], (parts[1:2] or [""])[0], parts[2:]
        state, changed = provenance.freshness(report.provenance_of(notebook, profile, folder))
        rows.append(dict(variant=folder.name, notebook=notebook, profile=profile,
                         params=slugs.get(folder.name, "; ".join(params)),
                         code=state if state == "current" else f"stale: {', '.join(changed)}"))
    return pd.DataFrame(rows, columns=VARIANT_COLUMNS)


def build_variants(reports: Path) -> pd.DataFrame:
    """Each variant's own summary (<reports>/variants/<variant>/summary.csv and SUMMARY.md, from its own
    results.csv: `build_summary`, headed by what the variant is), then a "Variants" section at the end of
    the main SUMMARY.md listing them (call it right after build_summary and add_runs_section, as build_reports
    does); -> `variant_table`."""
    table = variant_table(reports)
    for v in table.itertuples():
        build_variant(reports, v)
    if len(table):
        listed = table.assign(variant=[f"[{v}](variants/{v}/) ([summary](variants/{v}/SUMMARY.md))"
                                       for v in table.variant])
        text = ("\n## Variants\n\nRuns with other notebook parameters (`python -m romae.runner.reproduce --param "
                "name=value`), each kept apart in `variants/<variant>/` with its own executed notebook, tables, "
                "figures, `results.csv`, provenance record and summary; none of their rows is in the tables above "
                "or in the paper artefacts' status. `code`: current or stale, as above.\n\n")
        path = reports / "SUMMARY.md"
        report.write_atomic(path, path.read_text() + text + report._markdown(listed))
    return table


def build_variant(reports: Path, v) -> Path:
    """One variant's own summary.csv and SUMMARY.md (from its own results.csv, headed by what the variant is;
    `v`: its row of `variant_table`) and its page, all inside its folder -> the folder."""
    folder = reports / "variants" / v.variant
    build_summary(folder)
    head = (f"# Variant {v.variant}\n\nA run of notebook `{v.notebook}` in the **{v.profile}** profile with other "
            f"parameters than its own (`{v.params}`): its numbers are not the compendium's reproduction of the "
            f"paper and count in none of the main summary's statuses. Code: **{v.code}**. Executed notebook: "
            f"`executed/{v.notebook}.ipynb`; page: `{v.notebook}.html`.\n\n")
    path = folder / "SUMMARY.md"
    body = path.read_text()
    rows = (folder / "ROWS.md").read_text().split("\n## Every row\n", 1) if (folder / "ROWS.md").exists() else []
    body += ("\n## Every row\n" + rows[1]) if len(rows) == 2 else ""  # a variant's few rows on its own page
    report.write_atomic(path, head + ("#" + body if body.startswith("# ") else body))  # its title, one level down
    redact = redactor(reports)
    for path in (folder / "SUMMARY.md", folder / "summary.csv", folder / "ROWS.md"):
        if path.exists():
            redact_file(path, redact)
    executed = folder / "executed" / f"{v.notebook}.ipynb"
    if executed.exists():
        render_page(reports, executed, folder / f"{v.notebook}.html")
    return folder


def build_reports(reports: Path, variants: list[str] | None = None) -> Path:
    """Everything a run leaves besides its own files, from what is on disk: summary.csv and SUMMARY.md (with
    the runs and the variants), each variant's summary, the HTML pages and index.html, none with this
    machine's paths -> index.html. `variants`: only these variants ran: their own folders are rebuilt and no
    tracked file outside them changes (the main pages list them the next time they are built) -> the first's
    folder."""
    if variants:
        table = variant_table(reports)
        table = table[table.variant.isin(variants)]
        built = [build_variant(reports, v) for v in table.itertuples()]
        return built[0] if built else reports / "variants"
    build_summary(reports)
    add_runs_section(reports)
    add_trainings_section(reports)
    build_variants(reports)  # each variant's own files are redacted by build_variant
    redact = redactor(reports)
    for path in (reports / "SUMMARY.md", reports / "summary.csv", reports / "ROWS.md"):
        if path.exists():
            redact_file(path, redact)
    return build_index(reports)


# ---------------------------------------------------------------- HTML

def vendor_mathjax(html_dir: Path) -> Path:
    """Copy the minimal MathJax into <html_dir>/mathjax/ (from the jupyter-server-mathjax package)."""
    import jupyter_server_mathjax

    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    dest = html_dir / "mathjax"
    for part in MATHJAX_PARTS:
        target = dest / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if (src / part).is_dir():
            shutil.copytree(src / part, target, dirs_exist_ok=True,
                            ignore=lambda d, names: [n for n in names if n in MATHJAX_SKIP and
                                                     Path(d).name == "extensions"])
        else:
            shutil.copy2(src / part, target)
    (dest / "config" / "local").mkdir(parents=True, exist_ok=True)
    (dest / "config" / "local" / "romae.js").write_text(MATHJAX_LOCAL_CONFIG)
    return dest


def render_notebooks(reports: Path, force: bool = False) -> list[Path]:
    """<reports>/executed/*.ipynb -> <reports>/html/*.html (only new or changed ones unless `force`)."""
    html_dir = reports / "html"
    html_dir.mkdir(parents=True, exist_ok=True)
    vendor_mathjax(html_dir)
    sources = [(nb, html_dir / f"{nb.stem}.html") for nb in sorted((reports / "executed").glob("*.ipynb"))]
    sources += [(nb, nb.parent.parent / f"{nb.stem}.html")  # runs with other parameters: in their own folders
                for nb in sorted((reports / "variants").glob("*/executed/*.ipynb"))]
    sources += [(nb, nb.parent.parent / f"{nb.stem}.html")  # a lesser profile's run set aside by a better one
                for profile in report.PROFILE_RANK if profile != "smoke"
                for nb in sorted((reports / profile / "executed").glob("*.ipynb"))]
    return [render_page(reports, nb, page, force) for nb, page in sources]


def render_page(reports: Path, executed: Path, page: Path, force: bool = False) -> Path:
    """`executed` (a notebook) -> the HTML `page`, unless the page is newer (or `force`); MathJax from
    <reports>/html/ wherever the page lies."""
    from nbconvert import HTMLExporter

    html_dir = reports / "html"
    if force or not page.exists() or page.stat().st_mtime < executed.stat().st_mtime:
        vendor_mathjax(html_dir)
        exporter = HTMLExporter(template_name="lab", mathjax_url=MATHJAX_URL, embed_images=True)
        body, _ = exporter.from_filename(str(executed))
        if page.parent != html_dir:
            body = body.replace(MATHJAX_URL, mathjax_src(html_dir, page))
        page.parent.mkdir(parents=True, exist_ok=True)
        report.write_atomic(page, redactor(reports)(smaller_pngs(body)))  # the executed copy is clean already
    return page


_PNG = re.compile(r"(data:image/png;base64,)([A-Za-z0-9+/=]+)")


def smaller_pngs(body: str) -> str:
    """`body` (HTML) with each embedded PNG re-encoded on an adaptive palette of 256 colours where that is smaller: a
    figure's few flat colours survive it to the eye, and a page of many figures keeps under its 1 MB. The executed
    notebook keeps the originals (and reports/figures/ its own files)."""
    from PIL import Image

    def one(m: re.Match) -> str:
        try:
            raw = base64.b64decode(m.group(2))
            img = Image.open(io.BytesIO(raw))
            out = io.BytesIO()
            img.convert("RGBA").quantize(256, method=Image.Quantize.FASTOCTREE).save(out, "PNG", optimize=True)
        except (OSError, ValueError):  # not base64 (bad padding) or not a PNG Pillow can read: left as it is
            return m.group(0)
        small = out.getvalue()
        return m.group(1) + base64.b64encode(small).decode() if len(small) < len(raw) else m.group(0)

    return _PNG.sub(one, body)


def _html_table(df: pd.DataFrame, css: str, key: str = "status") -> str:
    """A plain HTML table; floats to 4 significant digits, a row class per `key` (its verdict column)."""
    def cell(v):
        return "" if v is None or (isinstance(v, float) and v != v) else (
            f"{v:.4g}" if isinstance(v, float) else str(v))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    rows = []
    for r in df.itertuples(index=False):
        cls = status_class(str(getattr(r, key, "")))
        rows.append(f'<tr class="{html.escape(cls)}">' +
                    "".join(f"<td>{html.escape(cell(v))}</td>" for v in r) + "</tr>")
    return f'<table class="{css}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n' + "\n".join(rows) + \
        "\n</tbody>\n</table>"


status_class = frontpage.status_class  # CSS class of a verdict (grey for not tested / not comparable)


STYLE = """body{font-family:system-ui,sans-serif;max-width:110em;margin:2em auto;padding:0 1em}
table{border-collapse:collapse;font-size:85%;width:100%;table-layout:auto}
td,th{border:1px solid #ccc;padding:.2em .4em;vertical-align:top;overflow-wrap:anywhere}
td{max-width:28em}table.summary td:last-child,table.artefacts td:nth-last-child(2){min-width:18em}
th{background:#eee;position:sticky;top:0}tr.good td{background:#e6f4e6}tr.mixed td{background:#f4f4dc}
tr.bad td{background:#f8e0e0}tr.not-run td{color:#888}tr.untested td{background:#f0f0f0;color:#555}"""


def _headline_html(summary: pd.DataFrame, reports: Path, view: pd.DataFrame) -> str:
    """SUMMARY.md's headline as a list (`romae.runner.claims.headline`) of the claims table `view`."""
    lines = claims.headline(view, frontpage.coverage(summary, reports)).splitlines()
    return "<ul>" + "".join(f"<li>{frontpage.inline_html(line.removeprefix('- '))}</li>" for line in lines) + "</ul>"


def _page_profile(reports: Path, notebook: str) -> str:
    """The profile of the run published at the top of `reports` (its provenance record), or ''."""
    try:
        return json.loads((reports / "provenance" / f"{notebook}.json").read_text()).get("profile", "")
    except (OSError, ValueError):
        return ""


def build_index(reports: Path) -> Path:
    """<reports>/index.html: the claims table, the artefacts, the summary table, the latest runs and a link to
    every notebook page."""
    reports = Path(reports)
    pages = render_notebooks(reports)
    summary = pd.read_csv(reports / "summary.csv") if (reports / "summary.csv").exists() else \
        build_summary(reports)
    runs = latest_runs(reports)
    view = claims.claims_view(reports)[0]
    every = all_runs(reports)
    every = every[every.params == ""]  # the notebooks' own runs; variants are listed apart
    last = every.drop_duplicates("notebook", keep="last").set_index("notebook").status if len(every) else {}
    items, variants = [], []
    notes = every.drop_duplicates("notebook", keep="last").set_index("notebook").note if len(every) else {}
    for v in variant_table(reports).itertuples():  # their own folders, results and code state: never the rows above
        folder = f"variants/{v.variant}"
        page = reports / folder / f"{v.notebook}.html"
        link = f'<a href="{html.escape(folder)}/{html.escape(page.name)}">{html.escape(v.variant)}</a>' \
            if page in pages else html.escape(v.variant)
        code = f"code {v.code}"
        rows = f', <a href="{html.escape(folder)}/results.csv">results.csv</a>' \
            if (reports / folder / "results.csv").exists() else ", no result rows"
        variants.append(f'<li>{link} (<a href="{html.escape(folder)}/executed/{html.escape(v.notebook)}.ipynb">ipynb</a>, '
                        f'<a href="{html.escape(folder)}/SUMMARY.md">its summary</a>{rows}): notebook '
                        f'{html.escape(v.notebook)}, {html.escape(v.profile)} profile, <code>{html.escape(v.params)}</code>; '
                        + (f"<strong>{html.escape(code)}</strong>" if v.code != "current" else html.escape(code))
                        + "</li>")
    for page in pages:
        if page.parent != reports / "html":  # a variant's, listed above; a lesser profile's, beside its notebook
            continue
        state = last.get(page.stem, "ok")
        why = f": {notes.get(page.stem, '')}" if state == "skipped" and notes.get(page.stem, "") else ""
        mark = f" <strong>(last run {html.escape(state)}{html.escape(why)}; this page is the last complete run)</strong>" \
            if state != "ok" else ""
        profile = _page_profile(reports, page.stem)
        also = [f'<a href="{p}/{html.escape(page.name)}">its {p} run</a>' for p in report.PROFILE_RANK
                if p != "smoke" and reports / p / page.name in pages]
        items.append(f'<li><a href="html/{html.escape(page.name)}">{html.escape(page.stem)}</a> '
                     f'(<a href="executed/{html.escape(page.stem)}.ipynb">ipynb</a>'
                     + (f", {html.escape(profile)} profile" if profile else "") + (", " + ", ".join(also) if also else "")
                     + f"){mark}</li>")
    for nb, state in (last.items() if len(last) else []):  # never completed here: listed, no page
        if state != "ok" and nb not in {p.stem for p in pages}:
            why = notes.get(nb, "") if state == "skipped" else "see failed/"
            items.append(f"<li>{html.escape(nb)} <strong>(last run {html.escape(state)}; no complete run yet: "
                         f"{html.escape(why)})</strong></li>")
    if variants:
        items.append("<li>variants, runs with other parameters (<code>--param</code>), each with its own results, "
                     "provenance and summary (none of their rows is in the tables above):<ul>"
                     + "".join(variants) + "</ul></li>")
    body = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>RoMAE compendium: reports</title>
<style>{STYLE}</style></head><body>
<h1>RoMAE compendium: the paper's numbers and ours</h1>
<p>Generated by <code>python -m romae.runner.reproduce</code>; the same table as
<a href="SUMMARY.md">SUMMARY.md</a> (<a href="summary.csv">summary.csv</a>).
<em>smoke</em> rows are seconds-long CI runs, not reproductions.</p>
{_headline_html(summary, reports, view)}
<h2>The paper's claims</h2>
{_html_table(view, "claims", key="verdict")}
{frontpage.claims_html_intro()}
<h2>Paper artefacts</h2>
<p>One row per table and figure of the paper: the verdicts of its rows at their best profile, after the gates
(green: every judged row at or better than the paper, or the claim holds; red: one worse, or a claim that does
not hold; yellow: judged rows beside rows not tested; grey: not tested or not comparable, or not run yet). The qualifiers in brackets come from each row's scale fields (steps, seeds, data, resolution,
device, positions: the <code>scale</code> column, ours / the paper's): <em>reduced</em> (not at the paper's
scale), <em>stand-in</em> (not the paper's data), <em>other device</em> (a speed not comparable),
<em>positions rescaled</em>. <em>code</em>: <strong>current</strong> while the code the run imported would
compute the same numbers (its library paths' numerics fingerprints, its other modules' definitions and its
notebook's code, recorded in <code>provenance/</code>; docs/house.md), else <strong>stale</strong>, naming what
changed.</p>
{_html_table(artefact_view(summary, reports), "artefacts")}
<h2>Every row</h2>
<p>Also as Markdown, with each claim's evidence cells: <a href="ROWS.md">ROWS.md</a>.</p>
{_html_table(summary, "summary")}
<h2>Notebooks</h2>
<ul>
{chr(10).join(items) or "<li>none executed yet</li>"}
</ul>
<h2>Runs</h2>
<p>Latest run of each notebook per profile (full log: <a href="runs.csv">runs.csv</a>).</p>
{_html_table(runs, "runs")}
</body></html>
"""
    return report.write_atomic(reports / "index.html", redactor(reports)(body))


def incomplete_text(skipped: list[str]) -> str:
    """'notebooks 10, 11, 13 skipped (data missing)' from their file names or stems."""
    numbers = [Path(n).stem.split("_")[0] for n in skipped]
    return f"notebook{'s' if len(numbers) > 1 else ''} {', '.join(numbers)} skipped (data missing)"
