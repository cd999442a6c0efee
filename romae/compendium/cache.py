"""Results cache: heavy work is keyed by its config and by the code it runs, so re-running a notebook to restyle a
figure does not retrain or re-measure. Entries live under <repo>/.cache/romae/ (git-ignored; `romae.storage` stores
and verifies them).

    result = cached("table9_compute", key, lambda: table9(...))

An entry is <name>-<config hash>-<code hash>.pt (torch.save of the result) + a .json twin
{"config", "code", "code_of", "sha256"}.

Code: by the rule of `romae.compendium.staleness`, the closure of what the result runs (`roots`; default: `compute`
and the package functions on the call stack from `depth` frames up), each statement vouched for by a numerics
workload that ran it or hashed: an edit that cannot change a number keeps the entry. Code outside the package (a
notebook cell) is not covered: put what matters in the config, or pass `code=`.

Integrity: the twin records the sha256 of the .pt bytes, verified before unpickling. A missing twin, one without a
hash (older format), a mismatch or a load error is reported by `warnings.warn` naming the file, and the entry is
recomputed and overwritten (`romae.storage.lookup`, `romae.storage.store`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .. import runtime
from ..storage import CACHE, config_hash, key_json, key_of, keyed
from . import staleness

__all__ = ["CACHE", "cached", "code_of", "config_hash", "key_json", "key_of"]


def code_of(compute: Callable | None, roots=None, depth: int = 2) -> tuple[str, dict]:
    """(code id, code record) of what a result runs (`romae.compendium.staleness`): `roots` (places or package
    objects), else `compute` and the package functions on the call stack from `depth` frames up."""
    made_of = staleness.record(list(roots) if roots is not None else [compute, *staleness.stack_places(depth)])
    return staleness.code_id(made_of), made_of


def cached(name: str, config: Any, compute: Callable[[], Any], cache_dir: str | Path | None = None,
           refresh: bool = False, *, code: str | None = None, roots=None, depth: int = 2) -> Any:
    """Return compute()'s result for `config` and the code that produces it, computing it only if no verified entry
    exists (or `refresh`). The result (anything torch.save can store) is stored beside its config, code and sha256.
    `code`: what to key the code on (default: `code_of`, listed in the twin under code_of). A dry run
    (`romae.runtime`) neither reads nor writes the cache."""
    if runtime.dry_run():  # nothing to key: its code record is not even computed
        return compute()
    made_of = None
    if code is None:
        code, made_of = code_of(compute, roots, depth + 1)
    return keyed(name, config, compute, code, cache_dir, refresh, None if made_of is None else {"code_of": made_of})
