# RoMAE compendium: environment, tests, benchmarks.
#   make venv        create .venv and install the package with the notebooks+test extras
#   make test        run the test suite + nbval (smoke) over notebooks/ (extra pytest arguments: PYTEST_ARGS="-k rope -x")
#   make plan        what the paper profile costs on an 80 GB H100 (python -m romae.bench plan --help for others)
#                    -> docs/reproducing.md and reports/plan/paper_h100.json
#   make dry-run     the paper profile for 2 steps of every training on the CPU (= make reproduce PROFILE=paper
#                    MAX_STEPS=2 DEVICE=cpu) -> reports/dry-run/paper/; CI runs it (ONLY, TIMEOUT: as for reproduce)
#   make gpu-check   on a GPU: CUDA tests, the CUDA-graph probe, launch-bound steps, memory at risk, benchmarks and
#                    the dry run on CUDA -> reports/gpu/; stops at the first failure (GPU_MINUTES=9: its budget)
#   make bench       benchmarks: model sizes (Table 8), Table 9 timings, roofline -> reports/benchmarks/
#   make reproduce   run the notebooks with papermill -> reports/ (PROFILE=smoke|quick|paper, ONLY=00,03,
#                    DATASETS=JapaneseVowels,Epilepsy for notebook 12, PARAMS="name=value ...", DOWNLOAD=1 to
#                    fetch the data the selected notebooks need first; DEVICE=cpu|cuda; MAX_STEPS=2: a dry run
#                    into reports/dry-run/; PRECISION=tf32|bf16: a named deviation; GPU_MEMORY=80: GB to plan for)
#                    ONLY left out: every notebook; ONLY= (empty) is refused, it names none
#                    every notebook has a time limit: TIMEOUT=7200 (seconds, each notebook), TIMEOUT=0 for none;
#                    left out, 4 x the notebook's estimate (its longest successful run in reports/runs.csv, for
#                    the paper profile also the plan's hours), at least 1 h (1 h without an estimate). A notebook
#                    at its limit is stopped and fails (exit 1); what is published stays as it was
#                    TIME_BUDGET=9000: stop cleanly before 9000 s (a training at a step boundary, its checkpoint
#                    kept in reports/trainings/in_progress/ to commit; nothing of its notebook published; exit 75 and
#                    the command that continues it); SIGTERM / SIGUSR1 do the same
#                    CUDA_GRAPHS=0: every training steps eagerly on a GPU (no CUDA graphs; recorded in its facts):
#                    to continue after a failed capture, or to rule graphs out when a GPU run misbehaves
#                    PROFILE=paper stops before training when torch sees no accelerator, unless DEVICE=cpu;
#                    it exits 3 ("paper profile incomplete") when a notebook was skipped for missing data,
#                    unless ALLOW_SKIPS=1
#   make lab         JupyterLab on 127.0.0.1 with its token, notebooks/ open, ROMAE_DATA honoured; a notebook run there
#                    writes to runs/interactive/ (git-ignored), never reports/; saving a numbered notebook keeps its
#                    code and prose, not its outputs (LAB_ARGS="--no-browser --port=8899": more JupyterLab arguments)
#   make data        download the public datasets the notebooks use (all of them; NAMES=physionet2012,uea:Epilepsy
#                    for some; MIRROR=<url> fetches from a mirror laid out as <url>/<host>/<path>;
#                    `.venv/bin/python -m romae.data status` lists what is here)
#   make clean       remove caches: the results cache (.cache/romae), training checkpoints (runs/), __pycache__;
#                    make distclean also removes .venv
# Datasets live in $ROMAE_DATA if set, else in ./data/ (git-ignored); ROMAE_DATA is passed to the tests.

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
PROFILE ?= quick
ONLY ?= all
DATASETS ?=
PARAMS ?=
DOWNLOAD ?=
NAMES ?=
MIRROR ?=
DEVICE ?=
MAX_STEPS ?=
PRECISION ?=
GPU_MEMORY ?=
ALLOW_SKIPS ?=
TIME_BUDGET ?=
CUDA_GRAPHS ?=
GPU_MINUTES ?=
LAB_ARGS ?=
# seconds each notebook may run (0: no limit); empty: the runner's default from the notebook's estimate
TIMEOUT ?=
# a CUDA build of torch for `make venv` (e.g. https://download.pytorch.org/whl/cu128); empty: pip's default
TORCH_INDEX ?=
# nbval runs every cell of every notebook in its default profile (smoke), serially (2 cores); no
# notebooks yet -> only tests/ (so pytest never ends with "no tests ran")
NBVAL := $(if $(wildcard notebooks/*.ipynb),--nbval-lax --nbval-current-env notebooks)

ifdef ROMAE_DATA
export ROMAE_DATA
endif

.PHONY: all venv test bench plan reproduce dry-run gpu-check lab data clean distclean

all: test

venv: $(STAMP)

# Reinstalls only when pyproject.toml changes (or the stamp is missing).
$(STAMP): pyproject.toml
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(if $(TORCH_INDEX),$(VPY) -m pip install -q --index-url $(TORCH_INDEX) "$$(grep -o 'torch==[0-9.]*' pyproject.toml)")
	$(VPY) -m pip install -q -e ".[notebooks,test,baselines]"
	@touch $@

test: venv
	$(VPY) -m pytest tests $(NBVAL) $(PYTEST_ARGS)

# writes the measured JSON next to the printed tables
bench: venv
	$(VPY) -m romae.bench sizes --out reports/benchmarks/table8_sizes.json
	$(VPY) -m romae.bench table9 --batch 8 --rounds 3 --out reports/benchmarks/table9_cpu.json
	$(VPY) -m romae.bench roofline --workload all --breakdown --out reports/benchmarks/roofline_cpu.json
	$(VPY) -m romae.bench roofline --compile --breakdown --out reports/benchmarks/roofline_cpu_compiled.json
	$(VPY) -m romae.bench feed --out reports/benchmarks/feed_cpu.json

# executed copies, summary.csv/SUMMARY.md, runs.csv and index.html go to reports/; ONLY always reaches the runner
# (quoted), so an empty ONLY= is refused there instead of meaning every notebook
reproduce: venv
	$(VPY) -m romae.reproduce --profile $(PROFILE) --only "$(ONLY)" $(if $(TIMEOUT),--timeout $(TIMEOUT)) \
		$(if $(DATASETS),--param datasets=$(DATASETS)) $(foreach p,$(PARAMS),--param $(p)) \
		$(if $(filter 1 yes true,$(DOWNLOAD)),--download) $(if $(MIRROR),--mirror $(MIRROR)) \
		$(if $(DEVICE),--device $(DEVICE)) $(if $(MAX_STEPS),--max-steps $(MAX_STEPS)) \
		$(if $(PRECISION),--precision $(PRECISION)) $(if $(GPU_MEMORY),--gpu-memory $(GPU_MEMORY)) \
		$(if $(filter 1 yes true,$(ALLOW_SKIPS)),--allow-skips) $(if $(TIME_BUDGET),--time-budget $(TIME_BUDGET)) \
		$(if $(CUDA_GRAPHS),--cuda-graphs $(CUDA_GRAPHS))

# what the paper profile costs on one 80 GB H100 (steps, FLOPs, memory, micro-batches, hours in FP32 / TF32 /
# BF16); rewrites the table in docs/reproducing.md (tests/test_plan.py checks that it is current) and its JSON,
# reports/plan/paper_h100.json, which the front page reads
plan: venv
	$(VPY) -m romae.bench plan --profile paper --device h100 --gpus 1 --gpu-memory 80 --markdown \
		--readme docs/reproducing.md --out reports/plan/paper_h100.json

# the paper profile's dry run: every training of every notebook for 2 optimiser steps at the paper's model
# size and sequence length, on the CPU (micro-batches capped), on generated tokens where data is missing;
# reports in reports/dry-run/paper/ (git-ignored)
dry-run: venv
	$(VPY) -m romae.reproduce --profile paper --max-steps 2 --device cpu --only "$(ONLY)" \
		$(if $(TIMEOUT),--timeout $(TIMEOUT))

# for whoever has a GPU: CUDA tests, Table 9 and roofline on CUDA, the dry run on CUDA -> reports/gpu/
# (within 20 minutes); without a GPU it says so and exits 0
gpu-check: venv
	$(VPY) -m romae.gpucheck $(if $(GPU_MINUTES),--budget-minutes $(GPU_MINUTES))

# downloads into $ROMAE_DATA, else ./data/; resumes a cut download; verifies or records checksums
lab: venv
	$(VPY) -m romae.runner.lab $(LAB_ARGS)

data: venv
	$(VPY) -m romae.data fetch $(NAMES) $(if $(MIRROR),--mirror $(MIRROR))

clean:
	rm -rf runs .cache/romae
	find . -path ./$(VENV) -prune -o -type d \( -name __pycache__ -o -name .pytest_cache -o -name .ipynb_checkpoints \) -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
