"""The rule of romae.compendium.staleness on small trees: what a unit's entry sees and what it does not.

Each test builds a tiny package from source (no workloads run: the lines a workload executed are given), changes
one thing and checks the record's code id: neutral edits keep it, real changes move it. The planted changes in the
real package are tests/test_staleness_mutations.py."""

from __future__ import annotations

import json

import pytest

from romae.compendium import staleness as S

A = '''"""Module a."""
import numpy as np

from . import b
from .b import helper

SCALE = 2.0


def _inner(x):
    """Inner."""
    return x * SCALE


def compute(x, flag=False):
    """Compute."""
    if x is None:
        raise ValueError(f"x is missing: {x!r}")
    y = _inner(x) + helper(x)
    if flag:
        y = np.sum(y) + b.OFFSET
    return y
'''
B = '''OFFSET = 1.0
MARGIN = 0.1


def helper(x):
    return x + OFFSET
'''
C = '''MARGIN = 0.1


def other(x):
    return x - MARGIN
'''


def tree(a=A, b=B, c=C, lines=None) -> S.Tree:
    t = S.Tree({"__init__.py": "", "a.py": a, "b.py": b, "c.py": c})
    t._measured = {"ids": {"w": "id1", "v": "id2"}, "lines": lines or {"w": {}, "v": {}}}
    return t


def cid(t: S.Tree, roots=("a.py:compute",)) -> str:
    return S.code_id(t.record(list(roots)))


BASE = cid(tree())


@pytest.mark.parametrize("name,a", [
    ("a comment", A.replace("    y = _inner", "    # the sum of both\n    y = _inner")),
    ("a docstring", A.replace('"""Compute."""', '"""Compute y from x (reworded)."""')),
    ("an error message", A.replace("x is missing: {x!r}", "no x was given ({x!r}); pass one")),
    ("formatting", A.replace("y = _inner(x) + helper(x)", "y = (_inner(x)\n         + helper(x))")),
    ("a private helper renamed", A.replace("_inner", "_scaled")),
    ("imports reordered", A.replace("from . import b\nfrom .b import helper", "from .b import helper\nfrom . import b")),
    ("a function moved within its module", A.replace(
        '\n\ndef _inner(x):\n    """Inner."""\n    return x * SCALE\n', "") + '\n\ndef _inner(x):\n    return x * SCALE\n'),
    ("an import aliased", A.replace("import numpy as np", "import numpy as numpy_").replace("np.sum", "numpy_.sum")),
])
def test_neutral_edits_keep_the_code_id(name, a):
    assert cid(tree(a=a)) == BASE, name


def test_a_function_moved_to_another_module_keeps_it():
    a = A.replace("from .b import helper", "from .c import helper")
    c = C + "\n\ndef helper(x):\n    return x + OFFSET\n\n\nfrom .b import OFFSET\n"
    b = B.replace("\n\ndef helper(x):\n    return x + OFFSET\n", "")
    assert cid(tree(a=a, b=b, c=c)) == BASE


@pytest.mark.parametrize("name,a,b", [
    ("a constant", A.replace("SCALE = 2.0", "SCALE = 2.01"), B),
    ("a constant of an imported module", A, B.replace("OFFSET = 1.0", "OFFSET = 1.5")),
    ("an expression", A.replace("x * SCALE", "x * SCALE * 0.999"), B),
    ("a default", A.replace("flag=False", "flag=True"), B),
    ("another callee", A.replace("y = _inner(x) + helper(x)", "y = _inner(x) + _inner(x)"), B),
    ("another package's function", A.replace("np.sum", "np.mean"), B),
    ("an import pointing elsewhere", A.replace("import numpy as np", "import torch as np"), B),
    ("the exception raised", A.replace("raise ValueError", "raise TypeError"), B),
])
def test_real_changes_move_it(name, a, b):
    assert cid(tree(a=a, b=b)) != BASE, name


def test_a_twin_elsewhere_does_not_hide_a_change():
    """The old rule's hole: B.MARGIN changed while C has an identical MARGIN. Here compute reaches B only."""
    a = A.replace("b.OFFSET", "b.OFFSET + b.MARGIN")
    before, after = cid(tree(a=a)), cid(tree(a=a, b=B.replace("MARGIN = 0.1", "MARGIN = 0.2")))
    assert before != after
    # and a change in C, which compute never reaches, stales nothing
    assert cid(tree(a=a, c=C.replace("MARGIN = 0.1", "MARGIN = 0.3"))) == before


def test_a_statement_a_workload_ran_is_vouched_by_its_numbers():
    line = A.splitlines().index("    y = _inner(x) + helper(x)") + 1
    ran = {"w": {"a.py": [line]}, "v": {}}
    edited = A.replace("y = _inner(x) + helper(x)", "y = helper(x) + _inner(x)")
    t0, t1 = tree(lines=ran), tree(a=edited, lines=ran)
    assert cid(t0) == cid(t1)  # the hash does not see it ...
    assert t0.record(["a.py:compute"])["numbers"] == {"w": "id1"}  # ... the workload's id does
    t2 = tree(a=edited, lines=ran)
    t2._measured["ids"]["w"] = "id1-moved"
    assert cid(t2) != cid(t0)
    # a statement no workload ran is hashed
    t3 = tree(a=A.replace("y = np.sum(y)", "y = np.sum(y) * 2"), lines=ran)
    assert cid(t3) != cid(t0)


def test_the_closure_follows_names_classes_and_module_statements():
    a = A + '''

class Model:
    def forward(self, x):
        return self.head(x)

    def head(self, x):
        return compute(x)


print("imported")
'''
    t = tree(a=a)
    got = t.closure(["a.py:Model"])
    assert {"a.py:Model.forward", "a.py:Model.head", "a.py:compute", "a.py:_inner", "b.py:helper", "b.py:OFFSET",
            "a.py:SCALE", "a.py:<module>"} <= got
    assert not any(p.startswith("c.py") for p in got)


def test_explain_pairs_by_place_then_by_content():
    old = tree().record(["a.py:compute"])
    renamed = tree(a=A.replace("_inner", "_scaled")).record(["a.py:compute"])
    assert S.explain(old, renamed) == []
    changed = tree(a=A.replace("x * SCALE", "x * SCALE * 2")).record(["a.py:compute"])
    why = S.explain(old, changed)
    assert "a.py:_inner: changed" in why


def test_a_record_round_trips_through_json_and_checks():
    t = tree()
    rec = json.loads(json.dumps(t.record(["a.py:compute"])))
    assert S.check(rec, t) == []
    assert S.check(rec, tree(b=B.replace("1.0", "2.0")))
    assert S.check({"code_of": "old"}, t) == ["no code record of the sound rule (kept before issue 51)"]


def test_notebook_roots_resolve_what_the_cells_name():
    nb = {"cells": [{"cell_type": "code", "source": ["from romae.a import compute\n", "%matplotlib inline\n",
                                                     "compute(1.0)\n"]},
                    {"cell_type": "markdown", "source": ["text"]}]}
    from romae.runner.provenance import notebook_roots

    assert notebook_roots(json.dumps(nb), tree()) == ["a.py:compute"]


def test_modules_that_never_compute_are_not_followed():
    assert not S.computes("compendium/terminal.py") and not S.computes("runner/claims.py")
    assert S.computes("compendium/kept.py") and S.computes("model.py") and S.computes("data/esc50.py")


def test_parsing_is_one_thread_at_a_time(monkeypatch):
    """Two threads building trees parse one at a time (`syntax.parse`): CPython 3.11's AST constructor counts its recursion
    in state threads share, and two parses at once failed CI with "AST constructor recursion depth mismatch"."""
    import threading
    import time

    from romae.compendium import syntax

    inside, most, real = [0], [0], syntax.ast.parse

    def slow(source, *args, **kwargs):  # a parse long enough for the other thread to start its own
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.05)
        inside[0] -= 1
        return real(source, *args, **kwargs)

    monkeypatch.setattr(syntax.ast, "parse", slow)
    threads = [threading.Thread(target=S.Module, args=(f"m{i}.py", f"X = {i}\n")) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1, f"{most[0]} threads parsed at once"


def test_trees_of_one_shape_normalise_a_unit_once(monkeypatch):
    """A copy of the package with one file edited (what `romae.runner.stales.planted` makes) normalises that file's
    units again, and the others' only where what their names resolve to moved (`Tree.shape`)."""
    normalised = []

    class Counting(S._Normalise):
        def __init__(self, tree_, rel, refs):
            normalised.append(rel)
            super().__init__(tree_, rel, refs)

    monkeypatch.setattr(S, "_Normalise", Counting)
    monkeypatch.setattr(S, "_NORMALISED", {})
    t1 = tree()
    first = cid(t1)
    assert "a.py" in normalised and "b.py" in normalised
    normalised.clear()
    t2 = tree(b=B.replace("return x + OFFSET", "return x + OFFSET * 2"))  # a body: the same shape
    assert t2.shape == t1.shape and cid(t2) != first
    assert set(normalised) == {"b.py"}
    # a unchanged, but b now re-exports c's helper: a's names resolve elsewhere, so the shape moves and a's units
    # are normalised again
    normalised.clear()
    t3 = tree(b=B.replace("\n\ndef helper(x):\n    return x + OFFSET\n", "\nfrom .c import helper\n"),
              c=C + "\n\ndef helper(x):\n    return x - 1\n")
    assert t3.shape != t1.shape
    assert "c.py:helper" in t3._plain("a.py:compute")[1] and "a.py" in normalised
    assert cid(t3) != first
    # a class's bases are what a call of it is named by: part of the shape
    t4 = tree(c=C + "\n\nclass Bad(ValueError):\n    pass\n")
    t5 = tree(c=C + "\n\nclass Bad(TypeError):\n    pass\n")
    assert t4.shape != t5.shape
    # and the shared results are the ones a tree computes alone
    monkeypatch.setattr(S, "_NORMALISED", {})
    assert cid(tree(b=B.replace("return x + OFFSET", "return x + OFFSET * 2"))) == cid(t2)
