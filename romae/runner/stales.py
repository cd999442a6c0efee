"""What a change stales, and why: `python -m romae.runner.stales [BASE [HEAD]]` (the rule: `romae.compendium.staleness`).

For a working tree against HEAD (or commit HEAD against commit BASE), the notebook runs (their published artefacts
and the trainings their code runs) and the kept trainings whose record names its roots that the change stales, each
with the units responsible. `planted` does the same for edits made to a copy of the package: the mutation test
(tests/test_staleness_mutations.py).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ..compendium import devices
from ..compendium.staleness import (PACKAGE, ROOT, TRAINING_ROOTS, Tree, code_id, device_of, explain, here, is_record,
                                    record)


def _differ(a: dict, b: dict) -> bool:
    """Whether two records of one result decide differently (code id, or what it ran on CUDA)."""
    return code_id(a) != code_id(b) or a.get("device_units") != b.get("device_units")
from .provenance import notebook_code, notebook_roots


def tree_at(commit: str, where: Path) -> Tree:
    """The package at `commit`, written out under `where` (its workloads run there)."""
    out = subprocess.run(["git", "archive", commit, PACKAGE.name], cwd=ROOT, check=True, capture_output=True)
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(where)], input=out.stdout, check=True)
    return Tree.of(where / PACKAGE.name)


def _notebooks(commit: str | None) -> dict[str, str]:
    """{notebook stem: JSON text} of the numbered notebooks in the working tree or at `commit`."""
    if commit is None:
        return {p.stem: p.read_text() for p in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))}
    names = subprocess.run(["git", "ls-tree", "--name-only", commit, "notebooks/"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    return {Path(n).stem: subprocess.run(["git", "show", f"{commit}:{n}"], cwd=ROOT, check=True, capture_output=True,
                                         text=True).stdout for n in names if n.endswith(".ipynb")}


def stales(base: str = "HEAD", head: str | None = None) -> dict[str, list[str]]:
    """{what: why} for each notebook run (its published artefacts and the trainings its code runs) and each kept
    training whose record names its roots, that the change from commit `base` to `head` (a commit, or the working
    tree when None) stales. A kept training is judged in its record's class (`romae.compendium.devices`); a notebook
    in each class, named with the classes only where the change stales it in some of them ('notebook 02 (cuda)':
    its runs on a CUDA device only)."""
    with tempfile.TemporaryDirectory() as tmp:
        trees = [tree_at(base, Path(tmp) / "base"), here() if head is None else tree_at(head, Path(tmp) / "head")]
        if head is not None:  # a commit against a commit: its workloads compared with base's on this CPU
            trees[1].like = trees[0]
        books = [_notebooks(base), _notebooks(head)]
        out: dict[str, list[str]] = {}
        for stem in sorted(set(books[0]) | set(books[1])):
            if stem not in books[0] or stem not in books[1]:
                continue
            by_class = {}
            for cls in devices.CLASSES:
                recs = [record(notebook_roots(b[stem], t), t, cls) for t, b in zip(trees, books)]
                by_class[cls] = explain(*recs) if _differ(*recs) else []
                if notebook_code(books[0][stem]) != notebook_code(books[1][stem]):  # what freshness compares
                    by_class[cls].append(f"notebooks/{stem}.ipynb: its code cells changed")
            hit = [c for c in devices.CLASSES if by_class[c]]
            if hit:
                label = f"notebook {stem}" + (f" ({', '.join(hit)})" if len(hit) < len(devices.CLASSES) else "")
                out[label] = next(by_class[c] for c in hit)
        for twin in sorted((ROOT / "reports" / "trainings").rglob("*.json")):
            try:
                meta = json.loads(twin.read_text())
            except ValueError:
                continue
            rec = meta.get("code_of") if isinstance(meta, dict) else None
            if not is_record(rec):
                continue
            recs = [record(rec["roots"], t, device_of(rec)) for t in trees]
            if _differ(*recs):
                out[f"kept {twin.relative_to(ROOT).with_suffix('')}"] = explain(*recs)
        return out


# ----------------------------------------------------------------------------- planted changes (the mutation test)

@functools.lru_cache(maxsize=4)
def consumers(tree: Tree | None = None) -> dict[str, list[str]]:
    """{name: roots} of what results run: each notebook's run (its code cells' roots) and a kept training through
    `fit_cached` (`TRAINING_ROOTS`)."""
    tree = tree or here()
    out = {f"notebook {stem}": notebook_roots(text, tree) for stem, text in _notebooks(None).items()}
    out["kept training (fit_cached)"] = list(TRAINING_ROOTS)
    return out


def planted(edits, tree: Tree | None = None, device: str = "cpu") -> dict[str, list[str]]:
    """{consumer: why} for the `consumers` whose record changes when `edits` [(file, old, new), ...] are made to a copy
    of this checkout's package (each `old` must occur exactly once in its file): what that change would stale in
    results computed on `device` (a class, `romae.compendium.devices`: 'cpu' or 'cuda')."""
    import shutil

    base = tree or here()
    wanted = consumers(base)
    before = {name: record(roots, base, device) for name, roots in wanted.items()}
    with tempfile.TemporaryDirectory() as tmp:
        copy_ = Path(tmp) / PACKAGE.name
        shutil.copytree(PACKAGE, copy_, ignore=shutil.ignore_patterns("__pycache__"))
        for rel, old, new in edits:
            path = copy_ / rel
            text = path.read_text()
            if text.count(old) != 1:
                raise ValueError(f"{rel}: {old!r} occurs {text.count(old)} times, not once")
            path.write_text(text.replace(old, new))
        other = Tree.of(copy_)
        other.like = base  # its workloads compared with the checkout's on this CPU (`numerics.measure`)
        out = {}
        for name, roots in wanted.items():
            a, b = before[name], record(roots, other, device)
            if _differ(a, b):
                out[name] = explain(a, b) or ["its code changed"]
        return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m romae.runner.stales",
                                     description="What a change stales: the notebook runs and kept trainings whose code "
                                                 "it changes, each with the units responsible.")
    parser.add_argument("base", nargs="?", default="HEAD", help="the commit the records are current at (HEAD)")
    parser.add_argument("head", nargs="?", default=None, help="the changed commit (default: the working tree)")
    parser.add_argument("--shown", type=int, default=12, help="units listed per result (default 12)")
    args = parser.parse_args(argv)
    found = stales(args.base, args.head)
    what = f"{args.base}..{args.head or 'the working tree'}"
    if not found:
        print(f"{what}: stales nothing")
        return 0
    print(f"{what}: stales {len(found)}")
    for name, why in found.items():
        print(f"  {name}")
        for w in why[:args.shown]:
            print(f"      {w}")
        if len(why) > args.shown:
            print(f"      ... and {len(why) - args.shown} more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
