"""No machine paths in anything published: the runner's redaction (romae.runner.reproduce.redactor) on known messages,
and a scan of every text file under reports/ (executed notebooks, pages, tables, results, summaries, runs.csv,
the variants) for absolute file-system paths."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from romae.runner import reproduce, staging

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "reports"
# git-ignored trees of local runs (smoke, dry runs, failures, staging folders): never published
LOCAL_TREES = ("smoke", "failed", "dry-run")
TEXT = (".csv", ".md", ".html", ".json", ".txt", ".ipynb", ".js", ".svg", ".tex", ".css", ".log", ".xml")
# an absolute path: a POSIX one under a machine's top-level folder (not inside a word, a URL or a relative
# path), a Windows drive path or a file URL. Written independently of the runner's own patterns.
ABSOLUTE = re.compile(r"(?<![\w.~/:+-])/(?:work|workspace|tmp|home|root|usr|opt|mnt|var|srv|media|private|Users"
                      r"|Volumes|scratch|data|content|kaggle|gpfs|lustre|nfs)/[^\s\"'<>`|]*"
                      r"|(?<![\w$\\])[A-Z]:\\\\?[\w .-]+\\|file:///[^\s\"'<>`|]+")
DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")


def published_texts(folder: Path):
    """(file, text to check) for every published text file under `folder`: a notebook's strings without its
    image data, a page without its embedded images."""
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if not path.is_file() or path.suffix not in TEXT or rel.parts[0] in LOCAL_TREES \
                or rel.parts[0].startswith(".staging-"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".ipynb":
            strings = []

            def walk(obj):
                if isinstance(obj, str):
                    strings.append(obj)
                elif isinstance(obj, list):
                    for v in obj:
                        walk(v)
                elif isinstance(obj, dict):
                    for k, v in obj.items():
                        if not str(k).startswith("image/"):
                            walk(v)

            walk(json.loads(text))
            text = "\n".join(strings)
        yield path, DATA_URI.sub("data:", text)


def absolute_paths(folder: Path) -> list[str]:
    found = []
    for path, text in published_texts(folder):
        found += [f"{path.relative_to(folder)}: {m.group(0)[:120]}" for m in ABSOLUTE.finditer(text)]
    return found


@pytest.mark.skipif(not REPORTS.is_dir(), reason="no committed reports/ in this copy")
def test_no_absolute_paths_in_published_reports():
    found = absolute_paths(REPORTS)
    assert not found, f"{len(found)} absolute file-system path(s) under reports/:\n" + "\n".join(found[:40])


def test_the_scan_finds_what_it_looks_for(tmp_path):
    """The scan itself: it finds a path in a table, a page and a notebook's output, and ignores image data,
    URLs, relative paths and the git-ignored trees of local runs."""
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "t.csv").write_text("a,note\n1,read /home/alice/data.zip\n")
    (tmp_path / "p.html").write_text('<pre>C:\\Users\\bob\\x.py</pre><img src="data:image/png;base64,AB/tmp/CD">'
                                     ' https://example.com/home/x reports/tables/t.csv $ROMAE_DATA/uea')
    nb = {"cells": [{"outputs": [{"text": "/tmp/abc/x.py:3: UserWarning",
                                  "data": {"image/png": "AA/tmp/BB", "text/plain": "fine"}}]}]}
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    (tmp_path / "runs.csv").write_text("note\nfetched from file:///srv/mirror\n")
    (tmp_path / "smoke").mkdir()
    (tmp_path / "smoke" / "runs.csv").write_text("/tmp/local/run\n")
    found = absolute_paths(tmp_path)
    assert len(found) == 4, found
    assert {f.split(":")[0] for f in found} == {"tables/t.csv", "p.html", "n.ipynb", "runs.csv"}


def test_redactor_rewrites_machine_paths(monkeypatch, tmp_path):
    root = str(reproduce.ROOT)
    monkeypatch.setenv("ROMAE_DATA", "/srv/shared/data")
    stage = reproduce.ROOT / "reports" / ".staging-12_x-11-abc"
    dest = reproduce.ROOT / "reports" / "variants" / "12_x--quick--a=b"
    redact = reproduce.redactor(reproduce.ROOT / "reports", stage, dest)
    cases = {
        # the staging folder a kernel wrote to -> the folder its files were published to
        f'reports_dir = "{stage}"\n': 'reports_dir = "reports/variants/12_x--quick--a=b"\n',
        f"{stage}/tables/t.csv": "reports/variants/12_x--quick--a=b/tables/t.csv",
        # the data root, as files.describe_root and the loaders write it
        "not under the data root $ROMAE_DATA=/srv/shared/data; to get it": "not under the data root $ROMAE_DATA; to get it",
        "not under /srv/shared/data/uea: Epilepsy": "not under $ROMAE_DATA/uea: Epilepsy",
        # the clone's files -> relative; a Python's installed packages; the clone's root alone
        f"{root}/romae/experiments/pendulum.py:369: UserWarning": "romae/experiments/pendulum.py:369: UserWarning",
        f"shard(s) of {root}/.cache/romae/stores/elasticc-54, values": "shard(s) of .cache/romae/stores/elasticc-54, values",
        f"{root}/.venv/lib/python3.11/site-packages/tqdm/auto.py:21: TqdmWarning":
            "[site-packages]/tqdm/auto.py:21: TqdmWarning",
        "/usr/lib/python3/dist-packages/x/y.py": "[site-packages]/x/y.py",
        f"cwd={root} and {root}2/x": f"cwd=. and {reproduce.LOCAL}/x",
        # any other absolute path: a placeholder and its last component
        "/tmp/pytest-1/fresh0/data; /home/alice/x.zip, /root/.cache/y": f"{reproduce.LOCAL}/data; "
                                                                          f"{reproduce.LOCAL}/x.zip, {reproduce.LOCAL}/y",
        "File C:\\Users\\bob\\x.py, line 3": f"File {reproduce.LOCAL}/x.py, line 3",
        "<pre>/mnt/data/run/log.txt</pre>": f"<pre>{reproduce.LOCAL}/log.txt</pre>",
        "--mirror file:///tmp/m/mirror": f"--mirror {reproduce.LOCAL}/mirror",
        # left alone: URLs, relative paths, ratios, TeX, units, $ROMAE_DATA/..., embedded images
        "https://example.com/home/x and 1/2 and ms/step and train / test and $ROMAE_DATA/uea and $T:\\theta$":
            "https://example.com/home/x and 1/2 and ms/step and train / test and $ROMAE_DATA/uea and $T:\\theta$",
        '<img src="data:image/png;base64,AAAA/tmp/BBBB+/home/xx==">': '<img src="data:image/png;base64,AAAA/tmp/BBBB+/home/xx==">',
    }
    for text, expected in cases.items():
        assert redact(text) == expected, text
    for text in cases:  # idempotent: a redacted text stays as it is
        assert redact(redact(text)) == redact(text)
    # a reports folder outside the clone (--reports elsewhere) is "[reports]"
    outside = tmp_path / "reports"
    redact = reproduce.redactor(outside, outside / ".staging-02-1-a", outside)
    assert redact(f'reports_dir = "{outside}/.staging-02-1-a"') == 'reports_dir = "[reports]"'
    assert redact(f"{outside}/executed/02.ipynb") == "[reports]/executed/02.ipynb"


def test_redact_tree_and_file_keep_images(tmp_path):
    redact = reproduce.redactor()
    nb = {"cells": [{"source": "x = '/tmp/a/b.csv'", "outputs": [
        {"data": {"image/png": "AA/tmp/BB", "text/plain": "/home/u/c.txt"}}]}]}
    out = reproduce.redact_tree(nb, redact)
    assert out["cells"][0]["source"] == f"x = '{reproduce.LOCAL}/b.csv'"
    assert out["cells"][0]["outputs"][0]["data"] == {"image/png": "AA/tmp/BB", "text/plain": f"{reproduce.LOCAL}/c.txt"}
    table = tmp_path / "t.md"
    table.write_text("| note |\n|---|\n| read /work/elsewhere/z.zip |\n")
    assert reproduce.redact_file(table, redact) and f"{reproduce.LOCAL}/z.zip" in table.read_text()
    assert not reproduce.redact_file(table, redact)  # nothing left to rewrite
    png = tmp_path / "f.png"
    png.write_bytes(b"\x89PNG/tmp/x")
    assert not reproduce.redact_file(png, redact) and png.read_bytes() == b"\x89PNG/tmp/x"


def test_tqdm_widget_warning_is_dropped_with_the_bars():
    warning = ("/x/.venv/lib/python3.11/site-packages/tqdm/auto.py:21: TqdmWarning: IProgress not found. Please "
               "update jupyter and ipywidgets. See https://ipywidgets.readthedocs.io/en/stable/user_install.html\n"
               "  from .autonotebook import tqdm as notebook_tqdm\n")
    outs = [dict(output_type="stream", name="stderr", text=warning),
            dict(output_type="stream", name="stderr", text=warning + "UserWarning: kept\n")]
    assert [o["text"] for o in reproduce.drop_progress_bars(outs)] == ["UserWarning: kept\n"]


def test_redactor_knows_the_top_folder_of_a_clone_kept_outside_the_usual_ones(monkeypatch):
    # CI checks a clone out under /check/...: a sibling folder of the clone is a machine path too
    monkeypatch.setattr(staging, "ROOT", Path("/check/work/main"))
    monkeypatch.delenv("ROMAE_DATA", raising=False)
    redact = reproduce.redactor()
    assert redact("cwd=/check/work/main and /check/work/main2/x") == f"cwd=. and {reproduce.LOCAL}/x"
    assert redact("/check/work/main/romae/train.py:3") == "romae/train.py:3"
    # a folder under a top folder nobody named is left alone (it may be a unit or a ratio)
    assert redact("km/s and /elsewhere/x") == "km/s and /elsewhere/x"
