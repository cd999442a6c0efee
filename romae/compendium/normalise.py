"""How the staleness rule (`romae.compendium.staleness`) normalises a unit before hashing it: docstrings, imports and
its own name out, messages marked, names resolved, statements a workload executed masked."""

from __future__ import annotations

import ast

MARK = "\u00b7"  # what a message's text, or a statement a workload executed, becomes in a hash
MESSAGES = {"warnings.warn", "print"}  # calls whose strings are messages (and raise, assert, *Error(...))


def _name(node) -> str | None:
    """'a.b.c' for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


# ----------------------------------------------------------------------------- normalising a unit

class _Normalise(ast.NodeTransformer):
    """Docstrings, imports and the unit's own name out; messages marked; names resolved (the module docstring)."""

    def __init__(self, tree, rel: str, refs: list[str]):  # tree: a staleness.Tree
        self.tree, self.rel, self.refs = tree, rel, refs

    def _chain(self, node):
        chain = _name(node)
        if chain is None:
            return None
        found = self.tree.local(self.rel, chain)
        if found is None:
            return None
        kind, what = found
        if kind == "external":
            return ast.Name(id=what, ctx=ast.Load())
        self.refs.append(what)
        return ast.Name(id="@", ctx=ast.Load())

    def visit_Name(self, node):
        return self._chain(node) or node

    def visit_Attribute(self, node):
        return self._chain(node) or self.generic_visit(node)

    def _body(self, node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node.name = ""
        body = [s for s in node.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        node.body = body or [ast.Pass()]
        if isinstance(node, ast.ClassDef):  # its methods are units of their own
            node.body = [s for s in node.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))] \
                or [ast.Pass()]
        return self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _body

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            seq = getattr(node, field, None)
            if isinstance(seq, list) and seq and isinstance(seq[0], ast.stmt):
                kept = [s for s in seq if not isinstance(s, (ast.Import, ast.ImportFrom))]
                setattr(node, field, kept or ([ast.Pass()] if field == "body" else []))
        return super().generic_visit(node)

    def visit_Raise(self, node):
        node = self.generic_visit(node)
        if node.exc is not None:
            node.exc = _Messages().visit(node.exc)
        return node

    def visit_Assert(self, node):
        node = self.generic_visit(node)
        node.msg = None  # an assert's message, reworded, added or removed
        return node

    def visit_Call(self, node):
        refs = len(self.refs)
        node = self.generic_visit(node)
        callee = node.func.id if isinstance(node.func, ast.Name) else None
        if callee == "@" and len(self.refs) > refs:  # one of ours: an exception class is named by its bases
            rel, cls = self.tree.units.get(self.refs[refs], (None, None))
            callee = "".join(ast.unparse(b) for b in getattr(cls, "bases", [])) or callee
        if callee in MESSAGES or (callee and callee.startswith(tuple(f"{m}." for m in self.tree.skipped))) \
                or (callee or "").endswith(("Error", "Exception", "Warning")):  # an exception made to be raised
            node.args = [_Messages().visit(a) for a in node.args]
            node.keywords = [ast.keyword(k.arg, _Messages().visit(k.value)) for k in node.keywords]
        return node


class _Messages(ast.NodeTransformer):
    """Every string in a message (constants, f-strings) becomes MARK."""

    def visit_JoinedStr(self, node):
        return ast.Constant(MARK)

    def visit_Constant(self, node):
        return ast.Constant(MARK) if isinstance(node.value, str) else node


class _Mask:
    """A unit with each statement a workload executed (its own lines: a simple statement's, a compound one's header)
    replaced by MARK, a compound statement whose parts all ran by one MARK, runs of MARKs merged. A unit's own
    signature and decorators ran at import, not in a workload: never masked."""

    def __init__(self, hit: frozenset[int], ran: set[int]):
        self.hit, self.ran_lines = hit, ran

    def unit(self, node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = self.block(node.body)
        return node  # a class body, an assignment, <module>: run at import

    def ran(self, s: ast.stmt, upto: int | None) -> bool:
        first = min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", [])])
        last = (upto - 1) if upto is not None else s.end_lineno
        hit = [ln for ln in range(first, max(first, last) + 1) if ln in self.hit]
        self.ran_lines.update(hit[:1])
        return bool(hit)

    def block(self, body: list) -> list:
        out = []
        for s in body:
            s = self.stmt(s)
            if _is_mark(s) and out and _is_mark(out[-1]):
                continue
            out.append(s)
        return out

    def stmt(self, s):
        blocks = [f for f in ("body", "orelse", "finalbody", "handlers") if getattr(s, f, None)]
        if not blocks:
            return _mark() if self.ran(s, None) else s
        first_child = min(c.lineno for f in blocks for c in getattr(s, f))
        ran = self.ran(s, first_child) or isinstance(s, ast.Try)
        for f in blocks:
            if f == "handlers":
                s.handlers = [self.handler(h) for h in s.handlers]
            else:
                setattr(s, f, self.block(getattr(s, f)))
        if not ran:
            return s
        for field in ("test", "iter", "target", "items", "args", "returns", "decorator_list", "bases", "keywords",
                      "subject"):
            if getattr(s, field, None) is not None and not isinstance(s, ast.ClassDef):
                setattr(s, field, [] if isinstance(getattr(s, field), list) else _mark().value)
        parts = [getattr(s, f) for f in blocks]
        if all(all(_is_mark(x) for x in p) if f != "handlers" else all(_is_mark(x) for h in p for x in h.body)
               for f, p in zip(blocks, parts)):
            return _mark()
        return s

    def handler(self, h):
        h.body = self.block(h.body)
        return h


def _mark():  # a statement a workload ran, in a masked unit
    return ast.Expr(ast.Constant(MARK + "ran"))


_is_mark = lambda s: isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value == MARK + "ran"  # noqa: E731
