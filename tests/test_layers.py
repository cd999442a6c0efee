"""The house (issue 42): floors that import only the floors below them, no import cycle, `import romae` loading the
library alone, modules of one job each. Read from the source (every import statement, at the top or inside a
function), so a lazy upward import counts as much as a top-level one.

    library (romae/*.py) < data (romae/data/) < compendium (romae/compendium/) < experiments < runner

The `python -m romae.<name>` entry points (romae/bench.py, ...) are no floor: they import the runner or the
compendium only under `if __name__ == "__main__":`, and nothing imports them."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "romae"
FLOORS = ["library", "data", "compendium", "experiments", "runner"]
ENTRY_POINTS = {"bench.py", "promise.py", "reproduce.py", "gpucheck.py", "trainings.py", "numerics.py"}
MAX_LINES = 600


def floor(rel: str) -> str | None:
    """The floor of package file `rel` (None for an entry point)."""
    if "/" not in rel:
        return None if rel in ENTRY_POINTS else "library"
    top = rel.split("/")[0]
    return top if top in FLOORS else "library"


def _module_file(name: str, root: Path) -> str | None:
    parts = name.split(".")
    if parts[0] != "romae":
        return None
    rel = Path(*parts[1:]) if len(parts) > 1 else Path()
    if len(parts) > 1 and (root / rel).with_suffix(".py").is_file():
        return rel.with_suffix(".py").as_posix()
    if (root / rel / "__init__.py").is_file():
        return (rel / "__init__.py").as_posix()
    return None


def imports(rel: str, root: Path) -> set[str]:
    """Package files that `rel` imports, anywhere in its source (entry points: outside their __main__ block)."""
    tree = ast.parse((root / rel).read_text())
    if rel in ENTRY_POINTS:  # what runs only as a program does not count
        tree.body = [n for n in tree.body if not (isinstance(n, ast.If) and "__main__" in ast.unparse(n.test))]
    package = ["romae", *Path(rel).with_suffix("").parts][:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dynamic_import(node):  # importlib.import_module("romae.x"), __import__
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.update(f for f in [_module_file(arg.value, root)] if f)
            elif isinstance(arg, ast.JoinedStr):  # f"romae.experiments.{name}": every module it can name
                prefix = "".join(v.value for v in arg.values if isinstance(v, ast.Constant)).split("{")[0]
                head = prefix.rsplit(".", 1)[0] if prefix.startswith("romae.") else None
                folder = root.joinpath(*head.split(".")[1:]) if head else None
                if folder is not None and folder.is_dir():
                    out.update(p.relative_to(root).as_posix() for p in folder.rglob("*.py") if "__pycache__" not in p.parts)
            else:
                out.add(f"<dynamic import in {rel}>")
        elif isinstance(node, ast.Import):
            out.update(f for f in (_module_file(a.name, root) for a in node.names) if f)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[:len(package) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for a in node.names:
                f = _module_file(f"{base}.{a.name}", root) or _module_file(base, root)
                if f:
                    out.add(f)
    out.discard(rel)
    return out


def _dynamic_import(node: ast.Call) -> bool:
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in ("import_module", "__import__") and bool(node.args)


def graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    return {f: imports(f, root) for f in files}


def upward(root: Path = PACKAGE) -> list[str]:
    """'a -> b' for every import of a higher floor (or of an entry point), and every import no one can read."""
    out = []
    for a, targets in graph(root).items():
        fa = floor(a)
        out += [f"{a} -> {b}" for b in sorted(targets) if b.startswith("<")]
        for b in sorted(t for t in targets if not t.startswith("<")):
            fb = floor(b)
            if fb is None or (fa is not None and FLOORS.index(fb) > FLOORS.index(fa)):
                out.append(f"{a} -> {b}")
    return out


def cycles(root: Path = PACKAGE) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    g = graph(root)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in g:
        if v not in index:
            visit(v)
    return out


def test_every_import_goes_down_the_floors():
    assert upward() == []


def test_no_import_cycle():
    assert cycles() == []


def test_a_planted_upward_import_and_cycle_are_caught(tmp_path):
    root = tmp_path / "romae"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    with open(root / "model.py", "a") as f:  # the library reaching up into the compendium, inside a function
        f.write("\n\ndef _planted():\n    from .compendium import kept\n    return kept\n")
    assert "model.py -> compendium/kept.py" in upward(root)
    assert any("model.py" in c for c in cycles(root))  # kept imports the training loop, which imports the model


def test_a_dynamic_import_counts_as_an_import(tmp_path):
    """importlib.import_module and __import__ count: compendium/plan.py importing the experiments by name made a
    43-module cycle the reading of import statements missed (issue 51)."""
    root = tmp_path / "romae"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    with open(root / "compendium" / "stats.py", "a") as f:
        f.write("\n\ndef _planted(name):\n    import importlib\n"
                "    return importlib.import_module(f'romae.experiments.{name}'), __import__('romae.runner.pages')\n")
    found = upward(root)
    assert "compendium/stats.py -> experiments/pendulum.py" in found and "compendium/stats.py -> runner/pages.py" in found
    with open(root / "data" / "sines.py", "a") as f:
        f.write("\n\ndef _planted(name):\n    return __import__(name)\n")
    assert "data/sines.py -> <dynamic import in data/sines.py>" in upward(root)


def test_import_romae_loads_nothing_until_a_name_is_used():
    """`import romae` loads no module of the package and none of torch, scikit-learn, pandas (issue 51); a name loads
    its own module (and what it imports), never a floor above the library."""
    code = ("import sys, romae\n"
            "before = sorted(m for m in sys.modules if m.startswith('romae.') or m.split('.')[0] in "
            "('torch', 'sklearn', 'pandas', 'papermill', 'matplotlib'))\n"
            "romae.fit, romae.RoMAEConfig, romae.from_sequences, romae.metrics.accuracy\n"
            "mods = sorted(m for m in sys.modules if m.startswith('romae.'))\n"
            "heavy = [m for m in ('papermill', 'nbformat', 'matplotlib', 'nbconvert') if m in sys.modules]\n"
            "print(repr((before, mods, heavy)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, mods, heavy = eval(out)
    assert before == [], before
    above = [m for m in mods if m.split(".")[1] in ("data", "compendium", "experiments", "runner")]
    assert "romae.train" in mods and above == [] and heavy == [], (above, heavy)


def test_the_lazy_names_are_the_ones_readers_see():
    """romae/__init__.py's TYPE_CHECKING imports (what editors and the staleness rule read) and its `_WHERE` table
    (what runs) name the same objects; every name in __all__ resolves."""
    import romae

    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test))
    static = {a.asname or a.name: (n.module or a.name) for n in block.body for a in n.names}
    assert {k: v for k, v in static.items() if k != "metrics"} == romae._WHERE
    for name in romae.__all__:
        assert getattr(romae, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'fitt'"):
        romae.fitt


@pytest.mark.parametrize("rel", sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                                       if "__pycache__" not in p.parts))
def test_modules_are_of_one_job(rel):
    lines = len((PACKAGE / rel).read_text().splitlines())
    assert lines <= MAX_LINES, f"romae/{rel} has {lines} lines (at most {MAX_LINES}): split it by job"


def test_entry_points_only_run_the_runner():
    for name in ENTRY_POINTS:
        tree = ast.parse((PACKAGE / name).read_text())
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert top == [], f"romae/{name} imports at its top level"
