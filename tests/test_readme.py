"""The README's example runs as written and really interpolates."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

README = Path(__file__).resolve().parents[1] / "README.md"


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


def test_readme_classification_example_runs_and_classifies(capsys):
    from romae.data import catalog

    text = README.read_text()
    section = text.split("### Classify series of a `.ts` file", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len([l for l in code.strip().splitlines() if l.strip()]) <= 16  # "in about 15 lines"
    for name in ("uea.load(", "from_sequences", "from_pretrained", "fit(", "predict(", "as_labels=True", "metrics."):
        assert name in code, name
    need = catalog.Need(("uea:BasicMotions",), "UEA BasicMotions (the README's example file)")
    if not need.satisfied():
        pytest.skip(need.message())
    torch.manual_seed(0)
    exec(compile(code, str(README), "exec"), {})
    out = capsys.readouterr().out
    acc = float(re.search(r"test accuracy: ([0-9.]+)", out).group(1))
    assert acc > 0.8, acc  # four balanced classes: chance is 0.25
    assert re.search(r"predicted: \[('(Badminton|Running|Standing|Walking)' ?){4}\]", out), out
