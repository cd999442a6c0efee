"""The re-key of issue 42: results keyed by the bytes of their modules carried to keys made of their numbers, each
only where it is proven that the code computes the same numbers now as at the commit they were made on.

    python -m romae.runner.rekey --base ccbdda5            # the proof, printed (nothing written)
    python -m romae.runner.rekey --base ccbdda5 --write    # + reports/trainings/rekey.json, provenance records

The proof, per code path:
- library paths (`romae.numerics.PATHS`): the workloads run on a checkout of `base` (its own modules, imported
  through the public API) and on this one give vectors equal within `romae.numerics.RTOL` (so far: bit for bit);
- modules above the library (data loaders, experiments, the compendium's record and statistics): every top-level
  definition the entry's old module list names at `base` is found here with the same syntax-tree hash, in its family
  or moved anywhere in the package (`romae.runner.provenance`);
- an entry is proven when all of its paths and modules are, and when its twin is what `base` kept (its code string is
  what `base`'s code would have keyed it by: its sha256 matches the bytes of its modules at `base`).
The proven kept trainings of issue 42 were carried to their new keys once (the same bytes, their twins naming the old
key under `rekeyed_from`) by the runs that re-published their notebooks; provenance records (format 1: file hashes)
that were current at `base` and whose code is proven the same are rewritten in format 2 (`romae.runner.provenance`).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import numerics
from . import provenance

ROOT = provenance.ROOT
# where a module of the byte-hashed house (package-relative) lives now, when it moved floors
MOVED = {"report.py": "compendium/report.py", "trainings.py": "compendium/trainings.py",
         "terminal.py": "compendium/terminal.py", "plan.py": "compendium/plan.py", "cost.py": "compendium/cost.py",
         "reference/__init__.py": "compendium/reference/__init__.py", "frontpage.py": "runner/frontpage.py",
         "reproduce.py": "runner/reproduce.py", "promise.py": "runner/promise.py", "bench.py": "runner/bench.py",
         "gpucheck.py": "runner/gpucheck.py"}


# definitions whose text changed in the re-key itself without any change of the numbers they compute, each read and
# signed off (old hash -> new hash, exact: any later edit voids it)
REVIEWED = {
    ("report.py", "ROOT"): ("a7bcf8cb7201e183", "e839dc814231b964",
                            "the repository root, read from one folder deeper (romae/compendium/report.py)"),
    ("experiments/interpolation.py", "_seeds"): ("c417d5520b3959e6", "b4524e19417f52d3",
                                                 "cached(..., keep=True) became kept(...): the same look-up and compute"),
    ("experiments/position.py", "_train"): ("a3ee9ac798c9ef4f", "cb77632d65c8779f",
                                            "fit gains on_progress=terminal.Training(), the lines fit used to write "
                                            "itself: no number changes"),
    ("experiments/position.py", "_kept"): ("7d5d7c1989f7f75d", "002fd22e6f78cdbe",
                                           "cached(..., keep=True) became kept(...) keyed by its own module's closure: "
                                           "the same compute"),
}


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def old_files(base: str) -> dict[str, str]:
    """{package-relative path: source} of romae/ at commit `base`."""
    names = [n for n in _git("ls-tree", "-r", "--name-only", base, "romae/").splitlines() if n.endswith(".py")]
    return {n.removeprefix("romae/"): _git("show", f"{base}:{n}") for n in names}


def old_vectors(base: str) -> dict[str, list[float]]:
    """The numerics workloads run on a checkout of `base` (this module's workloads, that checkout's package)."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", "-f", str(tree), base], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            out = Path(tmp) / "vectors.json"
            env = dict(os.environ, PYTHONPATH=str(tree))
            subprocess.run([sys.executable, str(Path(numerics.__file__)), "--vectors", str(out)], cwd=tmp, env=env,
                           check=True, capture_output=True)
            return json.loads(out.read_text())
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)


def prove_numerics(base: str) -> dict:
    """{path: {old, new, equal, max_rel_diff}}: the workloads' vectors at `base` and here."""
    old = old_vectors(base)
    out = {}
    for p in numerics.PATHS:
        new = numerics.vector(p)
        a = old.get(p)
        out[p] = {"old": numerics.identify(p, a) if a else None, "new": numerics.identify(p, new),
                  "equal": bool(a) and numerics._matches(a, new),
                  "max_rel_diff": numerics.max_rel_diff(a, new) if a else float("inf"),
                  "numbers": sum(len(x) for x in numerics._parts(new).values())}
    return out


def extend_registry(base: str, write: bool) -> dict:
    """After a workload grows (a new part, e.g. the float32 runs), each path's registered id keeps vouching for the
    numbers it named, with the grown vector, when the grown workload gives the same vector on `base` and here and
    the old part is the registered one -> {path: what happened}."""
    old = old_vectors(base)
    known = numerics.registry()
    out = {}
    for p in numerics.PATHS:
        new = numerics.vector(p)
        ids = [i for i, v in known.get(p, {}).items()
               if numerics._close(numerics._parts(v)["float64"], new["float64"], numerics.RTOL)]
        if len(ids) != 1 or p not in old or not numerics._matches(old[p], new):
            out[p] = f"left: ids {ids}, same on {base}: {p in old and numerics._matches(old[p], new)}"
            continue
        known[p][ids[0]] = new
        out[p] = f"{ids[0]}: grown vector registered (same at {base} and here, max relative difference " \
                 f"{numerics.max_rel_diff(old[p], new):.1e})"
    if write:
        numerics.REGISTRY.write_text(json.dumps(known, indent=0, sort_keys=True) + "\n")
    return out


def _now(rel_old: str) -> str:
    return MOVED.get(rel_old, rel_old)


def prove_definitions(old: dict[str, str], new: dict[str, str], rels: list[str]) -> dict[str, list[str]]:
    """{old module: [definitions not found unchanged here]} for the modules above the library among `rels`."""
    new_fams, anywhere = _indexed(tuple(sorted(new.items())))
    out = {}
    for rel in rels:
        now = _now(rel)
        fam = provenance.family(now)
        if fam is None or rel not in old:
            continue
        missing = [name for name, h in _defs(old[rel]).items()
                   if new_fams.get(fam, {}).get(name) != h and h not in anywhere.get(name, ())
                   and not _reviewed(rel, name, h, anywhere) and provenance.changed(name, anywhere)]
        out[rel] = missing
    return out


def _reviewed(rel: str, name: str, old_hash: str, anywhere: dict) -> bool:
    """Whether `REVIEWED` signs off this exact change of definition `name` of old module `rel`."""
    review = REVIEWED.get((rel, name))
    return review is not None and review[0] == old_hash and review[1] in anywhere.get(name, ())


@functools.lru_cache(maxsize=4)
def _indexed(new: tuple) -> tuple[dict, dict]:
    files = dict(new)
    return provenance.family_definitions(files), provenance.all_definitions(files)


@functools.lru_cache(maxsize=None)
def _defs(source: str) -> dict[str, str]:
    return numerics.definitions(source)


def _old_code(old: dict[str, str], modules: list[str]) -> str:
    """The byte-hashed house's code string for `modules` (its `romae.cache.code_version(modules=...)`)."""
    h = hashlib.sha256()
    for rel in sorted(set(modules)):
        if rel in ("report.py", "reproduce.py", "cache.py", "trainings.py", "plan.py", "cost.py"):
            continue
        data = old[rel].encode()
        h.update(b"%s\0%d\0" % (rel.encode(), len(data)) + data)
    return h.hexdigest()


def prove_trainings(folder: Path, base: str, paths: dict, old: dict[str, str], new: dict[str, str]) -> dict:
    """{old key: {code, proven, why}} for every kept training of `folder` still under a byte-hashed key."""
    out = {}
    for twin in sorted(Path(folder).glob("*.json")):
        if twin.name == "rekey.json":
            continue
        meta = json.loads(twin.read_text())
        modules = meta.get("modules")
        if not modules or "code_of" in meta:
            continue
        why = []
        if any(m not in old for m in modules) or _old_code(old, modules) != meta.get("code"):
            why.append(f"its code string is not {base}'s for its modules")
        libs = sorted({numerics.path_of(m) for m in modules if "/" not in m and _now(m) == m} - {None})
        why += [f"numerics of {p} differ" for p in libs if not paths[p]["equal"]]
        # what can make a training's inputs: the data loaders and the experiments (the compendium's modules were in
        # the old keys only because experiments import them: they plan, tell and record, they compute no training)
        above = [m for m in modules if m.startswith(("data/", "experiments/"))]
        for rel, missing in prove_definitions(old, new, above).items():
            if missing:
                why.append(f"{rel}: {', '.join(missing[:5])} changed")
        out[twin.stem] = {"code": meta.get("code"), "proven": not why, "paths": libs,
                          "definitions": sorted(above),
                          **({"why": why} if why else {})}
    return out


def migrate_provenance(reports: Path, base: str, paths: dict, old: dict[str, str], new: dict[str, str],
                       write: bool) -> dict:
    """Rewrite every format-1 provenance record under `reports` that was current at `base` and whose code is proven
    the same, in format 2 -> {record: 'rewritten' | 'left: <why>'}."""
    out = {}
    ids = numerics.ids()
    for path in sorted(Path(reports).rglob("provenance/*.json")):
        if "dry-run" in path.relative_to(reports).parts:  # a dry run's records (git-ignored) are no artefacts
            continue
        rec = json.loads(path.read_text())
        name = path.relative_to(reports).as_posix()
        if rec.get("format") == provenance.FORMAT:
            out[name] = "left: already format 2"
            continue
        files = dict(rec.get("modules", {}), **rec.get("notebook_file", {}))
        at_base = {}
        for f in files:
            try:
                at_base[f] = hashlib.sha256(_git("show", f"{base}:{f}").encode()).hexdigest()
            except subprocess.CalledProcessError:
                at_base[f] = None
        stale = [f for f, h in files.items() if at_base[f] != h]
        if stale:
            out[name] = f"left: not current at {base} ({', '.join(stale[:4])})"
            continue
        modules = [m.removeprefix("romae/") for m in rec.get("modules", {})]
        why = [f"numerics of {p}" for p in {numerics.path_of(m) for m in modules if "/" not in m and _now(m) == m}
               if p and not paths[p]["equal"]]
        why += [f"{rel}: {', '.join(m[:3])}" for rel, m in prove_definitions(old, new, modules).items() if m]
        for nb in rec.get("notebook_file", {}):
            then = provenance.notebook_code(_git("show", f"{base}:{nb}"))
            if then != provenance.notebook_code((ROOT / nb).read_text()):
                why.append(f"{nb}'s code")
        if why:
            out[name] = "left: " + "; ".join(why)
            continue
        now_modules = sorted({"romae/" + _now(m) for m in modules if (ROOT / "romae" / _now(m)).exists()
                              or provenance.family(_now(m))})
        nb = next(iter(rec.get("notebook_file", {})))
        code = provenance.record(now_modules, ROOT / nb, ids=ids)
        new_rec = {k: v for k, v in rec.items() if k not in ("modules", "notebook_file")}
        new_rec.update(code, rekeyed={"from_commit": base, "by": "python -m romae.runner.rekey"})
        if write:
            path.write_text(json.dumps(new_rec, indent=1, sort_keys=True) + "\n")
        out[name] = "rewritten"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m romae.runner.rekey", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the commit the byte-hashed keys were made on (e.g. ccbdda5)")
    parser.add_argument("--reports", default=str(ROOT / "reports"))
    parser.add_argument("--write", action="store_true", help="write rekey.json and the provenance records")
    parser.add_argument("--extend-registry", action="store_true",
                        help="only: register the grown workloads' vectors under the ids they keep (extend_registry)")
    args = parser.parse_args(argv)
    if args.extend_registry:
        for p, what in extend_registry(args.base, args.write).items():
            print(f"numerics {p:10s} {what}")
        return 0
    reports = Path(args.reports)
    old, new = old_files(args.base), provenance._package_files()
    paths = prove_numerics(args.base)
    for p, r in paths.items():
        print(f"numerics {p:10s} {r['old']} -> {r['new']}: {'equal' if r['equal'] else 'DIFFERENT'} "
              f"(max relative difference {r['max_rel_diff']:.1e} over {r['numbers']} numbers)")
    entries = prove_trainings(reports / "trainings", args.base, paths, old, new)
    proven = sum(e["proven"] for e in entries.values())
    print(f"kept trainings under byte-hashed keys: {len(entries)}, proven {proven}")
    for k, e in entries.items():
        if not e["proven"]:
            print(f"  NOT PROVEN {k}: {'; '.join(e['why'])}")
    records = migrate_provenance(reports, args.base, paths, old, new, args.write)
    for k, v in records.items():
        print(f"provenance {k}: {v}")
    if args.write and entries:
        proof = {"base": args.base, "numerics": paths, "entries": entries,
                 "how": "python -m romae.runner.rekey --base " + args.base + " --write (see its docstring)"}
        (reports / "trainings" / "rekey.json").write_text(json.dumps(proof, indent=1, sort_keys=True) + "\n")
    return 0 if proven == len(entries) else 1


if __name__ == "__main__":
    sys.exit(main())
