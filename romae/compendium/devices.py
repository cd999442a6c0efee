"""Units that run on one device type only, and how a record of a result computed elsewhere counts them (issue 55).

A result's code record (`romae.compendium.staleness`) holds every unit its roots can run. Some units can only run on
one device type: the CUDA-graph machinery (`romae.graphs.GraphedSteps`, built by `fit` only when `graphs.wanted`,
which is False off CUDA; the graph's deferred checks, `masking.GraphChecks`). A result computed on a CPU never ran
them, so an edit there cannot change its numbers; before this rule such an edit staled every result (64 of them,
notebook 02's training in progress among them).

**Device classes.** A record's `units` count a unit of `ONLY_ON` as it was when this rule came in (`frozen`,
<compendium>/reference/device_only.json, written once by `freeze` at 58b8252): its entry, its content (what a
reference to it stands for) and the units it brings into the closure, never read from today's source; a unit listed
since is in no `units` and a reference to it stands for `foreign_mark`. So every record kept before this rule is
unchanged (its code id, and so its key, included), a key is one on every device (what a GPU trained serves a CPU; a
training continues on another device), and editing those units stales nothing computed on a CPU. A result computed
on CUDA also holds `device_units`: those units, and what only they reach, as they are now
(`romae.compendium.staleness.record`); when they change, its check fails and the loader retrains it under the same
key. A record without `device_units` is a CPU's: every record of the sound rule kept before this one was made on a
CPU (tests/test_device_records.py checks the committed ones).

**What keeps it honest.** A unit is listed in `ONLY_ON` only if no numerics workload (all CPU) executes it and a
traced CPU `fit` never enters it (the same test); a class listed brings its methods.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

ONLY_ON = {  # device type -> the places (a class: with its methods) that run only there
    "cuda": ("graphs.py:GraphedSteps", "graphs.py:capturable", "graphs.py:trim_lengths", "graphs.py:signature",
             "graphs.py:WARMUP", "graphs.py:MAX_GRAPHS", "masking.py:GraphChecks", "masking.py:take_checks",
             # added since MADE_AT (in no CPU record): what fit asks only where graphs.wanted is True
             "graphs.py:CaptureFailed", "graphs.py:allowed", "graphs.py:fits"),
}
CLASSES = ("cpu", "cuda")
GPU_NAMES = ("cuda", "nvidia", "tesla", "quadro", "geforce", "amd", "radeon")  # how torch names a CUDA (ROCm) device
FROZEN_FILE = Path(__file__).resolve().parent / "reference" / "device_only.json"
MADE_AT = "58b8252"  # the commit whose entries `FROZEN` holds


def only_on(place: str) -> str | None:
    """The device type unit `place` ('graphs.py:GraphedSteps.__call__') runs only on, or None (any)."""
    for device, places in ONLY_ON.items():
        if any(place == p or place.startswith(p + ".") for p in places):
            return device
    return None


def foreign(place: str, device_class: str) -> bool:
    """Whether unit `place` never runs in a result of `device_class` (it runs only on another device type)."""
    on = only_on(place)
    return on is not None and on != device_class


def class_of(device) -> str:
    """The record class of a device (a torch.device, 'cpu', 'cuda:1', or a label: 'cpu (AMD EPYC, 2 threads)',
    'NVIDIA H200'): 'cpu' for a CPU (or Apple's MPS, where no graph is captured either), else 'cuda' (an accelerator's
    name, or a device nothing names: counted with every unit)."""
    text = str(getattr(device, "type", device) or "").strip().lower()
    return "cpu" if text.startswith(("cpu", "mps")) else "cuda"


def class_of_rows(cells) -> str:
    """The class of a published run from its result rows' device cells ('cpu (...); torch ...', 'trained on NVIDIA H200
    (torch ..., CUDA 13.0); published on cpu (...); ...'): 'cuda' when any device they name is a CUDA device (a
    notebook published on a CPU from what a GPU trained ran that code too: a label starting with one of `GPU_NAMES`),
    else 'cpu' (CPUs, and cells that name no device: 'exact count')."""
    import re

    for cell in cells:
        text = str(cell)
        named = text[len("trained on "):].replace("; published on ", ", ") if text.startswith("trained on ") else text
        for label in re.split(r",\s*(?![^()]*\))", named.split(";")[0]):
            if label.strip().lower().startswith(GPU_NAMES):
                return "cuda"
    return "cpu"


def this_class() -> str:
    """The class of the device this process computes on (`romae.runtime`: the device asked for, else an
    accelerator where torch sees one)."""
    import torch

    from .. import runtime

    asked = runtime.current().device
    return class_of(asked or ("cuda" if torch.cuda.is_available() else "cpu"))


def classes_from(first: str) -> list[str]:
    """Every class, `first` first (no lookup needs it since keys are one on every device; kept for callers)."""
    return [first, *(c for c in CLASSES if c != first)]


def foreign_mark(place: str) -> str:
    """What a reference to a foreign unit that `FROZEN` does not hold stands for."""
    return f"only-on-{only_on(place)}:{place}"


@functools.lru_cache(maxsize=1)
def frozen() -> dict[str, dict]:
    """{place: {"entry", "content": [rounds 1, rounds 2], "neighbours"}} of the foreign units as of `MADE_AT`."""
    try:
        return json.loads(FROZEN_FILE.read_text())["units"]
    except (OSError, ValueError, KeyError) as e:
        raise RuntimeError(f"{FROZEN_FILE} is missing or unreadable ({e}): the device rule cannot count CUDA-only "
                           "units in a CPU record") from e


def freeze(tree) -> dict:
    """The table `frozen` reads, from `tree` (a `romae.compendium.staleness.Tree` of class 'cuda', where every unit
    counts as itself): each unit of `ONLY_ON` and what it stands for. Written once, when the rule came in."""
    places = sorted(p for p in tree.units if only_on(p))
    return {"made_at": MADE_AT, "rule": "romae.compendium.devices",
            "units": {p: {"entry": tree.entry(p), "content": [tree.content(p, 1), tree.content(p, 2)],
                          "neighbours": sorted(tree.neighbours(p))} for p in places}}


__all__ = ["CLASSES", "ONLY_ON", "class_of", "class_of_rows", "classes_from", "foreign", "freeze",
           "frozen", "only_on", "this_class"]
