"""The plan's copy in a Markdown file (`make plan`: `python -m romae.bench plan ... --markdown --readme
<file>`): the command, the notes and the table of `romae.compendium.plan`, written between the file's plan markers.
"""

from __future__ import annotations

from pathlib import Path

from ..compendium.plan import describe, plan, table

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
