"""pytest set-up for the whole repository (unit tests and nbval runs of the notebooks).

Notebooks executed by nbval run with their default parameters (smoke profile, default reports
folder); pointing ROMAE_REPORTS at a scratch folder before any kernel starts keeps those runs from
overwriting the committed reports/. Kernels inherit this process's environment.

A notebook whose data is not under the data root ($ROMAE_DATA, else <repo>/data) is not run by nbval:
each of its cells is skipped with the reason, which names the data and the command that fetches it
(`romae.runner.reproduce.data_check`, the check `make reproduce` makes before it runs a notebook).
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_SCRATCH = None


def pytest_configure(config):
    global _SCRATCH
    if not os.environ.get("ROMAE_REPORTS"):
        _SCRATCH = tempfile.mkdtemp(prefix="romae-test-reports-")
        os.environ["ROMAE_REPORTS"] = _SCRATCH


def pytest_unconfigure(config):
    if _SCRATCH is not None:
        shutil.rmtree(_SCRATCH, ignore_errors=True)
        os.environ.pop("ROMAE_REPORTS", None)


def _missing_data(notebook: Path) -> str:
    """'' if the notebook's data (default parameters, smoke profile) is here, else why it is skipped."""
    from romae.runner import reproduce

    params, _ = reproduce.resolve_params(notebook, "smoke", {})
    return reproduce.data_check(notebook, params)[0]


def pytest_collection_modifyitems(config, items):
    reasons: dict[Path, str] = {}
    for item in items:
        path = Path(str(getattr(item, "path", getattr(item, "fspath", ""))))
        if path.suffix != ".ipynb":
            continue
        if path not in reasons:
            reasons[path] = _missing_data(path)
        if reasons[path]:
            item.add_marker(pytest.mark.skip(reason=f"{path.name} {reasons[path]}"))
