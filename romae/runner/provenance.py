"""Which code made a published notebook run, and whether it still would (`romae.compendium.staleness`).

A run's provenance record (<reports>/provenance/<notebook>.json, written by `romae.runner.reproduce`) holds, in
format 3:

- `code`: the code record of the run (`romae.compendium.staleness.record` of the places the notebook's code cells
  name: every unit they can run, each vouched for by a numerics workload or hashed);
- `notebook_code`: a hash of the notebook's code cells (their syntax trees, imports left out); its prose is not in it.

`freshness` says 'current' while both hold now. A record of an older format (the rule before issue 51) is current
only where issue 51's re-key proved it (rewritten in format 3); else it reads stale with the reason (its `unproven`).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from pathlib import Path

from ..compendium import staleness, syntax

ROOT = staleness.ROOT
FORMAT = 3
PREVIOUS = "recorded under the rule before issue 51, not proven under the sound one (its re-key)"


@functools.lru_cache(maxsize=256)
def notebook_code(text: str) -> str:
    """A hash of a notebook's code cells (JSON text): their syntax trees without imports (so a function moved to another
    module, imported from there, keeps it); a cell with shell or magic lines by its text."""
    h = hashlib.sha256()
    for cell in json.loads(text).get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", []))
        try:
            tree = syntax.parse(source)
        except SyntaxError:
            h.update(source.encode())
            continue
        tree.body = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
        h.update(ast.dump(tree, annotate_fields=False, include_attributes=False).encode())
    return h.hexdigest()[:16]


def notebook_roots(text: str, tree: staleness.Tree | None = None) -> list[str]:
    """The places a notebook's code cells (its JSON `text`) name: what its kernel can run of the package."""
    tree = tree or staleness.here()
    cells = [c for c in json.loads(text).get("cells", []) if c.get("cell_type") == "code"]
    lines = [ln for c in cells for ln in "".join(c.get("source", [])).splitlines()
             if not ln.lstrip().startswith(("%", "!"))]
    try:
        parsed = syntax.parse("\n".join(lines))
    except SyntaxError:
        return []
    m = staleness.Module("__notebook__.py", "\n".join(lines))
    inner = {id(n.value) for n in ast.walk(parsed) if isinstance(n, ast.Attribute)}
    roots = set()
    for node in ast.walk(parsed):
        if not isinstance(node, (ast.Name, ast.Attribute)) or id(node) in inner:
            continue
        chain = staleness._name(node)
        head, _, rest = (chain or "").partition(".")
        for target in sorted(m.imports.get(head, ())):
            found = tree.resolve(target + (f".{rest}" if rest else ""))
            if found and found[0] != "external":
                roots.add(found[1])
    for targets in m.imports.values():  # a module imported and never named still ran at import
        for t in targets:
            found = tree.resolve(t)
            if found and found[0] == "module":
                roots.add(found[1])
    return sorted(roots)


def record(notebook: Path, device: str | None = None) -> dict:
    """The code part of a format-3 provenance record of a run of `notebook` computed on `device` (a class or a device,
    `romae.compendium.devices`; default: this process's)."""
    text = Path(notebook).read_text()
    return {"format": FORMAT, "code": staleness.record(notebook_roots(text), device=device),
            "notebook_code": {_shown(Path(notebook)): notebook_code(text)}}


def _shown(path: Path) -> str:
    """A notebook's path as a record names it: from the repository root, or as given when it lies elsewhere."""
    path = path.resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def freshness(provenance: dict, root: Path = ROOT) -> tuple[str, list[str]]:
    """('current', []) when the code a run recorded would compute the same numbers now, else ('stale', why); a run
    without a record, or with one of the rule before issue 51 that its re-key did not prove, is stale."""
    if not provenance:
        return "stale", ["(no record of the code it ran)"]
    if provenance.get("format") != FORMAT:
        return "stale", [f"({provenance.get('unproven') or PREVIOUS})"]
    stale = list(staleness.check(provenance.get("code")))
    for nb, h in provenance.get("notebook_code", {}).items():
        path = root / nb
        if not path.exists() or notebook_code(path.read_text()) != h:
            stale.append(f"{nb}: its code cells changed")
    return ("stale", stale) if stale else ("current", [])


def code_state(notebooks: list[str], profile: str, folder: Path) -> str:
    """'current', or 'stale: <what changed since the run>' (`freshness`, three reasons a notebook) for the runs of an
    artefact's notebooks: each notebook's
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
        shown = files[:3] + ([f"and {len(files) - 3} more (python -m romae.runner.stales)"]
                             if len(files) > 3 else [])
        cost = redo_cost(stem, record.get("profile", profile), folder) if state == "stale" and record else ""
        changed.update(f"{stem}: {f}" + (f" ({cost})" if cost and i == len(shown) - 1 else "")
                       for i, f in enumerate(shown))
    return "current" if not changed else "stale: " + ", ".join(sorted(changed))


def redo_cost(stem: str, profile: str, folder: Path) -> str:
    """What re-running notebook `stem` in `profile` costs, for a stale artefact: the plan's hours on one H100 (FP32,
    <reports>/plan/paper_h100.json) for the paper profile, else its longest successful run in runs.csv; '' if
    neither is known."""
    import pandas as pd

    reports = Path(folder) if (Path(folder) / "runs.csv").exists() else ROOT / "reports"
    nb = stem[:2]
    if profile == "paper":
        try:
            hours = json.loads((reports / "plan" / "paper_h100.json").read_text())["totals"][nb]["fp32"]
            return f"redo: about {hours:.2g} h on one H100 by the plan"
        except (OSError, ValueError, KeyError, TypeError):
            pass
    try:
        runs = pd.read_csv(reports / "runs.csv")
        done = runs[(runs.notebook == stem) & (runs.profile == profile) & (runs.status == "ok")]
        return f"redo: its longest {profile} run here took {done.seconds.max() / 60:.0f} min" if len(done) else ""
    except (OSError, ValueError, KeyError, AttributeError):
        return ""
