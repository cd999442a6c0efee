"""The numerics workloads' ids and the lines they run (`romae.compendium.workloads` holds the workloads).

A workload's vector (`romae.compendium.workloads.vector`) moves when the arithmetic it runs changes and stays equal
(to rounding, `RTOL`) when a comment, a rename, a moved function or a refactor keeps it. Vectors seen before are kept,
under their ids, in `numerics.json` beside this module (the registry), so a vector equal to a registered one within
the tolerances gets that one's id on any machine (another CPU's kernels round differently in the last bits); an
unregistered vector gets an id from its rounded values (shown with '~'), and `python -m romae.numerics --register`
adds it.

`measure` runs the workloads in a fresh process under a line tracer (a package's own `workloads.py` run as a script,
with that package on PYTHONPATH: this checkout, another commit's, a copy with a planted change; so a commit's ids are
those its records hold, and a changed workload stales what it vouched for): each workload's id and the lines of the
package it executed, which is what lets the staleness rule mask those statements out of a unit's hash.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # romae/
REGISTRY = Path(__file__).resolve().parent / "numerics.json"
# a vector matches a registered one when every entry agrees this closely: float64 workloads to 1e-6, float32 ones
# (what trainings on a CPU run: the hand-derived float32 RMSNorm, RoPE's float32 rotation, fused AdamW) to 1e-5,
# the rounding another CPU's kernels may add over a few steps
RTOL, ATOL = 1e-6, 1e-9
# float32 parts: 1e-4 relative, 1e-6 absolute (seen: an Intel Xeon's AVX-512 kernels against the AVX2 ones that
# registered the ids, 3e-5 relative and 2e-7 absolute on sums that cancel to ~0); the float64 parts catch any real change
RTOL32, ATOL32 = 1e-4, 1e-6
ROUND = 6  # significant digits of an unregistered vector's id

# the workloads (`romae.compendium.workloads.WORKLOADS`), in the order that names who vouches for a line first
PATHS = ("model", "train", "metrics", "builders", "images", "audio", "baselines", "transfer", "kept")


# ----------------------------------------------------------------------------- ids

def _parts(v) -> dict[str, list[float]]:
    return v if isinstance(v, dict) else {"float64": list(v)}  # a plain list: a float64 vector


def _close(a: list[float], b: list[float], rtol: float, atol: float = ATOL) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= atol + rtol * max(abs(x), abs(y)) for x, y in zip(a, b))


def _matches(a, b) -> bool:
    """Whether two vectors (`vector`'s dicts) agree: the same parts, each within its tolerance."""
    a, b = _parts(a), _parts(b)
    return a.keys() == b.keys() and all(_close(a[k], b[k], *((RTOL32, ATOL32) if k == "float32" else (RTOL, ATOL))) for k in a)


def _rounded_id(v) -> str:
    digits = {k: ROUND if k == "float64" else ROUND - 2 for k in _parts(v)}
    text = json.dumps({k: [float(f"{x:.{digits[k]}g}") for x in xs] for k, xs in sorted(_parts(v).items())})
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def registry(path: Path = REGISTRY) -> dict:
    """{path: {id: vector}}: the vectors seen before (`--register`)."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {}


def identify(path: str, v, known: dict | None = None) -> str:
    """The id of `path`'s vector `v`: a registered vector's id when one matches within RTOL, else one from v's
    rounded values (marked '~': not registered)."""
    for id_, w in (registry() if known is None else known).get(path, {}).items():
        if _matches(v, w):
            return id_
    return "~" + _rounded_id(v)


MEMO = PACKAGE.parent / ".cache" / "romae" / "numerics"
IN_WORKLOAD = "ROMAE_IN_NUMERICS_WORKLOAD"  # set in the process that runs the workloads (workloads.IN_WORKLOAD)
WORKLOADS_FILE = Path(__file__).resolve().parent / "workloads.py"  # run as a script: `measure`


def _state(package: Path, files) -> str:
    """What a workload's numbers and lines depend on: the bytes of the library files it runs (`files`) and of these
    workloads, the registry, torch's and numpy's versions and the CPU's kernel set."""
    import numpy as np
    import torch

    h = hashlib.sha256(f"{torch.__version__} {np.__version__} {torch.backends.cpu.get_cpu_capability()}".encode())
    for rel in sorted(set(files)):
        f = Path(package) / rel
        h.update(rel.encode() + (f.read_bytes() if f.is_file() else b"<absent>"))
    h.update(_workloads(package).read_bytes() + Path(__file__).read_bytes()
             + (REGISTRY.read_bytes() if REGISTRY.exists() else b""))
    return h.hexdigest()[:20]


def _workloads(package: Path) -> Path:
    """The workloads a package is measured by: its own (a commit's ids are what its records hold), else ours."""
    own = Path(package) / "compendium" / "workloads.py"
    return own if own.is_file() else WORKLOADS_FILE


def measure(package: Path | None = None, like: dict | None = None) -> dict:
    """{"ids": {path: id}, "lines": {path: {file: [lines]}}, "vectors": {path: vector}}: each workload's id
    (`identify`), the lines of the package it executed (a line tracer) and its vector on this CPU, for the package in
    folder `package` (default: this one), run in a fresh process. Memoised on disk (.cache/romae/numerics/) per
    workload by the bytes of the files it ran: a workload whose files are unchanged is not run again (a change to
    baselines.py reruns the baselines' workload only).

    `like`: another package's `measure` on this CPU (the one a change is made to: `romae.runner.stales`). A vector
    that no registered one matches is then compared with that package's, on the same kernels: equal, it takes that
    package's id; else it is new arithmetic and keeps its unregistered id, without the runs on other kernel sets
    (`_on_other_kernels`) that only tell this CPU's rounding from a change. Ids found so are not memoised."""
    package = Path(package).resolve() if package is not None else PACKAGE
    found: dict = {"ids": {}, "lines": {}, "vectors": {}}
    todo = []
    for p in PATHS:
        try:
            ran = json.loads((MEMO / f"{p}-files.json").read_text())  # the files it ran last time it was measured
            memo = json.loads((MEMO / f"{p}-{_state(package, ran)}.json").read_text())
            found["ids"][p], found["lines"][p], found["vectors"][p] = memo["id"], memo["lines"], memo["vector"]
        except (OSError, ValueError, KeyError):
            todo.append(p)
    if not todo:
        return found
    data = _run(package, todo, "--lines")
    ids = {p: "failed" if v is None else identify(p, v) for p, v in data["vectors"].items()}
    relative = set()
    if like is not None:  # compared with `like` on this CPU where it has the vector
        for p, i in ids.items():
            other = like.get("vectors", {}).get(p)
            if i.startswith("~") and other is not None:
                relative.add(p)
                if _matches(data["vectors"][p], other):
                    ids[p] = like["ids"][p]
    ids.update(_on_other_kernels([p for p, i in ids.items() if i.startswith("~") and p not in relative], package))
    for p in todo:
        found["ids"][p], found["lines"][p], found["vectors"][p] = ids[p], data["lines"][p], data["vectors"][p]
        if ids[p] == "failed" or p in relative:  # never memoised: the next measure runs it again
            continue
        try:
            from ..storage import write_atomic

            MEMO.mkdir(parents=True, exist_ok=True)
            ran = sorted(data["lines"][p])
            write_atomic(MEMO / f"{p}-files.json", json.dumps(ran) + "\n")
            write_atomic(MEMO / f"{p}-{_state(package, ran)}.json",
                         json.dumps({"id": ids[p], "lines": data["lines"][p], "vector": data["vectors"][p]},
                                    sort_keys=True) + "\n")
        except (OSError, ImportError):  # a read-only checkout, or run as a script: measured again next time
            pass
    for key in found:
        found[key] = {p: found[key][p] for p in PATHS}
    return found


def ids() -> dict[str, str]:
    """Every path's current id (`measure`)."""
    return measure()["ids"]


CAPABILITIES = ("avx2", "default")  # ATen's CPU kernel sets below AVX-512, tried for a vector this CPU cannot match


def _on_other_kernels(paths: list[str], package: Path = PACKAGE) -> dict[str, str]:
    """{path: registered id} for those of `paths` whose workload, run by this same code in a fresh process on another
    of ATen's CPU kernel sets (`CAPABILITIES`, via ATEN_CPU_CAPABILITY), gives a registered vector: the code is the
    registered code and only this CPU's kernels round differently (seen: an AVX-512 CPU's float32 attention differs
    from the AVX2 kernels' that registered the ids by up to 3e-5, and by 1e-7 on sums that cancel to ~0). Without
    this, every kept training would read stale on such a CPU and a run would train again what it has. Paths no kernel
    set matches keep their unregistered id."""
    import os

    import torch

    found: dict[str, str] = {}
    here = torch.backends.cpu.get_cpu_capability().lower()
    for cap in CAPABILITIES:
        todo = [p for p in paths if p not in found]
        if not todo or cap == here or os.environ.get("ATEN_CPU_CAPABILITY", "").lower() == cap:
            continue
        try:
            vectors = _run(package, todo, ATEN_CPU_CAPABILITY=cap)["vectors"]
        except (OSError, ValueError, KeyError, RuntimeError):
            continue
        for p, v in vectors.items():
            id_ = identify(p, v)
            if not id_.startswith("~"):
                found[p] = id_
    return found


def _run(package: Path, paths: list[str], *flags: str, **env_extra: str) -> dict:
    """{"vectors": ..., "lines": ...} of `paths`' workloads run on the package in folder `package`, in a fresh
    process (`workloads.py` as a script); RuntimeError with its stderr when that process fails. The workloads run as
    themselves, whatever this process was asked for: no record open, no device, dry run or precision, no echo."""
    import os
    import subprocess
    import tempfile

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(package).parent), os.environ.get("PYTHONPATH", "")]))
    for name in ("ATEN_CPU_CAPABILITY", "ROMAE_TRAININGS", "ROMAE_DEVICE", "ROMAE_MAX_STEPS", "ROMAE_PRECISION",
                 "ROMAE_ECHO"):
        env.pop(name, None)
    env.update(env_extra, **{IN_WORKLOAD: "1"})  # the kept results a workload makes are keyed without measuring
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "measured.json"
        done = subprocess.run([sys.executable, str(_workloads(package)), "--paths", *paths, "--vectors", str(out), "--here",
                               "--quiet", *flags], cwd=tmp, env=env, capture_output=True, text=True, timeout=1200)
        if done.returncode != 0:
            raise RuntimeError(f"the numerics workloads failed on {package}:\n{done.stderr[-3000:]}")
        return json.loads(out.read_text())

