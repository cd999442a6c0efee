"""Training steps replayed from CUDA graphs: one launch per step instead of ~60 kernel launches per block.

RoMAE's models are narrow (d_model 180-720), so on a GPU a step's time is mostly the host launching kernels (about
30 us each, some 60 per block forward and backward), not the kernels' arithmetic. A CUDA graph records the whole
step once (forward, backward, gradient clipping, the fused AdamW update) and replays it with one launch.

`GraphedSteps` does this inside `romae.train.fit` (`TrainConfig.cuda_graphs`, on by default on CUDA):

* one graph per batch signature (every tensor's shape and dtype, and the hidden count of a given mask): a run of
  fixed-shape batches has one, and a second for a short last batch; at most `MAX_GRAPHS`, each with its own memory
  pool (replays come in any order: the graphs together hold about twice the longest shape's activations with
  doubling lengths), further signatures run eagerly;
* `WARMUP` eager steps of a signature (real training steps, on a side stream) before it is captured;
* a `trim_padding` transform (notebook 16) cuts each batch to the smallest of a few lengths that keeps its real
  tokens (`masking.bucket_lengths`: 64, 128, 256, ..., the data's padded width), one graph per length, instead of
  exactly to its longest sample: the extra columns are padding, which attention and the loss ignore, but a random
  mask is drawn over them too, so which real tokens a batch hides changes (not how many, in expectation); the
  history's `cuda_graphs` row records that the run was graphed;
* the batch is copied into the graph's static inputs, the graph replayed, and the loss and gradient norm cloned out
  of its static outputs (the next replay rewrites them);
* the learning rate is a device tensor (AdamW `capturable=True`) that the scheduler fills on the host after each
  step; the random draws (masks, dropout, stochastic depth) come from the CUDA generator, which graphs advance on
  each replay, so every step draws afresh;
* the model's deferred input checks are captured too and folded after each replay (`masking.GraphChecks`), read
  with the losses at the next history row.

Not bitwise equal to eager steps: the captured update reads its learning rate from a float32 tensor (the eager step
passes a float64 number). `make gpu-check` compares graphed and eager losses and weights over 20 steps. On the CPU
no graph is captured (`wanted` is False); the tests run the bookkeeping with stand-in graphs.
"""

from __future__ import annotations

import collections
import warnings

import torch

from . import masking

WARMUP = 3  # eager steps of a batch signature before it is captured
MAX_GRAPHS = 8  # graphs kept (each holds its own activations' memory); further signatures run eagerly


def wanted(cfg, dev: torch.device, n_proc: int, optimizer) -> bool:
    """Whether `fit` replays its steps from CUDA graphs: cfg.cuda_graphs (None: on CUDA) on one CUDA process, one
    forward per step (no micro-batches), not compiled, with AdamW (the optimiser whose update takes a tensor
    learning rate inside a graph)."""
    on = cfg.cuda_graphs if cfg.cuda_graphs is not None else dev.type == "cuda"
    if not on:
        return False
    why = [w for w, bad in (("a CUDA device", dev.type != "cuda"), ("one process", n_proc != 1),
                            ("no micro-batches", cfg.micro_batch is not None), ("compile=False", cfg.compile),
                            ("optimizer='adamw'", cfg.optimizer != "adamw")) if bad]
    if why and cfg.cuda_graphs:
        raise ValueError(f"TrainConfig(cuda_graphs=True) needs {', '.join(why)}; set cuda_graphs=None (on where it "
                         "applies) or False")
    return not why


def capturable(optimizer, dev: torch.device) -> None:
    """Make the optimiser's update capturable: its learning rate a tensor on `dev` that the scheduler fills in place
    (float32 on CUDA, what the fused kernel reads; float64 elsewhere, bitwise the number's update) and AdamW's
    `capturable` flag on (its step counts on the device)."""
    dtype = torch.float32 if dev.type == "cuda" else torch.float64
    for group in optimizer.param_groups:
        lr = group["lr"]
        group["lr"] = lr if torch.is_tensor(lr) else torch.tensor(float(lr), dtype=dtype, device=dev)
        group["capturable"] = True


def portable(state: dict) -> dict:
    """An optimiser's or scheduler's state_dict with device-tensor learning rates as numbers (one read, at a
    checkpoint), so a checkpoint written under graphs resumes anywhere."""
    def number(v):
        return float(v) if torch.is_tensor(v) and v.numel() == 1 else v

    state = dict(state)
    if "param_groups" in state:
        state["param_groups"] = [{**g, "lr": number(g["lr"]), "capturable": False} if "capturable" in g
                                 else {**g, "lr": number(g["lr"])} for g in state["param_groups"]]
    if "_last_lr" in state:
        state["_last_lr"] = [number(v) for v in state["_last_lr"]]
    if "base_lrs" in state:
        state["base_lrs"] = [number(v) for v in state["base_lrs"]]
    return state


def trim_lengths(data) -> tuple[int, ...] | None:
    """The lengths `masking.trim_padding` cuts a batch of `data` to under graphs (`masking.bucket_lengths` of its
    padded width: 64, 128, 256, ..., the width): an ArrayDataset with a pad_mask; None otherwise."""
    pad = getattr(data, "tensors", {}).get("pad_mask")
    return None if pad is None or pad.dim() != 2 else masking.bucket_lengths(pad.shape[1])


def signature(batch: dict) -> tuple | None:
    """What a graph is specialised to: each tensor's name, shape and dtype, and a given mask's hidden count (shapes
    inside the model depend on it); None if the batch holds anything but tensors."""
    if any(not torch.is_tensor(v) for v in batch.values()):
        return None
    return (tuple((k, tuple(v.shape), str(v.dtype)) for k, v in sorted(batch.items())),
            getattr(masking._STATE, "hidden", None))


class GraphedSteps:
    """`step(batch) -> (loss, grad_norm)` (device tensors, nothing read back), replayed from CUDA graphs."""

    def __init__(self, step, dev: torch.device, lengths: tuple[int, ...] | None = None):
        self.step, self.dev, self.lengths = step, dev, lengths
        self.graphs: dict = {}  # signature -> (graph, static inputs, static outputs, GraphChecks)
        self.seen = collections.Counter()
        self.stream = torch.cuda.Stream(dev)
        self.replays = self.eager = 0
        self.failed: str | None = None  # why a capture failed: every later step then runs eagerly

    def __call__(self, batch: dict):
        sig = signature(batch)
        entry = self.graphs.get(sig)
        if entry is not None:
            graph, static_in, static_out, checks = entry
            for k, v in batch.items():
                static_in[k].copy_(v, non_blocking=True)
            graph.replay()
            checks.after_replay()
            self.replays += 1
            return tuple(t.clone() for t in static_out)
        if sig is None or self.failed or self.seen[sig] < WARMUP or len(self.graphs) >= MAX_GRAPHS:
            self.seen[sig] += 1
            self.eager += 1
            return self._side(batch)
        try:
            return self._capture(sig, batch)
        except Exception as e:  # a capture records and runs nothing: this step is taken eagerly, and every later one
            masking.take_checks()
            self.failed = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            warnings.warn(f"CUDA graph capture failed ({self.failed}); training goes on with eager steps "
                          "(TrainConfig(cuda_graphs=False) skips the attempt)", RuntimeWarning, stacklevel=2)
            torch.cuda.synchronize(self.dev)
            self.eager += 1
            return self._side(batch)

    def _side(self, batch: dict):
        """An eager step on the side stream (what capture needs before it: workspaces, lazy state made there)."""
        main = torch.cuda.current_stream(self.dev)
        self.stream.wait_stream(main)
        with torch.cuda.stream(self.stream):
            out = self.step(batch)
        main.wait_stream(self.stream)
        return out

    def _capture(self, sig, batch: dict):
        masking.flush_checks()  # nothing collected before may be read inside the capture
        static_in = {k: v.clone() for k, v in batch.items()}
        graph, static_out = self._record(static_in)
        checks = masking.GraphChecks(masking.take_checks())  # the checks the capture collected
        self.graphs[sig] = (graph, static_in, static_out, checks)
        graph.replay()  # capturing ran nothing: this is the step
        checks.after_replay()
        self.replays += 1
        return tuple(t.clone() for t in static_out)

    def _record(self, static_in: dict):
        """Capture one step on the static inputs -> (the graph, its static outputs)."""
        graph = torch.cuda.CUDAGraph()
        torch.cuda.current_stream(self.dev).synchronize()
        # thread_local: the prefetching thread pins host memory meanwhile, which a global capture would refuse
        with torch.cuda.graph(graph, stream=self.stream, capture_error_mode="thread_local"):
            static_out = self.step(static_in)
        return graph, static_out

    def close(self) -> None:
        for _, _, _, checks in self.graphs.values():
            checks.close()
        self.graphs.clear()


__all__ = ["GraphedSteps", "capturable", "portable", "signature", "wanted"]
