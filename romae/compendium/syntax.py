"""Python source parsed safely from several threads (`parse`)."""

from __future__ import annotations

import ast
import threading

_PARSING = threading.Lock()


def parse(source: str) -> ast.Module:
    """`ast.parse(source)`, one thread at a time. CPython 3.11 counts the AST constructor's recursion depth in state
    its threads share, so two threads parsing at once can fail with "SystemError: AST constructor recursion depth
    mismatch" (python/cpython#106905; met by `tests/test_staleness_mutations.py`, whose cases run two at a time)."""
    with _PARSING:
        return ast.parse(source)
