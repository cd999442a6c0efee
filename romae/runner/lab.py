"""`make lab`: JupyterLab on the project's environment, the notebooks folder open, listening on 127.0.0.1 only.

    python -m romae.runner.lab [JUPYTERLAB ARGUMENTS ...]     (`make lab`; e.g. --no-browser, --port=8899)

The server keeps JupyterLab's token (the URL it prints carries it; never an open port) and its kernels inherit the
environment, ROMAE_DATA included. A notebook run there writes its tables, figures and result rows to runs/interactive/
(`romae.compendium.settings.reports_folder`), never into the committed reports/: only `make reproduce` publishes.

Saving one of the compendium's committed notebooks there keeps its code and prose, not its outputs and the metadata a
kernel adds (`strip_on_save`, JupyterLab's pre-save hook, nbstripout's stripping): the file stays what git holds, so
`git status` stays clean. Its figures and tables are in runs/interactive/. A notebook of your own (a copy included)
keeps its outputs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
# what saving strips beside outputs and execution counts: nbstripout's defaults, and the metadata a kernel, papermill
# and JupyterLab write into a notebook, which the committed notebooks do not carry
EXTRA_KEYS = ["metadata.signature", "metadata.widgets", "cell.metadata.collapsed", "cell.metadata.ExecuteTime",
              "cell.metadata.execution", "cell.metadata.heading_collapsed", "cell.metadata.hidden",
              "cell.metadata.scrolled", "metadata.papermill", "cell.metadata.papermill", "cell.metadata.jupyter",
              *(f"metadata.language_info.{k}" for k in ("codemirror_mode", "file_extension", "mimetype",
                                                        "nbconvert_exporter", "pygments_lexer", "version"))]


def committed(path: Path) -> bool:
    """Whether `path` is one of the notebooks git holds (not a copy, not a notebook of your own)."""
    path = Path(path).resolve()
    try:
        out = subprocess.run(["git", "-c", f"safe.directory={path.parent}", "-C", str(path.parent), "ls-files",
                              "--error-unmatch", path.name], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):  # no git: nothing is stripped
        return False
    return out.returncode == 0


def strip_on_save(model: dict, path: str, contents_manager=None, **_) -> None:
    """JupyterLab's pre-save hook (`make lab`): a committed notebook (`committed`) is saved without outputs, execution
    counts and the metadata in `EXTRA_KEYS` (nbstripout), cell ids kept: as git holds it."""
    import nbformat
    from nbstripout import strip_output

    root = Path(getattr(contents_manager, "root_dir", None) or NOTEBOOKS)
    if model.get("type") != "notebook" or not committed(root / path.lstrip("/")):
        return
    nb = nbformat.from_dict(model["content"])
    model["content"] = strip_output(nb, keep_output=False, keep_count=False, keep_id=True, extra_keys=EXTRA_KEYS)


PINNED = {"ip", "token", "password", "hashed_password", "allow_remote_access", "allow-remote-access"}  # make lab's


def command(extra: list[str] | None = None, root: Path = ROOT, token: str | None = None) -> list[str]:
    """The JupyterLab command `make lab` runs: on 127.0.0.1, the notebooks folder as its root, with a token (a fresh
    one unless given; JupyterLab prints the URL that carries it). Arguments that would set the address or the token
    are refused, and both are given last, over any configuration file."""
    import secrets

    extra = list(extra or [])
    refused = [a for a in extra if a.startswith("-") and a.lstrip("-").split("=")[0].split(".")[-1].lower() in PINNED]
    if refused:
        raise SystemExit(f"make lab listens on 127.0.0.1 with a token; refused: {' '.join(refused)} "
                         f"(run `jupyter lab` yourself to serve it otherwise)")
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={root / 'notebooks'}",
           f"--ContentsManager.pre_save_hook={__name__}.strip_on_save", *extra]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # a container's root user (JupyterLab refuses root otherwise)
    return cmd + ["--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token or secrets.token_hex(24)}"]


def environment() -> dict:
    """The kernels' environment: this one, less the settings that make a run publish (ROMAE_REPORTS names a reports
    folder; ROMAE_STOP_FILE marks a kernel of make reproduce): a run in make lab writes to runs/interactive/."""
    return {k: v for k, v in os.environ.items() if k not in ("ROMAE_REPORTS", "ROMAE_STOP_FILE")}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    data = os.environ.get("ROMAE_DATA", "").strip()
    print(f"JupyterLab on 127.0.0.1 with its token (open the URL it prints), notebooks/ open; data: "
          f"{data or 'ROMAE_DATA unset: the data/ folder of the checkout'}; a notebook run here writes to "
          f"runs/interactive/ (git-ignored): only `make reproduce` publishes into reports/; saving a numbered notebook keeps "
          f"its code and prose, not its outputs (git stays clean).", flush=True)
    try:
        return subprocess.run(command(argv), env=environment()).returncode
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
