"""pytest set-up for the whole repository (unit tests and nbval runs of the notebooks).

Notebooks executed by nbval run with their default parameters (smoke profile, default reports
folder); pointing ROMAE_REPORTS at a scratch folder before any kernel starts keeps those runs from
overwriting the committed reports/. Kernels inherit this process's environment.
"""

import os
import shutil
import tempfile

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
