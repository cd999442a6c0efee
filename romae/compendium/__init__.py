"""The compendium: what a notebook's kernel uses beside the library to record and judge results.

The results record and its statistics and verdicts (`report`), the committed record of kept trainings
(`trainings`), the cached trainings and recipe (`kept`), the paper profile's plan and cost (`plan`, `cost`), the
terminal lines of `make reproduce` (`terminal`) and the paper's reference values (`reference`).

It imports the library (`romae`) and the data loaders (`romae.data`), never the experiments or the runner above it.
"""

from .. import runtime as _runtime
from . import settings as _settings

_runtime.use(_settings.from_env)  # a kernel of `make reproduce` trains as the environment asks (device, dry run...)
_settings.catch_stop_signals()  # ... and stops its trainings cleanly on SIGTERM / SIGUSR1
_settings.cuda_graphs_from_env()  # ... with CUDA graphs unless ROMAE_CUDA_GRAPHS=0
_settings.tell_if_interactive()  # a kernel make reproduce did not start: its artefacts go to runs/interactive/
