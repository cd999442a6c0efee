"""`make gpu-check`: everything a GPU should be asked, in one command, into reports/gpu/ with the device named.

    python -m romae.runner.gpucheck [--out reports/gpu] [--budget-minutes 20] [--skip "dry run"]

0. the device and the versions (torch, CUDA), printed first and kept in gpu-check.json;
1. the CUDA tests (tests/test_cuda_fit.py: fit in FP32 and BF16 with and without padding, micro-batches,
   the deferred non-finite checks, the fused attention with padding, the ways batches reach the GPU; the
   CUDA tests of tests/test_model.py; several processes when there is more than one GPU);
2. the CUDA-graph probe (`python -m romae.runner.launch --what probe`, issue 55): a small pre-training with random
   masks, dropout, drop path, clipping, two batch shapes and validation, graphed against eager, losses and weights
   within 1e-4 (FP32) and the graphed run's `cuda_graphs` row (a graph per shape, no failed capture) -> probe.json;
3. launch-bound steps (`python -m romae.runner.launch --what timings`, issue 44): ms, kernels and syncs per step of
   Table 1 tiny, notebook 02's training and the Table 9 step, eager as before against the fused RMSNorm, head
   padding and CUDA graphs, in FP32 and BF16; the attention kernels a padded BF16 batch gets -> launch.json;
4. the memory of the rows at risk with graphs on and off (`--what memory`: peak allocated and reserved GiB beside
   the plan's eager and graphed peaks) -> memory.json;
   then `python -m romae.runner.bench table9 --device cuda` and `roofline --device cuda` (FP32 and BF16);
3. what the plan promised, measured (`romae.runner.promise --device cuda`): every paper training (sampled within
   8 minutes) for a few steps at its planned micro-batch, accumulation and precision (FP32 and BF16), its
   peak memory and step time beside the plan's -> promise.md / promise.json; fails where the peak exceeds
   the plan or the time is more than 2x off;
4. the paper profile's dry run on CUDA (`romae.runner.reproduce --profile paper --max-steps 2 --device cuda`).
The script stops at the first step that fails, printing what to do next (its `NEXT` line); the steps after it read
"not run: an earlier step failed". Each step runs under what is left of the time budget (the promise takes at most
half of what is left, so that the dry run is reached; it writes each row as it is measured, so a step stopped at the
budget keeps what it measured);
`--skip` names steps left out (a part of their title; recorded as skipped); `gpu-check.json` and `README.md` in the output folder
say what ran, for how long, and how it ended. Without a GPU it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

from .. import runtime
from . import staging

ROOT = Path(__file__).resolve().parents[2]


PROMISE, PROMISE_MINUTES = "plan against measurement", 8.0  # step 3: at most this long, and half of what is left


def _names(skip: str, title: str) -> bool:
    """Whether a --skip value names a step: a part of its title, case-insensitive."""
    return skip.lower() in title.lower()


def steps(out: Path, promise_minutes: float = PROMISE_MINUTES) -> list[tuple[str, list[str]]]:
    py = sys.executable
    multi = ["tests/test_processes.py"] if torch.cuda.device_count() > 1 else []
    return [
        ("CUDA tests", [py, "-m", "pytest", "-q", "-rs", "tests/test_cuda_fit.py", "tests/test_model.py", *multi,
                        "-k", "cuda or Cuda or CUDA or processes", f"--junitxml={out / 'cuda-tests.xml'}"]),
        ("CUDA-graph probe", [py, "-m", "romae.runner.launch", "--device", "cuda", "--what", "probe",
                              "--out", str(out / "probe.json")]),
        ("launch-bound steps", [py, "-m", "romae.runner.launch", "--device", "cuda", "--steps", "30", "--what",
                                "timings", "--out", str(out / "launch.json")]),
        ("memory at risk", [py, "-m", "romae.runner.launch", "--device", "cuda", "--what", "memory",
                            "--out", str(out / "memory.json")]),
        ("Table 9 on CUDA", [py, "-m", "romae.runner.bench", "table9", "--device", "cuda", "--batch", "64",
                             "--out", str(out / "table9_cuda.json")]),
        ("roofline FP32", [py, "-m", "romae.runner.bench", "roofline", "--workload", "all", "--device", "cuda",
                           "--out", str(out / "roofline_cuda.json")]),
        ("roofline BF16", [py, "-m", "romae.runner.bench", "roofline", "--workload", "all", "--device", "cuda",
                           "--dtype", "bfloat16", "--out", str(out / "roofline_cuda_bf16.json")]),
        (PROMISE, [py, "-m", "romae.runner.promise", "--device", "cuda", "--budget-minutes", f"{promise_minutes:.2f}",
                   "--out", str(out)]),
        ("paper dry run on CUDA", [py, "-m", "romae.runner.reproduce", "--profile", "paper", "--max-steps", "2",
                                   "--device", "cuda", "--reports", str(out / "dry-run")]),
    ]


NEXT = {  # what to do when a step fails (printed, and in README.md)
    "CUDA tests": "the library itself fails on this GPU: read cuda-tests.log and fix it before any run here",
    "CUDA-graph probe": "graphed steps differ from eager or fell back (probe.log): run trainings with "
                        "`make reproduce ... CUDA_GRAPHS=0` until it is understood, and file what probe.json shows",
    "launch-bound steps": "a timing variant failed (launch-bound-steps.log): graphs or a kernel change does not run "
                          "here; CUDA_GRAPHS=0 rules graphs out",
    "memory at risk": "the measurement itself failed (memory-at-risk.log); an OOM row is a finding, not a failure",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m romae.runner.gpucheck", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "reports" / "gpu"), help="output folder (default reports/gpu)")
    ap.add_argument("--budget-minutes", type=float, default=20.0, help="device time for all steps (default 20)")
    ap.add_argument("--skip", action="append", default=[], metavar="TITLE",
                    help="leave out the steps whose title contains this (case-insensitive; repeatable), e.g. 'dry run'")
    args = ap.parse_args(argv)
    titles = [t for t, _ in steps(Path(args.out))]
    unknown = [k for k in args.skip if not any(_names(k, t) for t in titles)]
    if unknown:  # a typo: said at once, before any device time is spent
        ap.error(f"--skip {unknown[0]!r} names no step; the steps: {', '.join(titles)}")
    name = runtime.accelerator_name()
    if name is None or not torch.cuda.is_available():
        print(f"gpu-check: no CUDA GPU here ({runtime.stack_label()}): nothing to check. Run `make gpu-check` "
              f"on a machine with one. {runtime.install_hint()}")
        return 0
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    device = {"device": name, "gpus": torch.cuda.device_count(), "memory_gib": round(props.total_memory / 2**30, 1),
              **runtime.stack()}
    print(f"gpu-check on {name} ({device['memory_gib']} GiB, {runtime.stack_label()}) -> {out}", flush=True)
    deadline = time.monotonic() + 60 * args.budget_minutes
    results, redact, failed = [], staging.redactor(), None
    for title, cmd in steps(out):
        left = deadline - time.monotonic()
        if failed:
            results.append({"step": title, "status": f"not run: an earlier step failed ({failed})", "seconds": 0})
            continue
        if any(_names(k, title) for k in args.skip):
            results.append({"step": title, "status": "not run: skipped (--skip)", "seconds": 0})
            continue
        if title == PROMISE:  # half of what is left, so that the dry run after it is reached
            cmd = dict(steps(out, min(PROMISE_MINUTES, left / 120)))[title]
        if left < 30:
            results.append({"step": title, "status": "not run: out of time", "seconds": 0})
            continue
        print(f"== {title}: {' '.join(cmd[1:])}", flush=True)
        t0 = time.monotonic()
        log = out / f"{title.lower().replace(' ', '-')}.log"
        try:
            with log.open("w") as f:
                rc = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, timeout=left,
                                    env=dict(os.environ, PYTHONUNBUFFERED="1")).returncode
            status = "ok" if rc == 0 else f"failed (exit {rc})"
        except subprocess.TimeoutExpired:
            status = "timed out"
        staging.redact_file(log, redact)  # published: no machine's install or home paths (issue 43)
        results.append({"step": title, "status": status, "seconds": round(time.monotonic() - t0, 1),
                        "log": log.name})
        print(f"   {status} in {results[-1]['seconds']} s (log: {log})", flush=True)
        if status != "ok":
            failed = title
            results[-1]["next"] = NEXT.get(title, f"read {log.name}; the steps after it were not run")
            print(f"   STOPPED at {title}. NEXT: {results[-1]['next']}", flush=True)
    (out / "gpu-check.json").write_text(json.dumps({**device, "steps": results}, indent=2) + "\n")
    lines = [f"# gpu-check on {name}", "", f"{device['gpus']} GPU(s), {device['memory_gib']} GiB each; "
             f"{runtime.stack_label()}.", "", "| step | status | seconds |", "|---|---|---|"]
    lines += [f"| {r['step']} | {r['status']} | {r['seconds']} |" for r in results]
    lines += [f"\nNEXT ({r['step']}): {r['next']}" for r in results if r.get("next")]
    (out / "README.md").write_text("\n".join(lines) + "\n")
    return 0 if all(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
