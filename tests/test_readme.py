"""The README's example runs as written and really interpolates; the user guide's classification example runs
and classifies; the README stays a two-minute read and every relative link of the README and docs/ resolves."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "user-guide.md"  # the user guide: the classification example and everything else on own data
DOCS = sorted((ROOT / "docs").glob("*.md"))


def first_example() -> str:
    section = README.read_text().split("## Use RoMAE on your own data", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_runs_and_interpolates(capsys):
    code = first_example()
    assert len(code.strip().splitlines()) <= 14  # "in about ten lines"
    torch.manual_seed(12345)  # another state of the global generator than a fresh process's: must not matter
    exec(compile(code, str(README), "exec"), {})
    mse = float(re.search(r"interpolation MSE: ([0-9.]+)", capsys.readouterr().out).group(1))
    # the signal's variance is 0.5: a model that learned nothing scores about that
    assert mse < 0.1, mse


def test_readme_example_prints_the_same_number_in_two_fresh_processes():
    """The example seeds itself (the data, the model's initial weights, fit's masks and batch order): two fresh
    processes print the very same number. Run for 2 epochs instead of 20 (the same code otherwise), to spare CI."""
    code = first_example()
    assert "epochs=20," in code
    short = code.replace("epochs=20,", "epochs=2,")

    def printed():
        out = subprocess.run([sys.executable, "-c", short], capture_output=True, text=True, timeout=600,
                             env=dict(os.environ, OMP_NUM_THREADS=str(torch.get_num_threads())))
        assert out.returncode == 0, out.stderr[-2000:]
        return re.search(r"interpolation MSE: [0-9.]+", out.stdout).group(0)

    assert printed() == printed()


def test_readme_names_both_commands():
    text = README.read_text()
    assert "make test" in text and "make reproduce" in text


def quick_start() -> str:
    section = README.read_text().split("## The paper's claims at a glance", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_commands_and_quick_start_come_first():
    """The commands and the quick start are on the first screen, before the claims table (issue 53)."""
    lines = README.read_text().splitlines()
    claims = next(i for i, ln in enumerate(lines) if ln.startswith("## The paper's claims"))
    first = "\n".join(lines[:40])
    assert claims > 30 and all(c in first for c in ("make test", "make reproduce", "make lab", "from_sequences("))
    assert len([ln for ln in quick_start().splitlines() if not ln.startswith("from ")]) == 3


def test_quick_start_runs_on_series_of_different_lengths(capsys):
    import numpy as np

    rng = np.random.default_rng(0)

    def make(n):  # two classes of 2-channel series, 12-30 irregular steps, a few missing values
        out, ts, ys = [], [], []
        for i in range(n):
            t = np.sort(rng.uniform(0, 10, rng.integers(12, 31)))
            f = 1.0 if i % 2 else 2.5
            x = np.stack([np.sin(f * t), np.cos(f * t)], 1) + 0.1 * rng.standard_normal((len(t), 2))
            x[rng.random(len(t)) < 0.05, 0] = np.nan
            out.append(x), ts.append(t), ys.append("slow" if i % 2 else "fast")
        return out, ts, ys

    series, times, labels = make(40)
    new, _, _ = make(6)
    code = quick_start().replace("epochs=20", "epochs=2")
    exec(compile(code, str(README), "exec"), dict(series=series, times=times, labels=labels, new=new))
    printed = capsys.readouterr().out
    assert re.search(r"\[('(slow|fast)',? ?){6}\]", printed.replace("\n", " ")), printed[-500:]


def test_guide_classification_example_runs_and_classifies(capsys):
    from romae.data import catalog

    text = GUIDE.read_text()
    section = text.split("## Classify series of a `.ts` file", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len([l for l in code.strip().splitlines() if l.strip()]) <= 16  # "in about 15 lines"
    for name in ("uea.load(", "from_sequences", "from_pretrained", "fit(", "predict(", "as_labels=True", "metrics."):
        assert name in code, name
    need = catalog.Need(("uea:BasicMotions",), "UEA BasicMotions (the user guide's example file)")
    if not need.satisfied():
        pytest.skip(need.message())
    torch.manual_seed(0)
    exec(compile(code, str(GUIDE), "exec"), {})
    out = capsys.readouterr().out
    acc = float(re.search(r"test accuracy: ([0-9.]+)", out).group(1))
    assert acc > 0.8, acc  # four balanced classes: chance is 0.25
    assert re.search(r"predicted: \[('(Badminton|Running|Standing|Walking)' ?){4}\]", out), out


def test_guide_images_example_runs_beside_its_pixel_baseline(capsys):
    """The user guide's images example (scikit-learn's bundled digits: no download), cut to 2 epochs to spare CI:
    RoMAE's accuracy and the logistic regression on the pixels beside it are both printed, the baseline a real one."""
    section = GUIDE.read_text().split("## Classify your own images", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "epochs=10," in code and "LogisticRegression" in code and "patch_size=" in code
    exec(compile(code.replace("epochs=10,", "epochs=2,"), str(GUIDE), "exec"), {})
    out = capsys.readouterr().out
    romae_acc = float(re.search(r"RoMAE test accuracy: ([0-9.]+)", out).group(1))
    pixels = float(re.search(r"logistic regression on pixels: ([0-9.]+)", out).group(1))
    assert 0.1 < romae_acc <= 1 and pixels > 0.8, out  # ten classes: chance is 0.1


def test_guide_examples_show_progress():
    """A 7-minute run that prints nothing looks hung: the examples leave fit's progress bar on."""
    for doc in (README, GUIDE):
        assert "progress=False" not in doc.read_text(), doc.name


def test_readme_is_a_two_minute_read():
    """Everything beyond what a newcomer needs lives in docs/ (issue 42): the README stays short."""
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, len(lines)
    for doc in ("reproducing", "status", "user-guide", "differences", "benchmarks", "house"):
        assert f"(docs/{doc}.md)" in README.read_text(), doc


def test_relative_links_resolve():
    """Every relative link in the README and docs/ points at a file or folder that exists (anchors not checked)."""
    broken = []
    for md in [README, *DOCS]:
        for target in re.findall(r"\]\(([^)\s]+)\)", md.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if not (md.parent / path).exists():
                broken.append(f"{md.relative_to(ROOT)}: {target}")
    assert not broken, broken
