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
  with the losses at the next history row; those of the eager warm-up steps are read before a capture, outside
  anything that catches its errors, so a bad input raises as itself (naming its value) wherever it falls;
* a capture that fails stops the run (`CaptureFailed`, its last checkpoint intact): after an invalidated capture
  PyTorch's allocator may keep it registered, so the run continues in a fresh process (`make reproduce` again, or
  with `CUDA_GRAPHS=0` for eager steps); a graph is used only after its first replay succeeded;
* off where its batches change length (a TokenStore, length buckets: `fits`), as the plan has it, and everywhere
  when this process bars them (`romae.runtime.cuda_graphs_off`: `romae.compendium.settings` does so for
  ROMAE_CUDA_GRAPHS=0, `make reproduce CUDA_GRAPHS=0`).

Not bitwise equal to eager steps: the captured update reads its learning rate from a float32 tensor (the eager step
passes a float64 number). `make gpu-check` compares graphed and eager losses and weights over 20 steps. On the CPU
no graph is captured (`wanted` is False): the units only CUDA runs are listed in `romae.compendium.devices.ONLY_ON`,
and the tests run them with stand-in graphs.
"""

from __future__ import annotations

import collections
import warnings

import torch

from . import masking, runtime

WARMUP = 3  # eager steps of a batch signature before it is captured
MAX_GRAPHS = 8  # graphs kept (each holds its own activations' memory); further signatures run eagerly


class CaptureFailed(RuntimeError):
    """A CUDA graph's capture failed: the run stops, and continues in a fresh process (the message says how)."""


def allowed() -> bool:
    """Whether CUDA graphs may be used at all: not where this process bars them (`romae.runtime.cuda_graphs_off`:
    CUDA_GRAPHS=0)."""
    return runtime.cuda_graphs_barred() is None


def fits(data, cfg, transform=None) -> bool:
    """Whether `data`'s batches keep one shape, as a graph needs and the plan assumes
    (`romae.compendium.footprint.graphable`): not a TokenStore's (each batch cut to its own longest sample), not
    length-bucketed. False, or with `cfg.cuda_graphs=True` a ValueError naming why. Asked only where `wanted` is True."""
    store = any(c.__module__ == "romae.store" and c.__name__ == "TokenStore" for c in type(data).__mro__)
    why = [w for w, bad in (("batches of one length (a TokenStore's change with their samples)", store),
                            ("batches of one length (length_buckets)", bool(cfg.length_buckets))) if bad]
    if why and cfg.cuda_graphs:
        raise ValueError(f"TrainConfig(cuda_graphs=True) needs {', '.join(why)}; set cuda_graphs=None (on where it "
                         "applies) or False")
    return not why


def wanted(cfg, dev: torch.device, n_proc: int, optimizer) -> bool:
    """Whether `fit` replays its steps from CUDA graphs: cfg.cuda_graphs (None: on CUDA) on one CUDA process, one
    forward per step (no micro-batches), not compiled, with AdamW (the optimiser whose update takes a tensor
    learning rate inside a graph)."""
    on = (cfg.cuda_graphs if cfg.cuda_graphs is not None else dev.type == "cuda") and allowed()
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
            return self._replay(entry, batch)
        if sig is None or self.seen[sig] < WARMUP or len(self.graphs) >= MAX_GRAPHS:
            self.seen[sig] += 1
            self.eager += 1
            return self._side(batch)
        masking.flush_checks()  # the eager steps' input checks, read here: a bad input raises as itself
        entry = self._capture(batch)
        out = self._replay(entry, batch)  # capturing ran nothing: this is the step
        self.graphs[sig] = entry  # used for later batches only once its first replay succeeded
        return out

    def _replay(self, entry, batch: dict):
        graph, static_in, static_out, checks = entry
        for k, v in batch.items():
            static_in[k].copy_(v, non_blocking=True)
        graph.replay()
        checks.after_replay()
        self.replays += 1
        return tuple(t.clone() for t in static_out)

    def _side(self, batch: dict):
        """An eager step on the side stream (what capture needs before it: workspaces, lazy state made there)."""
        main = torch.cuda.current_stream(self.dev)
        self.stream.wait_stream(main)
        with torch.cuda.stream(self.stream):
            out = self.step(batch)
        main.wait_stream(self.stream)
        return out

    def _capture(self, batch: dict) -> tuple:
        """Capture one step on a copy of `batch` -> (graph, static inputs, static outputs, its GraphChecks); a capture
        that fails raises CaptureFailed (only the capture's own errors are caught: nothing else runs inside)."""
        static_in = {k: v.clone() for k, v in batch.items()}
        try:
            graph, static_out = self._record(static_in)
        except Exception as e:
            masking.take_checks()  # what the failed capture collected: never read
            self.failed = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            raise CaptureFailed(
                f"CUDA graph capture failed ({self.failed}). The run stops here; its last checkpoint is intact. After a "
                "failed capture PyTorch's CUDA allocator may keep it registered, so continue in a fresh process: the "
                "same command (make reproduce ... resumes from the checkpoint), or with CUDA_GRAPHS=0 "
                "(TrainConfig(cuda_graphs=False)) for eager steps") from e
        return graph, static_in, static_out, masking.GraphChecks(masking.take_checks())

    def _record(self, static_in: dict):
        """Capture one step on the static inputs -> (the graph, its static outputs). The capture is ended whatever
        happens inside it (`torch.cuda.graph` leaves it open when its body raises)."""
        graph = torch.cuda.CUDAGraph()
        torch.cuda.current_stream(self.dev).synchronize()
        with torch.cuda.stream(self.stream):
            # thread_local: the prefetching thread pins host memory meanwhile, which a global capture would refuse
            graph.capture_begin(capture_error_mode="thread_local")
            try:
                static_out = self.step(static_in)
            except BaseException:
                try:
                    graph.capture_end()
                except Exception:  # an invalidated capture: ending it is what releases the stream and the generator
                    pass
                raise
            graph.capture_end()
        return graph, static_out

    def close(self) -> None:
        for _, _, _, checks in self.graphs.values():
            checks.close()
        self.graphs.clear()


__all__ = ["GraphedSteps", "capturable", "portable", "signature", "wanted"]  # and CaptureFailed (issue 55)
