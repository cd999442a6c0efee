"""Which code made a published notebook run, by its numbers, and whether it still would (issue 42).

A run's provenance record (<reports>/provenance/<notebook>.json, written by `romae.runner.reproduce`) names the
code its kernel ran, in three parts:

- `numerics`: {path: id} for the library modules it imported (`romae.numerics`: a fingerprint of the numbers each
  code path computes, so a refactor, a comment or a renamed helper keeps it);
- `definitions`: {family: {name: hash}} for the modules above the library that can change a number (the data
  loaders, the experiments, the compendium's record and statistics; never the terminal lines, the kept-trainings
  bookkeeping or the runner): each top-level definition by its syntax tree without docstrings, comments and imports
  (`romae.numerics.definitions`); a family is a module, or a package with all its modules (`family`);
- `notebook_code`: a hash of the notebook's code cells, the same way (imports left out, and `module.name` read as
  `name` for the package's own modules, so a moved function keeps it); its prose is not in it.

`freshness` says 'current' when each of them still holds: every path's id is the code's now, every recorded
definition is found unchanged in its family or, moved, anywhere in the package, and the notebook's code is the same.
A record of the byte-hashed house (format 1: each file's sha256) is checked as it was, byte for byte.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from pathlib import Path

from .. import numerics

PACKAGE = Path(numerics.__file__).resolve().parent
ROOT = PACKAGE.parent
FORMAT = 2


def family(rel: str) -> str | None:
    """'experiments/uea/protocol.py' -> 'experiments/uea'; 'compendium/report.py' -> 'compendium/report';
    'data/uea.py' -> 'data/uea'; None for a library module ('model.py') and for what never changes a number."""
    if "/" not in rel or not numerics.counts_as_code(rel):
        return None
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return "/".join(parts[:2])


def _package_files(root: Path = PACKAGE) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.py"))
            if "__pycache__" not in p.parts}


def family_definitions(files: dict[str, str]) -> dict[str, dict[str, str]]:
    """{family: {name: hash}} of package files {rel: source} (`family`; files of no family left out)."""
    out: dict[str, dict[str, str]] = {}
    for rel, source in sorted(files.items()):
        fam = family(rel)
        if fam is not None:
            out.setdefault(fam, {}).update(numerics.definitions(source))
    return out


def all_definitions(files: dict[str, str]) -> dict[str, set[str]]:
    """{name: {hashes}} over every package file that can change a number (the library included, the runner and the
    compendium's bookkeeping not): where a moved definition is looked for."""
    out: dict[str, set[str]] = {}
    for rel, source in files.items():
        if not numerics.counts_as_code(rel):
            continue
        try:
            for name, h in numerics.definitions(source).items():
                out.setdefault(name, set()).add(h)
        except SyntaxError:
            continue
    return out


@functools.lru_cache(maxsize=256)
def notebook_code(text: str) -> str:
    """A hash of a notebook's code cells (JSON text): imports and docstrings left out, `alias.name` read as `name`
    where `alias` is a module of this package imported by the notebook; cells with shell or magic lines by text."""
    nb = json.loads(text)
    h = hashlib.sha256()
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", []))
        try:
            tree = ast.parse(source)
        except SyntaxError:
            h.update(source.encode())
            continue
        ours = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("romae"):
                ours.update(a.asname or a.name for a in node.names)
            elif isinstance(node, ast.Import):
                ours.update((a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("romae"))

        class Unqualify(ast.NodeTransformer):
            def visit_Attribute(self, node):
                self.generic_visit(node)
                if isinstance(node.value, ast.Name) and node.value.id in ours:
                    return ast.copy_location(ast.Name(id=node.attr, ctx=node.ctx), node)
                return node

        tree = Unqualify().visit(numerics._strip(tree))
        h.update(ast.dump(tree, annotate_fields=False, include_attributes=False).encode())
    return h.hexdigest()[:16]


def record(modules: list[str], notebook: Path, files: dict[str, str] | None = None,
           ids: dict[str, str] | None = None) -> dict:
    """The code part of a format-2 provenance record for a kernel that imported package `modules`
    ('romae/model.py', ...) and ran `notebook`: numerics, definitions, notebook_code (see the module docstring).
    `files`, `ids`: another tree's sources and path ids (the re-key step); default: this checkout's."""
    files = _package_files() if files is None else files
    ids = numerics.ids() if ids is None else ids
    rels = sorted({m.removeprefix("romae/") for m in modules})
    paths = sorted({p for p in (numerics.path_of(r) for r in rels if "/" not in r) if p})
    fams = sorted({f for f in (family(r) for r in rels) if f})
    defs = family_definitions(files)
    return {"format": FORMAT, "numerics": {p: ids[p] for p in paths},
            "definitions": {f: defs.get(f, {}) for f in fams},
            "notebook_code": {_shown(Path(notebook)): notebook_code(Path(notebook).read_text())}}


def notebook_modules(notebook: Path, root: Path = PACKAGE) -> list[str]:
    """'romae/...' files a notebook's code imports from this package, with everything they import in turn
    (`romae.cache.module_closure`, read from source): what its kernel can have run, whatever its manifest caught
    (issue 43: a manifest written by `report._note_modules` after report.py moved to romae/compendium/ listed only
    the compendium's modules, so a run's record missed its experiment, data and library modules)."""
    from ..cache import _module_file, module_closure

    nb = json.loads(Path(notebook).read_text())
    dotted: set[str] = set()  # the package's modules named by an import, and for `from m import n` m and m.n
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        try:
            tree = ast.parse("".join(cell.get("source", [])))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                dotted.update([node.module, *(f"{node.module}.{a.name}" for a in node.names)])
            elif isinstance(node, ast.Import):
                dotted.update(a.name for a in node.names)
    found = {f for f in (_module_file(name, root) for name in dotted) if f}  # None: not this package's
    return [f"romae/{rel}" for rel in module_closure(tuple(sorted(found)), root)]


def _shown(path: Path) -> str:
    """A notebook's path as a record names it: from the repository root, or as given when it lies elsewhere."""
    path = path.resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


# definitions above the library whose text changed with no change of any number they give on the input they accept,
# each read, proven and signed off: (family, name) -> [(old hash, new hash, why)], exact (any later edit voids it).
# A record naming the old hash is current with the new one; the proof is a test that can fail.
EQUIVALENT = {
    ("data/uea", "read_ts"): [("e87df8ad03c74814", "a14bb16c05eb31a8",
                               "issue 45: the .ts reader streams its file line by line and refuses files that contradict "
                               "their header; on every file the old reader accepted and the new one accepts, both return "
                               "equal arrays, labels and header facts (272 files: BasicMotions, 216 generated, 25 edge "
                               "cases; tests/test_ts_strict.py::test_the_new_reader_reads_what_the_old_one_read)")],
    ("data/uea", "_timed"): [("9e3e694d72e57c5b", "f23b092f0fdbab37",
                              "issue 45: time stamps that are not finite or beyond float32's range are refused; the "
                              "others are parsed as before (the same proof as read_ts)")],
    ("data/uea", "load"): [("65117d4b3abf00b0", "041693ac317424d2",
                            "issue 45: a test file whose channels or kind (classes / targets) differ from the training "
                            "file's is refused at load; a matching pair loads as before (the same proof)")],
}


def signed_off(fam: str, name: str, old: str, new: str | None) -> bool:
    """Whether definition `name` of family `fam`, recorded as `old` and now `new`, is a change signed off in
    `EQUIVALENT` (the same numbers on every input it accepts)."""
    return any(o == old and n == new for o, n, _ in EQUIVALENT.get((fam, name), ()))


def changed(name: str, anywhere: dict[str, set[str]]) -> bool:
    """Whether a recorded definition `name`, not found unchanged, counts as a change: when a definition of that name
    exists with another body, or when it was a statement run for its effect. A named definition that is gone is no
    change by itself: what called it had to change, and counts where it is."""
    return name in anywhere or name.startswith("<")



def freshness(provenance: dict, root: Path = ROOT) -> tuple[str, list[str]]:
    """('current', []) when the code a run recorded would compute the same numbers now, else ('stale', what changed);
    a run without a record is stale."""
    if provenance.get("format") != FORMAT:
        return _freshness_v1(provenance, root)
    stale = []
    now = numerics.ids()
    for p, id_ in provenance.get("numerics", {}).items():
        if now.get(p) != id_:
            stale.append(f"numerics of {p}")
    files = _package_files(root / "romae")
    fams, anywhere = family_definitions(files), None
    for fam, defs in provenance.get("definitions", {}).items():
        current = fams.get(fam, {})
        for name, h in defs.items():
            if current.get(name) == h or signed_off(fam, name, h, current.get(name)):
                continue
            anywhere = all_definitions(files) if anywhere is None else anywhere
            if h not in anywhere.get(name, ()) and changed(name, anywhere):
                stale.append(f"{fam}: {name}")
    for nb, h in provenance.get("notebook_code", {}).items():
        path = root / nb
        if not path.exists() or notebook_code(path.read_text()) != h:
            stale.append(nb)
    if not (provenance.get("numerics") or provenance.get("definitions") or provenance.get("notebook_code")):
        return "stale", ["(no record of the code it ran)"]
    return ("stale", sorted(stale)) if stale else ("current", [])


def _freshness_v1(provenance: dict, root: Path) -> tuple[str, list[str]]:
    """A record of the byte-hashed house: current when every file it names has the same sha256."""
    files = dict(provenance.get("modules", {}), **provenance.get("notebook_file", {}))
    if not files:
        return "stale", ["(no record of the code it ran)"]
    changed = [f for f, h in files.items()
               if not (root / f).exists() or hashlib.sha256((root / f).read_bytes()).hexdigest() != h]
    return ("stale", sorted(changed)) if changed else ("current", [])


def code_state(notebooks: list[str], profile: str, folder: Path) -> str:
    """'current', or 'stale: <what changed its numbers since the run>' (`romae.runner.provenance.freshness`) for the runs of an artefact's notebooks: each notebook's
    run in `profile`, or, for a notebook without one (Table 7: 15 ran at the paper's scale, 16 only in quick), its
    best-ranked run, the one whose rows the front page shows for it."""
    from ..compendium.report import PROFILE_RANK, provenance_of

    stems = sorted({p.stem for nb in notebooks for p in (ROOT / "notebooks").glob(f"{nb}_*.ipynb")})
    changed: set[str] = set()
    for stem in stems:
        record = provenance_of(stem, profile, folder)
        for other in sorted(PROFILE_RANK, key=PROFILE_RANK.get):
            record = record or provenance_of(stem, other, folder)
        state, files = freshness(record)
        changed.update(f"{stem}: {f}" if f.startswith("(") else f for f in files)
    return "current" if not changed else "stale: " + ", ".join(sorted(changed))
