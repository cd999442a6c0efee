"""The plan's copies: in a Markdown file (`make plan`: `python -m romae.bench plan ... --markdown --readme
<file>`): the command, the notes and the table of `romae.compendium.plan`, written between the file's plan markers;
and its hours as the front page reads them from the JSON copy (`planned_hours`, `planned_total`).
"""

from __future__ import annotations

from pathlib import Path

from ..compendium.plan import _hours, describe, plan, table
from ..compendium.report import ROOT

README_BEGIN, README_END = "<!-- plan:begin -->", "<!-- plan:end -->"
DOC, JSON = "docs/reproducing.md", "reports/plan/paper_h100.json"  # where `make plan` writes the table and the plan


def readme_block(p: dict) -> str:
    """What the README holds between its plan markers: the command, the notes and the markdown table."""
    s = p["settings"]
    command = (f"python -m romae.bench plan --profile paper --device {s['device']} --gpus {s['gpus']} "
               f"--gpu-memory {s['memory_gib']:g} --markdown --readme {DOC} --out {JSON}")
    return f"`{command}` wrote this table.\n\n{describe(p)}\n\n{table(p, markdown=True)}\n"


def write_readme(path: str | Path, p: dict) -> None:
    """Replace the text between README_BEGIN and README_END in `path` with `readme_block(p)`."""
    path = Path(path)
    text = path.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise ValueError(f"{path} has no {README_BEGIN} ... {README_END} markers to write the plan between")
    head, rest = text.split(README_BEGIN, 1)
    path.write_text(f"{head}{README_BEGIN}\n{readme_block(p)}{README_END}{rest.split(README_END, 1)[1]}")


def readme_plan() -> dict:
    """The plan the README shows: one H100, 80 GiB, all precisions."""
    return plan("h100", 1, 80.0)


def _written(plan_json: Path | None) -> dict | None:
    """The plan `make plan` wrote (JSON, at `plan_json` or the repository's), None when absent or unreadable."""
    import json

    try:
        p = json.loads((plan_json or ROOT / JSON).read_text())
    except (OSError, ValueError):
        return None
    return p if isinstance(p, dict) else None


def planned_hours(plan_json: Path | None = None) -> dict[str, tuple[str, str]]:
    """{notebook: (hours FP32, hours BF16)} of the paper profile on one H100, from the plan `make plan` writes
    (reports/plan/paper_h100.json, `python -m romae.bench plan ... --out`); {} without it."""
    totals = (_written(plan_json) or {}).get("totals")
    if not isinstance(totals, dict):
        return {}
    return {nb: (_hours(t.get("fp32")), _hours(t.get("bf16"))) for nb, t in totals.items() if nb != "all"}


def planned_total(plan_json: Path | None = None) -> tuple[str, str, str, str] | None:
    """(hours FP32, hours BF16, eager hours FP32, eager hours BF16) of the whole paper profile on one H100 from the
    plan (`planned_hours`; the eager pair "" in a plan without them), or None."""
    p = _written(plan_json) or {}
    total, eager = (p.get("totals") or {}).get("all"), p.get("eager_totals") or {}
    if not isinstance(total, dict):
        return None
    return (_hours(total.get("fp32")), _hours(total.get("bf16")),
            _hours(eager["fp32"]) if "fp32" in eager else "", _hours(eager["bf16"]) if "bf16" in eager else "")
