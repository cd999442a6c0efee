"""environment.yml (conda) and pyproject.toml (pip) must describe the same environment.

Conda cannot run on the reference machine, so environment.yml is checked structurally against
pyproject.toml: same packages (runtime deps + every extra), same version constraints, torch pinned.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

# conda-forge name -> pip name, where they differ. Everything else maps to itself.
CONDA_TO_PIP = {
    "pytorch": "torch",
    "matplotlib-base": "matplotlib",
    "pysoundfile": "soundfile",
}
# Entries of environment.yml that are the environment itself, not a dependency of the package.
CONDA_ONLY = {"python", "pip"}

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$")


def _normalize(name: str) -> str:
    """PEP 503 normalisation, so `Foo_Bar` and `foo-bar` compare equal."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _split(spec: str) -> tuple[str, str]:
    """'numpy>=2.4' -> ('numpy', '>=2.4'); drops pip extras/markers (not used in this project)."""
    spec = spec.split(";", 1)[0]
    m = _NAME.match(spec)
    assert m, f"cannot parse requirement {spec!r}"
    rest = re.sub(r"^\[[^]]*\]", "", m.group(2).strip()).replace(" ", "")
    return _normalize(m.group(1)), rest


def _pip_constraint_from_conda(constraint: str) -> str:
    """Conda's exact pin `=X` (or `==X`) is pip's `==X`; `>=X` stays `>=X`."""
    if re.match(r"^=[^=]", constraint):
        return "=" + constraint
    return constraint


def load_pyproject(path: Path = ROOT / "pyproject.toml") -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def load_environment(path: Path = ROOT / "environment.yml") -> dict:
    with open(path) as f:
        return yaml.safe_load(f)


def pip_requirements(pyproject: dict) -> dict[str, str]:
    """{pip name: constraint} over the runtime dependencies and every optional extra."""
    project = pyproject["project"]
    specs = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        specs.extend(extra)
    out: dict[str, str] = {}
    for spec in specs:
        name, constraint = _split(spec)
        assert name not in out, f"{name} is listed twice in pyproject.toml"
        out[name] = constraint
    return out


def conda_requirements(env: dict) -> dict[str, str]:
    """{pip name: constraint (pip syntax)} over environment.yml's conda dependencies."""
    out: dict[str, str] = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):  # a nested `- pip: [...]` section
            raise AssertionError(f"environment.yml must not have a pip section: {dep}")
        name, constraint = _split(dep)
        if name in CONDA_ONLY:
            continue
        pip_name = _normalize(CONDA_TO_PIP.get(name, name))
        assert pip_name not in out, f"{pip_name} is listed twice in environment.yml"
        out[pip_name] = _pip_constraint_from_conda(constraint)
    return out


def package_mismatch(pip: dict[str, str], conda: dict[str, str]) -> dict[str, list[str]]:
    return {
        "only in pyproject.toml": sorted(set(pip) - set(conda)),
        "only in environment.yml": sorted(set(conda) - set(pip)),
    }


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return load_pyproject()


@pytest.fixture(scope="module")
def env() -> dict:
    return load_environment()


def test_same_packages(pyproject, env):
    pip = pip_requirements(pyproject)
    conda = conda_requirements(env)
    assert set(pip) == set(conda), package_mismatch(pip, conda)
    # the extras this compendium relies on are really there
    assert {"torch", "jupyterlab", "papermill", "pytest", "nbval"} <= set(pip)


def test_same_version_constraints(pyproject, env):
    pip = pip_requirements(pyproject)
    conda = conda_requirements(env)
    differ = {n: (pip[n], conda[n]) for n in set(pip) & set(conda) if pip[n] != conda[n]}
    assert not differ, f"pyproject vs environment.yml constraints differ: {differ}"


def test_comparison_detects_a_one_sided_dependency():
    """The checks above must be able to fail: a dep in one file only, or a differing bound, shows."""
    pyproject = {
        "project": {
            "dependencies": ["torch==2.13.0", "numpy>=2.4"],
            "optional-dependencies": {"test": ["pytest>=9.2"]},
        }
    }
    env = {"dependencies": ["python=3.11", "pytorch=2.13.0", "numpy>=2.4", "pytest>=9.2", "pip"]}
    assert pip_requirements(pyproject) == conda_requirements(env)

    env_more = {**env, "dependencies": [*env["dependencies"], "h5py>=3.0"]}
    assert package_mismatch(pip_requirements(pyproject), conda_requirements(env_more)) == {
        "only in pyproject.toml": [],
        "only in environment.yml": ["h5py"],
    }
    pyproject_more = {"project": {**pyproject["project"], "dependencies": ["torch==2.13.0"]}}
    assert package_mismatch(pip_requirements(pyproject_more), conda_requirements(env)) == {
        "only in pyproject.toml": [],
        "only in environment.yml": ["numpy"],
    }
    env_other_pin = {"dependencies": ["pytorch=2.12.0", "numpy>=2.4", "pytest>=9.2"]}
    assert conda_requirements(env_other_pin)["torch"] == "==2.12.0" != pip_requirements(pyproject)["torch"]


def test_torch_is_pinned(pyproject):
    deps = [_split(s) for s in pyproject["project"]["dependencies"]]
    assert ("torch", "==2.13.0") in deps


def test_environment_header(env):
    assert env["name"] == "romae"
    assert env["channels"] == ["conda-forge"]
    assert "python=3.11" in env["dependencies"]
    assert "pip" in env["dependencies"]


def test_python_requirement(pyproject):
    assert pyproject["project"]["requires-python"] == ">=3.11"


def test_make_clean_removes_checkpoints_and_the_results_cache(tmp_path):
    """`make clean` (dry run) removes runs/ (the notebook trainings' checkpoints, git-ignored, named in the README)
    and the results cache."""
    import subprocess

    out = subprocess.run(["make", "-n", "clean"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "rm -rf runs .cache/romae" in out.stdout
    assert "/runs/" in (ROOT / ".gitignore").read_text().splitlines()
    assert "runs/ " in (ROOT / "README.md").read_text()
