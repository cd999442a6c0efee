"""reports/index.html and the notebook pages, opened in headless Chromium with the network off.

Uses the run of test_reproduce.py (two throwaway notebooks). Checks that the index shows the summary
table, that a notebook page shows its figure as an <img>, and that MathJax (vendored under
reports/html/mathjax/, no CDN) typeset the equation of the first cell. Skips when chromium is missing
(.ci/run installs Debian's chromium).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from romae.runner import reproduce
from test_reproduce import reproduced_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def dump_dom(page: Path, profile_dir: Path) -> str:
    """The DOM of `page` after its scripts ran (virtual time: MathJax finishes, no real waiting)."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile_dir}",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--virtual-time-budget=5000", "--dump-dom", page.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture(scope="module")
def run():
    return reproduced_run()


def test_pages_are_written_and_mathjax_is_local(run):
    index = run.reports / "index.html"
    page = run.reports / "html" / "02_ok.html"
    assert index.exists() and page.exists()
    assert not (run.reports / "html" / "01_fail.html").exists()  # no complete run: no page, but listed
    text = page.read_text()
    assert f'src="{reproduce.MATHJAX_URL}"' in text
    assert not re.search(r'<script[^>]+src="https?://[^"]*mathjax', text, re.I)
    mathjax = run.reports / "html" / "mathjax"
    assert (mathjax / "MathJax.js").exists() and (mathjax / "config" / "local" / "romae.js").exists()
    size = sum(f.stat().st_size for f in mathjax.rglob("*") if f.is_file())
    assert size < 5e6, f"vendored MathJax is {size / 1e6:.1f} MB"
    html = index.read_text()
    assert 'href="html/02_ok.html"' in html and "01_fail" in html and "(last run failed" in html


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it: apt-get install chromium)")
def test_rendered_in_chromium(run, tmp_path):
    index = dump_dom(run.reports / "index.html", tmp_path / "chromium")
    assert '<table class="summary">' in index and run.row["experiment"] in index
    assert '<tr class="good">' in index  # the recorded row, compared with the paper's value
    assert index.index('<table class="artefacts">') < index.index('<table class="summary">')  # compact view first

    page = dump_dom(run.reports / "html" / "02_ok.html", tmp_path / "chromium")
    assert re.search(r'<img [^>]*src="data:image/png;base64,', page), "the figure is not on the page"
    # MathJax replaced $x^2 + \theta_k$ by its own output (and kept the TeX in a math/tex script)
    assert re.search(r'<script type="math/tex[^"]*"[^>]*>x\^2 \+ \\theta_k</script>', page), "MathJax did not run"
    assert 'class="MathJax"' in page and "STIXMathJax" in page
    assert "$x^2" not in page


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it: apt-get install chromium)")
def test_index_fits_1400_px_with_long_notes(tmp_path):
    """Every table wraps its cells: a page with a long note and a long unbroken word is no wider than a
    1400 px window, so every note can be read without scrolling sideways."""
    from romae.compendium import report
    from romae.runner.summary import build_summary

    reports = tmp_path / "reports"
    long_note = "a long note about the run, " * 60 + "unbroken_" * 40
    report.record("table6_uea", "BasicMotions", "accuracy", 0.9, profile="quick", reports_dir=reports,
                  scale=report.scale(epochs=(50, 50), seeds=(1, 3)), note=long_note)
    build_summary(reports)
    index = reproduce.build_index(reports)
    probe = index.with_name("probe.html")
    probe.write_text(index.read_text().replace(
        "</body>", "<script>document.body.setAttribute('data-overflow', "
                   "String(document.documentElement.scrollWidth - window.innerWidth))</script></body>"))
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'chromium'}",
           "--window-size=1400,900", "--virtual-time-budget=2000", "--dump-dom", probe.resolve().as_uri()]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    overflow = re.search(r'data-overflow="(-?\d+)"', dom)
    assert overflow is not None, dom[-2000:]
    assert int(overflow.group(1)) <= 0, f"the page is {overflow.group(1)} px wider than a 1400 px window"
    assert "unbroken_unbroken" in dom


def test_embedded_figures_shrink_and_keep_their_pixels():
    """A page's PNGs are re-encoded on a 256-colour palette where that is smaller (`pages.smaller_pngs`): same size in
    pixels, close in colour, smaller; anything else in the page is left as it is."""
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image

    from romae.runner import pages

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    x = np.linspace(0, 10, 400)
    for k in range(6):
        ax.plot(x, np.sin(x + k), label=f"curve {k}")
    ax.fill_between(x, -0.2, 0.2, alpha=0.2)
    ax.legend()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    raw = buf.getvalue()
    body = f'<p>text</p><img src="data:image/png;base64,{base64.b64encode(raw).decode()}"/><img src="x.svg"/>'
    out = pages.smaller_pngs(body)
    assert out.startswith("<p>text</p>") and out.endswith('<img src="x.svg"/>') and len(out) < 0.7 * len(body)
    small = base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)", out).group(1))
    a = np.asarray(Image.open(io.BytesIO(raw)).convert("RGBA"), dtype=float)[..., :3]
    b = np.asarray(Image.open(io.BytesIO(small)).convert("RGBA"), dtype=float)[..., :3]
    assert a.shape == b.shape and np.abs(a - b).mean() < 2.0
    assert pages.smaller_pngs('<img src="data:image/png;base64,bm90IGEgcG5n"/>') == \
        '<img src="data:image/png;base64,bm90IGEgcG5n"/>'  # not a PNG: left alone
    assert pages.smaller_pngs('<img src="data:image/png;base64,abc"/>') == '<img src="data:image/png;base64,abc"/>'
