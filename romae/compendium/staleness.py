"""What stales a result, and why: the one rule (issue 51).

A kept training, a kept evaluation, a cached result and a published notebook run each hold a *code record*
(`record`): the code that computed them, unit by unit. A result is **current** while its record is what the code
gives now (`code_id` equal), else **stale**; `explain` names the units that differ.

**Units.** Each top-level function, each method, a class's own body (bases, decorators, class attributes), each
module-level assignment, and a module's other top-level statements (`<module>`), in every package module except
those that never compute a number a result holds (`NEVER_COMPUTES`, each with its reason).

**What a result ran: the closure of its roots.** The roots are what the computation was handed (a training: `fit`,
`fit_cached`, the model's class, the dataset's class, callables passed to fit; a kept or cached result: the function
computed and the package functions on the call stack that asked for it; a notebook run: what its code cells name).
From them every unit named is followed: names of their own module, names imported (at module level or inside a
function, or by `importlib.import_module` of a constant), attributes of modules (`files.sha256`). A class named
brings every method (any may run on its instances), a method brings its class's body, a module named as a value
brings all its units, and every unit brings its module's `<module>` statements.

**A unit's entry.** The workloads of `romae.compendium.numerics` run under a line tracer (`romae.compendium.numerics.measure`). A statement
a workload executed is vouched for by its numbers; every other statement is hashed. The entry is the hash of the
unit's syntax tree, normalised: docstrings, comments, formatting, import statements and its own name gone; the text
of error, warning, assert and print messages replaced by one mark (in `raise`, `assert`, `warnings.warn`, `print` and
a call of an exception class, `...Error(...)`); names of other packages written in full
(`np.sum` -> `numpy.sum`); each name that refers to another unit replaced by that unit's content hash (`ROUNDS`
deep, so a renamed or moved function changes nothing while calling another one does); and every statement a
workload executed replaced by a mark (runs of marks merged). The workloads that executed part of it are named in the
entry and their ids are the record's `numbers`. So a change to an executed statement is seen through the numbers,
a change to any other statement through the hash, and a rewording or a refactor that keeps the numbers changes
neither.

**Device classes** (`romae.compendium.devices`). Units that run only on CUDA (the CUDA-graph machinery) count in
`units` as they were when that rule came in, so a record's code id (a key) is one on every device and an edit there
stales nothing computed on a CPU; a result computed on CUDA also holds `device_units`, those units (and what only
they reach) as they are, which `check` compares too.

**The decision.** `code_id(record)`: a hash of the record's numbers and the sorted list of its entries, places left
out (so a renamed or moved unit keeps it). A kept result's key ends with it; a notebook run's provenance record
holds it. `explain(old, new)` pairs units by place, then the rest by content (a unit renamed or moved), and lists
what changed, started or stopped running, and the workloads whose numbers moved. What a change stales:
`python -m romae.runner.stales [BASE [HEAD]]` (default: the working tree against HEAD).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import pickle
import sys
from pathlib import Path

from . import devices, numerics, syntax
from .normalise import MARK, MESSAGES, _Mask, _name, _Normalise  # noqa: F401 (MARK, MESSAGES: the rule's words)

PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parent
ROUNDS = 2  # how deep a reference counts by its target's content: a unit that calls another, and what that calls

# package modules whose code never computes a number a result holds: not followed, not in any record
NEVER_COMPUTES = {
    "compendium/terminal.py": "the lines make reproduce shows while a notebook runs",
    "compendium/trainings.py": "the record's bookkeeping", "compendium/travel.py": "moves sha256-checked checkpoints",
    "compendium/plan.py": "estimates of time and memory; the micro-batch it picks is out of every key",
    "compendium/footprint.py": "the memory and time model behind the plan", "compendium/syntax.py": "parses source",
    "compendium/cost.py": "FLOPs and time estimates", "progress.py": "progress lines on the terminal",
    "compendium/settings.py": "reads the runtime make reproduce asks for (its device and precision are in every key)",
    "compendium/staleness.py": "this rule", "precheck.py": "checks that read their inputs, raise or warn, return None",
    "compendium/numerics.py": "the ids of the workloads", "compendium/workloads.py": "the workloads themselves",
    "compendium/devices.py": "which units run on one device type only (part of this rule)",
    "compendium/normalise.py": "how this rule normalises a unit",
    "compendium/cache.py": "where results are kept, how keys are written", "storage.py": "writes, digests, storage",
    "runner/": "what no notebook imports: it runs notebooks and lays out their reports",
    **{f: "an entry-point shim" for f in ("bench.py", "reproduce.py", "promise.py", "gpucheck.py", "trainings.py",
                                          "numerics.py")},
}


def computes(rel: str) -> bool:
    """Whether package file `rel` ('experiments/uea/data.py') can change a number (`NEVER_COMPUTES`)."""
    return not any(rel == x or (x.endswith("/") and rel.startswith(x)) for x in NEVER_COMPUTES)


def _sha(text: str) -> str:  # a short hash of a unit's text
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def dotted(rel: str) -> str:
    """'experiments/uea/data.py' -> 'romae.experiments.uea.data'; 'data/__init__.py' -> 'romae.data'."""
    parts = [PACKAGE.name, *rel[:-3].split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# ----------------------------------------------------------------------------- one module's units and imports

class Module:
    """A package module read from source: its units {qualname: node}, the top-level name each unit defines, and what
    each local name is imported as (a dotted name, ours or another package's)."""

    def __init__(self, rel: str, source: str):
        self.rel, self.name = rel, dotted(rel)
        self.package = self.name if rel.endswith("__init__.py") else self.name.rsplit(".", 1)[0]
        tree = syntax.parse(source)
        self.units: dict[str, ast.AST] = {}
        self.names: dict[str, str] = {}  # top-level name -> unit qualname
        self.imports: dict[str, set[str]] = {}
        self.classes: dict[str, list[str]] = {}  # class -> its method units
        others = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._imported(node)
            elif isinstance(node, ast.Call) and _name(node.func) in ("importlib.import_module", "import_module") \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                self.imports.setdefault(f"<import {node.args[0].value}>", set()).add(node.args[0].value)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._add(node.name, node, node.name)
            elif isinstance(node, ast.ClassDef):
                self._add(node.name, node, node.name)
                methods = [s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
                self.classes[node.name] = [f"{node.name}.{m.name}" for m in methods]
                for m in methods:
                    self.units[f"{node.name}.{m.name}"] = m
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = sorted({n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)})
                qual = ",".join(names) or f"<{_sha(ast.dump(node))}>"
                if qual in self.units:  # assigned twice: one unit of both statements
                    node = ast.Module(body=[self.units[qual], node], type_ignores=[])
                self._add(qual, node, *names)
            elif not _inert_toplevel(node):
                others.append(node)
        if others:
            self.units["<module>"] = ast.Module(body=others, type_ignores=[])

    def _add(self, qual: str, node: ast.AST, *names: str) -> None:
        self.units[qual] = node
        for n in names:
            self.names[n] = qual

    def _imported(self, node) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                local = a.asname or a.name.split(".")[0]
                self.imports.setdefault(local, set()).add(a.name if a.asname else a.name.split(".")[0])
            return
        if node.level:
            base = self.package.split(".")
            base = base[:len(base) - (node.level - 1)] + ([node.module] if node.module else [])
            base = ".".join(base)
        else:
            base = node.module or ""
        for a in node.names:
            if a.name != "*":
                self.imports.setdefault(a.asname or a.name, set()).add(f"{base}.{a.name}")


# normalised units of every tree, by (tree shape, the file's source, place, lines masked or None): `Tree._normalised`
_NORMALISED: dict[tuple, tuple[str, tuple[str, ...], frozenset[int]]] = {}
_NORMALISED_MAX = 200_000


@functools.lru_cache(maxsize=1024)
def _module(rel: str, source: str) -> Module:  # shared by every tree that holds the same file
    return Module(rel, source)


def _inert_toplevel(node) -> bool:
    """A top-level statement that computes nothing: imports, a docstring, `pass`, a try/if of imports (and of `x =
    None` for an optional package that is missing)."""
    inner = [s for s in ast.walk(node) if isinstance(s, ast.stmt) and s is not node] \
        if isinstance(node, (ast.Try, ast.If)) else [node]
    return all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) or (isinstance(s, ast.Expr) and s is node and
               isinstance(s.value, ast.Constant)) or (s is not node and isinstance(s, ast.Assign)
               and isinstance(s.value, ast.Constant) and s.value.value is None) for s in inner)


# ----------------------------------------------------------------------------- a tree of the package

class Tree:
    """The package as some version of it reads ({package-relative path: source}; `Tree.of(folder)`, `here()`), with
    each unit's references resolved and its entry computed (`entry`)."""

    def __init__(self, files: dict[str, str], folder: Path | None = None, device: str = "cuda"):
        self.device = device  # the record class (`romae.compendium.devices`): 'cuda' counts every unit as itself
        self.files = {rel: src for rel, src in files.items() if computes(rel)}
        self.skipped = {dotted(rel) for rel in files if not computes(rel)}
        self.folder = folder  # where the tree lies on disk (its workloads run there), None for the checkout
        self.by_name = {dotted(rel): rel for rel in self.files}
        self._measured = None
        self.like: Tree | None = None  # the tree this one is a change of: its workloads are compared on this CPU
        self._views: dict[str, Tree] = {device: self}

    def view(self, device: str) -> "Tree":
        """This tree for records of class `device` (`romae.compendium.devices`), sharing its workloads' numbers."""
        if device not in self._views:
            other = Tree(self.files, self.folder, device)
            other.skipped, other._views = self.skipped, self._views
            other.measured = self.measured  # one measurement for every class
            self._views[device] = other
        return self._views[device]

    def _foreign(self, place: str) -> bool:  # a unit that never runs in a result of this tree's class
        return devices.foreign(place, self.device)

    @classmethod
    def of(cls, package: Path) -> "Tree":
        package = Path(package).resolve()
        files = {p.relative_to(package).as_posix(): p.read_text() for p in sorted(package.rglob("*.py"))
                 if "__pycache__" not in p.parts}
        return cls(files, None if package == PACKAGE else package)

    def module(self, rel: str) -> Module:
        return _module(rel, self.files[rel])

    # -- resolving names to places ('model.py:Encoder.forward', 'data/files.py:' for a whole module)

    def resolve(self, name: str, depth: int = 0) -> tuple[str, str] | None:
        """('unit', place) / ('module', 'rel:') for a dotted name of ours, ('external', name) for another package's
        (or for one of ours that never computes), None when it cannot be told."""
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            mod = ".".join(parts[:i])
            if mod in self.by_name:
                rel, rest = self.by_name[mod], parts[i:]
                break
            if mod in self.skipped:
                return "external", name
        else:
            return None if parts[0] == PACKAGE.name else ("external", name)
        if not rest:
            return "module", f"{rel}:"
        m = self.module(rel)
        if rest[0] in m.names:
            return "unit", f"{rel}:{m.names[rest[0]]}"
        if rest[0] in m.imports and depth < 8:  # re-exported
            for target in sorted(m.imports[rest[0]]):
                found = self.resolve(".".join([target, *rest[1:]]), depth + 1)
                if found:
                    return found
        return "module", f"{rel}:"  # defined at run time (a module's __getattr__, globals()): the whole module

    def local(self, rel: str, chain: str) -> tuple[str, str] | None:
        """What `chain` ('np.sum', 'files.sha256', 'fit') means in module `rel`, or None (a local, a builtin)."""
        m = self.module(rel)
        head, _, rest = chain.partition(".")
        if head in m.names:
            return "unit", f"{rel}:{m.names[head]}"
        for target in sorted(m.imports.get(head, ())):
            return self.resolve(target + (f".{rest}" if rest else ""))
        return None

    # -- units, their references and hashes

    @functools.cached_property
    def units(self) -> dict[str, tuple[str, ast.AST]]:
        """{place: (rel, node)} of every unit of the tree."""
        return {f"{rel}:{q}": (rel, node) for rel in sorted(self.files) for q, node in self.module(rel).units.items()}

    @functools.cached_property
    def shape(self) -> str:
        """A hash of everything normalising a unit reads beyond its own module's source: the package's files, every
        module's top-level names, imports and class bases, and the modules that never compute. Two trees of one shape
        normalise a unit of the same source, masked by the same lines, alike (`_normalised`)."""
        h = hashlib.sha256(repr(sorted(self.skipped)).encode())
        for rel in sorted(self.files):
            m = self.module(rel)
            bases = {q: ast.dump(ast.Tuple(elts=n.bases, ctx=ast.Load())) for q, n in m.units.items()
                     if isinstance(n, ast.ClassDef)}
            h.update(repr((rel, sorted(m.names.items()), sorted((k, sorted(v)) for k, v in m.imports.items()),
                           sorted(bases.items()))).encode())
        return h.hexdigest()

    def _normalised(self, place: str, masked: bool) -> tuple[str, list[str], set[int]]:
        """(dump of the unit's normalised tree, the places its references name in order, the lines of the statements
        masked as run by a workload) (the module docstring). Shared by trees of one `shape` (a copy of the package
        with one file edited normalises the units of the others once)."""
        rel, node = self.units[place]
        hit = self._hit(None, rel) if masked else None
        key = (self.shape, self.files[rel], place, hit)  # the place names the file
        found = _NORMALISED.get(key)
        if found is None:
            node = pickle.loads(pickle.dumps(node, protocol=pickle.HIGHEST_PROTOCOL))  # a deep copy, faster
            ran: set[int] = set()
            if masked:
                node = _Mask(hit, ran).unit(node)
            refs: list[str] = []
            node = _Normalise(self, rel, refs).visit(node)
            found = (ast.dump(node, annotate_fields=False, include_attributes=False), tuple(refs), frozenset(ran))
            if len(_NORMALISED) >= _NORMALISED_MAX:
                _NORMALISED.clear()
            _NORMALISED[key] = found
        return found[0], list(found[1]), set(found[2])

    @functools.lru_cache(maxsize=None)
    def _plain(self, place: str) -> tuple[str, list[str]]:
        return self._normalised(place, masked=False)[:2]

    @functools.lru_cache(maxsize=None)
    def content(self, place: str, rounds: int = ROUNDS) -> str:
        """A unit's hash unmasked, its references counted `rounds` deep: what a reference to it stands for."""
        if self._foreign(place):  # as it was when the device rule came in (`romae.compendium.devices`)
            held = devices.frozen().get(place)
            return held["content"][min(rounds, 2) - 1] if held else devices.foreign_mark(place)
        if place not in self.units:
            return place  # a whole module, named by its place
        dump, refs = self._plain(place)
        if rounds <= 1:
            return _sha(dump)
        return _sha(dump + "|" + ",".join(self.content(r, rounds - 1) for r in refs))

    @functools.lru_cache(maxsize=None)
    def entry(self, place: str) -> str:
        """A unit's entry: 'hash', or 'hash@workload,...' naming the workloads that vouch for its masked statements
        (for each, the first workload in `romae.compendium.numerics.PATHS` order that ran it); a foreign unit's is
        the frozen one (`romae.compendium.devices`)."""
        if self._foreign(place):
            return devices.frozen()[place]["entry"]
        dump, refs, ran = self._normalised(place, masked=True)
        h = _sha(dump + "|" + ",".join(self.content(r, ROUNDS - 1) for r in refs))
        rel = self.units[place][0]
        measured = self.measured()["lines"]
        order = [w for w in numerics.PATHS if w in measured] + [w for w in measured if w not in numerics.PATHS]
        by = sorted({next(w for w in order if ln in self._hit(w, rel)) for ln in ran})
        return h + ("@" + ",".join(by) if by else "")

    @functools.lru_cache(maxsize=None)
    def _hit(self, workload: str | None, rel: str) -> frozenset[int]:  # the lines of `rel` it ran (None: any)
        lines = self.measured()["lines"]
        return frozenset(ln for w in ([workload] if workload else lines) for ln in lines[w].get(rel, ()))

    def neighbours(self, place: str) -> set[str]:
        """The places a unit brings into a closure (the module docstring)."""
        rel, qual = place.split(":", 1)
        if qual == "":  # a whole module
            return {f"{rel}:{q}" for q in self.module(rel).units}
        if self._foreign(place):  # what it brought when the device rule came in
            return set(devices.frozen().get(place, {}).get("neighbours", ()))
        out = set(self._plain(place)[1])
        m = self.module(rel)
        out.update(f"{rel}:{q}" for q in (m.classes.get(qual) or ()))
        out.update([f"{rel}:{qual.split('.')[0]}"] * ("." in qual) + [f"{rel}:<module>"] * ("<module>" in m.units))
        for key, targets in m.imports.items():  # importlib.import_module("romae....") anywhere in the module
            if key.startswith("<import "):
                out.update(t[1] for t in (self.resolve(x) for x in targets) if t and t[0] != "external")
        return out

    def closure(self, roots) -> set[str]:
        """Every unit `roots` (places) can run."""
        seen: set[str] = set()
        known = lambda q: q.endswith(":") or (q in devices.frozen() if self._foreign(q) else q in self.units)  # noqa
        todo = [r for r in roots if known(r)]
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            todo.extend(q for q in self.neighbours(p) if q not in seen and known(q))
        return {p for p in seen if not p.endswith(":")}

    def _named(self, place: str) -> str | None:
        """The unit a place names through its module's imports ('model.py:RMSNorm' -> 'kernels.py:RMSNorm')."""
        rel, qual = place.split(":", 1)
        if rel not in self.files:
            return None
        found = self.resolve(f"{dotted(rel)}.{qual}")
        return found[1] if found and found[0] != "external" else None

    # -- the workloads' numbers and lines

    def measured(self) -> dict:
        """{"ids": {workload: id}, "lines": {workload: {rel: [lines]}}, "vectors": {workload: vector}} of this tree
        (`romae.compendium.numerics.measure`; measured like `self.like` where this tree is a change of it)."""
        if self._measured is None:  # in the workloads' own process (the recipe is one): all hashed, none measured
            inside = os.environ.get(numerics.IN_WORKLOAD)
            self._measured = {"ids": {}, "lines": {}} if inside else \
                numerics.measure(self.folder, like=self.like.measured() if self.like is not None else None)
        return self._measured

    # -- records

    def record(self, roots) -> dict:
        """The code record of a result whose roots are `roots` (places): {"roots", "units": {place: entry},
        "numbers": {workload: id}}."""
        roots = sorted(set(roots))
        found = [r if r.endswith(":") or r in self.units else self._named(r) for r in roots]
        units = {p: self.entry(p) for p in sorted(self.closure([f for f in found if f]))}
        used = sorted({w for e in units.values() if "@" in e for w in e.split("@", 1)[1].split(",")})
        ids = self.measured()["ids"]
        return {"roots": roots, "units": units, "numbers": {w: ids.get(w, "?") for w in used}}


# ----------------------------------------------------------------------------- roots, records, decisions

def place_of(obj) -> str | None:
    """The place of a package function, method, class or instance's class ('model.py:Encoder'), else None."""
    import inspect

    target = obj if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismethod(obj) else type(obj)
    target = getattr(target, "__func__", target)
    code = getattr(target, "__code__", None)
    try:
        path = Path(code.co_filename if code else inspect.getsourcefile(target)).resolve()
    except (TypeError, OSError):
        return None
    qual = getattr(code, "co_qualname", None) or getattr(target, "__qualname__", "")
    return frame_place(path, qual)


def frame_place(path, qual: str) -> str | None:
    """The unit a code object of `path` named `qual` ('fit.<locals>.step', 'Encoder.forward') belongs to."""
    path = Path(path).resolve()
    if not path.is_relative_to(PACKAGE) or path.suffix != ".py":
        return None
    rel = path.relative_to(PACKAGE).as_posix()
    parts = qual.split(".<locals>")[0].split(".")
    return f"{rel}:{'.'.join(parts[:2]) if qual != '<module>' else '<module>'}"


def stack_places(depth: int = 2) -> list[str]:
    """The places of the package functions on the call stack above `depth` frames."""
    out = []
    frame = sys._getframe(depth)
    while frame is not None:
        p = frame_place(frame.f_code.co_filename, getattr(frame.f_code, "co_qualname", frame.f_code.co_name))
        if p and computes(p.split(":")[0]):
            out.append(p)
        frame = frame.f_back
    return out


@functools.lru_cache(maxsize=1)
def _here_tree(stamp: str) -> Tree:
    return Tree.of(PACKAGE)


def here() -> Tree:
    """This checkout's tree (re-read when a file changes)."""
    stamp = _sha("".join(f"{p}{p.stat().st_mtime_ns}" for p in sorted(PACKAGE.rglob("*.py"))))
    return _here_tree(stamp)


def record(roots, tree: Tree | None = None, device=None) -> dict:
    """The code record of a result run from `roots` (places or package objects), by `tree` (default: this
    checkout), computed on `device` (a device or a class, `romae.compendium.devices`; default: this process's): its
    `units` count a unit that runs only on another device type as frozen, so its code id (a key) is the same on every
    device; a result computed on CUDA also holds `device_units`, what it ran there as it is now."""
    places = sorted({p for p in (r if isinstance(r, str) else place_of(r) for r in roots) if p})
    if os.environ.get(numerics.IN_WORKLOAD) and tree is None:  # a workload's own kept results: keyed by roots
        return {"roots": places, "units": {}, "numbers": {}}
    return _result_record(tree or here(), tuple(places), devices.class_of(device) if device else devices.this_class())


def _result_record(tree: Tree, places: tuple, cls: str) -> dict:
    rec = _record_of(tree.view("cpu"), places)
    if cls == "cuda":  # every unit as it is now that the CPU record does not hold as such (`romae.compendium.devices`)
        full = _record_of(tree.view("cuda"), places)["units"]
        rec["device_units"] = {p: e for p, e in full.items() if devices.only_on(p) or p not in rec["units"]}
    return rec


def device_of(rec: dict) -> str:
    """The class of the device a record's result was computed on: 'cuda' when it holds `device_units`, else 'cpu'."""
    return "cuda" if isinstance(rec.get("device_units"), dict) else "cpu"


def _record_of(tree: Tree, roots: tuple) -> dict:
    return json.loads(_record_text(tree, roots))


@functools.lru_cache(maxsize=256)
def _record_text(tree: Tree, roots: tuple) -> str:  # computed once per tree and roots
    return json.dumps(tree.record(list(roots)))


def code_id(rec: dict) -> str:
    """What decides: the record's numbers and its entries, places left out (a renamed or moved unit keeps it)."""
    return hashlib.sha256(json.dumps([sorted(rec.get("units", {}).values()), rec.get("numbers", {})],
                                     sort_keys=True).encode()).hexdigest()


def is_record(rec) -> bool:
    return isinstance(rec, dict) and all(isinstance(rec.get(k), t) for k, t in (("units", dict), ("numbers", dict),
                                                                                  ("roots", list)))


def explain(old: dict, new: dict) -> list[str]:
    """Why record `old` is not `new` (empty when they decide alike): units paired by place, the rest by content."""
    a, b = dict(old.get("units", {})), dict(new.get("units", {}))
    out = [f"{p}: changed" for p in sorted(a.keys() & b.keys()) if a[p] != b[p]]
    only_b = {p: e for p, e in b.items() if p not in a}
    for p, e in sorted((p, e) for p, e in a.items() if p not in b):  # renamed or moved: its content at a new place
        twin = next((q for q, f in sorted(only_b.items()) if f == e), None)
        out += [f"{p}: no longer run (or changed and moved)"] if twin is None else [only_b.pop(twin)][:0]
    out += [f"{p}: newly run" for p in sorted(only_b)]
    for w in sorted(set(old.get("numbers", {})) | set(new.get("numbers", {}))):
        x, y = old.get("numbers", {}).get(w), new.get("numbers", {}).get(w)
        if x != y and x is not None and y is not None:
            out.append(f"numbers of the {w} workload: {x} -> {y}")
    c, d = old.get("device_units") or {}, new.get("device_units") or {}
    out += [f"{p}: changed (it ran on CUDA)" for p in sorted(c.keys() | d.keys()) if c.get(p) != d.get(p)]
    if not out and code_id(old) != code_id(new):
        out.append("the workloads that vouch for it changed")
    return out


def check(rec, tree: Tree | None = None) -> list[str]:
    """[] when record `rec` is what `tree`'s code gives from its roots now, else why not."""
    if not is_record(rec):
        return ["no code record of the sound rule (kept before issue 51)"]
    now = _result_record(tree or here(), tuple(sorted(set(rec["roots"]))), device_of(rec))
    same = code_id(now) == code_id(rec) and now.get("device_units", {}) == rec.get("device_units", {})
    return [] if same else explain(rec, now) or ["its code changed"]


def cuda_changed(meta: dict) -> str:
    """Why a result computed on CUDA is stale in code that runs only there (its key does not name it, so a run finds
    it under its key and the loader retrains it: `romae.compendium.devices`), or '' (current there, or a CPU's)."""
    made_of = meta.get("code_of")
    if not is_record(made_of) or device_of(made_of) != "cuda":
        return ""
    why = [w for w in check(made_of) if w.endswith("(it ran on CUDA)")]
    return "; ".join(why[:4]) + (f" and {len(why) - 4} more" if len(why) > 4 else "")


def outdated(twin: Path) -> str:
    """`romae.storage.OUTDATED` for the results cache: `cuda_changed` of the twin at `twin`."""
    try:
        meta = json.loads(Path(twin).read_text())
    except (OSError, ValueError):
        return ""
    return cuda_changed(meta) if isinstance(meta, dict) else ""


TRAINING_ROOTS = ("compendium/kept.py:fit_cached", "train.py:fit", "model.py:RoMAEForPreTraining",
                  "model.py:RoMAEForPrediction", "feeding.py:ArrayDataset")  # a kept training through fit_cached
