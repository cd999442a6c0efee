"""The README's example runs as written and really interpolates."""

import re
from pathlib import Path

import pytest
import torch

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_interpolates(capsys):
    text = README.read_text()
    section = text.split("## Use RoMAE on your own data", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 14  # "in about ten lines"
    namespace: dict = {}
    torch.manual_seed(0)  # the example draws data and weights from the global generator: not from earlier tests'
    exec(compile(code, str(README), "exec"), namespace)
    mse = float(re.search(r"interpolation MSE: ([0-9.]+)", capsys.readouterr().out).group(1))
    # the signal's variance is 0.5: a model that learned nothing scores about that
    assert mse < 0.1, mse


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
