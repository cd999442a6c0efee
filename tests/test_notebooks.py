"""Notebook hygiene (after PySDM's devops_tests): every notebooks/NN_*.ipynb is committed stripped, has one
typed `parameters` cell defaulting to smoke, and a first cell naming the paper artefacts it regenerates
and its deviations; every experiment of paper_values.csv belongs to a notebook that names it.

Running the notebooks is nbval's job (`make test` adds `--nbval-lax notebooks`); this file only reads.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from romae.compendium.reference import paper_values

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# Which notebook (by its NN prefix) regenerates each experiment id of paper_values.csv. A new row of
# paper_values.csv with an id missing here fails test_every_paper_experiment_has_a_notebook.
NOTEBOOK_OF = {
    "table1_position_reconstruction": "01",  # 01_position_reconstruction.ipynb
    "fig2_position_range": "01",
    "fig3_frequency_retention": "02",  # 02_frequency_retention.ipynb
    "fig4_frequency_retention_two_modes": "02",
    "table_b4_frequency_errors": "02",
    "table8_model_sizes": "03",  # 03_compute_cost.ipynb
    "table9_compute": "03",
    "table6_uea": "12",  # 12_uea_classification.ipynb
    "table2_tiny_imagenet": "10",  # 10_tiny_imagenet.ipynb
    "table3_esc50": "11",  # 11_esc50.ipynb
    "table4_elasticc": "13",  # 13_elasticc.ipynb
    "table5_pendulum": "14",  # 14_pendulum.ipynb
    "table7_interpolation": "15",  # 15_interpolation_spiral_synthetic.ipynb
}
# Mapped ids whose notebook is not written yet: exempt from the existence check. Remove an id when its
# notebook lands (the test fails while a pending id's notebook already exists, so this set stays honest).
PENDING: set[str] = set()  # notebooks not written yet


def _load(path: Path) -> dict:
    with open(path) as f:
        return json.load(f)


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _first_cell_text(prefix: str) -> str | None:
    """Source of the first cell of notebooks/<prefix>_*.ipynb, or None if there is no such notebook."""
    match = [p for p in NOTEBOOKS if p.name.startswith(f"{prefix}_")]
    if not match:
        return None
    cells = _load(match[0])["cells"]
    return _source(cells[0]) if cells else ""


nb_param = pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])


def test_notebook_names():
    for path in NOTEBOOKS:
        assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", path.name), f"{path.name}: name it NN_snake_case.ipynb"
    prefixes = [p.name[:2] for p in NOTEBOOKS]
    assert len(prefixes) == len(set(prefixes)), f"two notebooks share a number: {prefixes}"


@nb_param
def test_stripped(path):
    """No outputs and no execution counts: notebooks are committed stripped (`nbstripout`)."""
    for i, cell in enumerate(_load(path)["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"{path.name} cell {i} has outputs"
            assert cell.get("execution_count") is None, f"{path.name} cell {i} has an execution count"


@nb_param
def test_kernelspec(path):
    assert _load(path)["metadata"].get("kernelspec", {}).get("name") == "python3"


@nb_param
def test_parameters_cell(path):
    """Exactly one code cell tagged `parameters`; every assignment is annotated; profile defaults to smoke."""
    cells = [c for c in _load(path)["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{path.name}: {len(cells)} cells tagged 'parameters', want exactly 1"
    assert cells[0]["cell_type"] == "code"
    tree = ast.parse(_source(cells[0]))
    plain = [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Assign, ast.AugAssign))]
    assert not plain, f"{path.name}: parameters without a type annotation: {plain}"
    annotated = {n.target.id: n for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert "profile" in annotated, f"{path.name}: the parameters cell must assign `profile: str = \"smoke\"`"
    profile = annotated["profile"]
    assert ast.unparse(profile.annotation) == "str"
    assert isinstance(profile.value, ast.Constant) and profile.value.value == "smoke"


@nb_param
def test_papermill_reads_every_parameter(path):
    """papermill's own parser (`--help-notebook`, inspect_notebook) reads every parameter with its type; it
    gives up on a line whose comment holds '=' (e.g. "NAMES=..."), and that parameter then has no help."""
    from papermill.translators import PythonTranslator

    cell = next(c for c in _load(path)["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    declared = [n.target.id for n in ast.parse(_source(cell)).body if isinstance(n, ast.AnnAssign)]
    parsed = PythonTranslator.inspect({"source": _source(cell)})
    assert [p.name for p in parsed] == declared, f"{path.name}: papermill reads {[p.name for p in parsed]}"
    assert all(p.inferred_type_name != "None" for p in parsed), [(p.name, p.inferred_type_name) for p in parsed]


@nb_param
def test_first_cell(path):
    """Markdown first cell: 'Regenerates:' with backticked artefact ids, and a Deviations list."""
    cells = _load(path)["cells"]
    assert cells and cells[0]["cell_type"] == "markdown", f"{path.name}: the first cell must be markdown"
    text = _source(cells[0])
    line = re.search(r"Regenerates:?\**:?(.*)", text)
    assert line, f"{path.name}: the first cell must say 'Regenerates:' and name the paper artefacts"
    after = text[line.start():]
    assert re.search(r"`[A-Za-z0-9_]+`", after), f"{path.name}: no backticked artefact id after 'Regenerates:'"
    dev = re.search(r"(^#+\s*Deviations|\*\*Deviations\*\*)", text, re.M)
    assert dev, f"{path.name}: the first cell needs a Deviations heading or **Deviations**"
    assert re.search(r"^\s*[-*] \S", text[dev.end():], re.M), f"{path.name}: Deviations has no bullet list"


def test_every_paper_experiment_has_a_notebook():
    """Each experiment id of paper_values.csv maps to an existing notebook whose first cell names it."""
    ids = {row["experiment"] for row in paper_values()}
    unmapped = ids - set(NOTEBOOK_OF)
    assert not unmapped, f"experiments in paper_values.csv that no notebook regenerates (NOTEBOOK_OF): {unmapped}"
    assert PENDING <= set(NOTEBOOK_OF), f"PENDING ids must be mapped in NOTEBOOK_OF: {PENDING - set(NOTEBOOK_OF)}"
    for experiment, prefix in NOTEBOOK_OF.items():
        text = _first_cell_text(prefix)
        if experiment in PENDING:
            assert text is None, f"{experiment}: notebook {prefix}_*.ipynb exists now; remove it from PENDING"
            continue
        if experiment not in ids:
            continue  # mapped ahead of its paper row: harmless
        assert text is not None, f"{experiment}: notebook {prefix}_*.ipynb does not exist (list it in PENDING?)"
        assert f"`{experiment}`" in text, f"{experiment}: not named (backticked) in the first cell of {prefix}_*"


def test_the_checks_can_fail():
    """The parameter-cell parser rejects an untyped assignment and a non-smoke default."""
    untyped = ast.parse('profile = "smoke"\nn: int = 3')
    assert [ast.unparse(n) for n in untyped.body if isinstance(n, ast.Assign)] == ["profile = 'smoke'"]
    typed = ast.parse('profile: str = "quick"').body[0]
    assert isinstance(typed, ast.AnnAssign) and typed.value.value != "smoke"
