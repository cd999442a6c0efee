"""The re-key of issue 51: records made under the rule before it become current under the sound rule only where that
rule proves the code they ran is the code now.

    python -m romae.runner.rekey            # the proof for every record, printed
    python -m romae.runner.rekey --write    # + proven provenance records rewritten, the rest marked with why

The proof of a record made at commit C: under the sound rule (`romae.compendium.staleness`), the closure of what its
notebook's code cells name has the same code id at C (its package and notebook written out from git, the workloads of
this checkout's `romae.compendium.numerics` run on that package) as here, and the notebook's code cells are the same. A kept
training is judged by its notebook's closure, which holds everything the notebook's trainings run (its cells, which
a training does not run, left out), at the commit that added it (for one carried by issue 42's re-key, the commit that added the entry it came from). A run that ran on
uncommitted code (`+dirty`) cannot be proven.

A proven provenance record is rewritten in format 3 (`romae.runner.provenance`); an unproven one keeps its files
and gets `unproven`: why, which the front page shows. Kept trainings are never rewritten here: a training's key is
known to the run that asks for it, so a proven one would be carried by that run; an unproven one reads stale in
`python -m romae.trainings` and is trained again by the next run that asks for it.
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ..compendium import staleness
from . import provenance, stales

ROOT = staleness.ROOT
NOTEBOOK_OF = {"pendulum_": "14", "position_": "01", "spiral_": "15", "synthetic_": "15", "uea_": "12"}


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def added_in(path: str) -> str | None:
    """The commit that first added `path` (repository-relative), on any branch; None if git never had it."""
    out = _git("log", "--all", "--diff-filter=A", "--format=%h", "--", path).split()
    return out[-1] if out else None


@functools.lru_cache(maxsize=None)
def proof(commit: str, notebook: str, cells: bool = True) -> str:
    """'' when the code notebook `notebook` ('notebooks/14_pendulum.ipynb') can run is, under the sound rule, the
    same at `commit` as here (and, with `cells`, its code cells too: what its artefacts also depend on); else why
    not."""
    if not commit or commit.endswith("+dirty"):
        return f"ran on {commit or 'an unrecorded commit'}: uncommitted code, which no proof can read"
    now_path = ROOT / notebook
    if not now_path.exists():
        return f"{notebook} is gone"
    try:
        then_text = _git("show", f"{commit}:{notebook}")
    except subprocess.CalledProcessError:
        return f"{notebook} did not exist at {commit}"
    if cells and provenance.notebook_code(then_text) != provenance.notebook_code(now_path.read_text()):
        return f"{notebook}: its code cells changed since {commit}"
    with tempfile.TemporaryDirectory() as tmp:
        try:
            then = stales.tree_at(commit, Path(tmp) / "tree")
            a = then.record(provenance.notebook_roots(then_text, then))
        except Exception as e:  # noqa: BLE001 -- an old package that does not parse or run
            return f"its code at {commit} could not be read ({type(e).__name__}: {str(e)[:120]})"
    b = staleness.record(provenance.notebook_roots(now_path.read_text()))
    if staleness.code_id(a) == staleness.code_id(b):
        return ""
    why = staleness.explain(a, b)
    return f"{len(why)} units differ since {commit}, e.g. {why[0]}"


def provenance_records() -> list[Path]:
    return sorted((ROOT / "reports").glob("provenance/*.json")) + sorted((ROOT / "reports").glob("variants/*/provenance/*.json"))


def judge_provenance(path: Path) -> str | None:
    """None for a record already in the sound rule's format, else its proof ('' when proven)."""
    rec = json.loads(path.read_text())
    if rec.get("format") == provenance.FORMAT:
        return None
    notebook = next(iter(rec.get("notebook_code", {})), f"notebooks/{rec.get('notebook')}.ipynb")
    return proof(str(rec.get("commit", "")), notebook)


def judge_training(twin: Path) -> tuple[str, str] | None:
    """None for a twin in the sound rule's format, else (the commit its training ran on, its proof)."""
    meta = json.loads(twin.read_text())
    if staleness.is_record(meta.get("code_of")):
        return None
    name = twin.stem.rsplit("-", 2)[0]
    stem = next((nb for prefix, nb in NOTEBOOK_OF.items() if name.startswith(prefix)), None)
    notebooks = sorted((ROOT / "notebooks").glob(f"{stem}_*.ipynb")) if stem else []
    origin = (meta.get("rekeyed_from") or {}).get("key")
    rel = twin.relative_to(ROOT).as_posix()
    commit = added_in(str(Path(rel).with_name(origin + ".json"))) if origin else added_in(rel)
    if not notebooks:
        return commit or "", f"no notebook is known to run {name}"
    return commit or "", proof(commit or "", notebooks[0].relative_to(ROOT).as_posix(), cells=False)


def rewrite(path: Path, why: str) -> None:
    """A proven record in format 3 (`why` == ''), or an unproven one marked with why."""
    rec = json.loads(path.read_text())
    if why:
        rec["unproven"] = f"not proven under the sound rule: {why} (python -m romae.runner.rekey)"
    else:
        notebook = ROOT / next(iter(rec.get("notebook_code", {})), f"notebooks/{rec.get('notebook')}.ipynb")
        old = {k: rec.pop(k) for k in ("format", "numerics", "definitions", "notebook_code", "unproven") if k in rec}
        rec.update(provenance.record(notebook), rekeyed={"by": "python -m romae.runner.rekey (issue 51)",
                                                          "from_format": old.get("format"),
                                                          "proven_at": rec.get("commit")})
    path.write_text(json.dumps(rec, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m romae.runner.rekey", description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite proven provenance records, mark the others")
    args = parser.parse_args(argv)
    proven = 0
    for path in provenance_records():
        why = judge_provenance(path)
        if why is None:
            continue
        proven += not why
        print(f"{path.relative_to(ROOT)}: {'proven' if not why else 'not proven: ' + why}", flush=True)
        if args.write:
            rewrite(path, why)
    twins = sorted(p for p in (ROOT / "reports" / "trainings").rglob("*.json") if p.name != "rekey.json")
    counts: dict[str, int] = {}
    for twin in twins:
        judged = judge_training(twin)
        if judged is None:
            continue
        commit, why = judged
        counts[why or "proven"] = counts.get(why or "proven", 0) + 1
    for why, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"kept trainings: {n} {'proven' if why == 'proven' else 'not proven: ' + why}")
    print(f"provenance records proven: {proven}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
