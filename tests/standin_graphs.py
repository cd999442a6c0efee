"""Stand-in CUDA graphs on the CPU, inside the real `fit` (tests/test_graph_safety.py, tests/test_launch_bound.py).

`install(monkeypatch)` makes `fit` on the CPU take the CUDA-graph path (`romae.graphs.GraphedSteps`) with an
accelerator's deferred checks; a capture runs the step and undoes it (weights, optimiser state, random state: a real
capture computes nothing), its outputs and checks are the tensors a replay rewrites, and a replay reruns the step on
the static inputs. `repeat_draws=True` stands in for a broken graph whose every replay repeats its capture's random
draws (masks, dropout, drop path), which the probe of `make gpu-check` must catch.
"""

from __future__ import annotations

import copy

import torch

import romae.masking
from romae import graphs


def _run_of(step):
    """The engine's Run a GraphedSteps' step closes over (its model and optimiser)."""
    for cell in step.__closure__ or ():
        obj = cell.cell_contents
        if hasattr(obj, "optimizer") and hasattr(obj, "train_model"):
            return obj
    raise AssertionError("the graphed step closes over no Run: the stand-in cannot undo its capture")


class StandIn:
    def __init__(self, step, static_in, repeat_draws: bool = False):
        run = _run_of(step)
        self.step, self.static_in, self.repeat = step, static_in, repeat_draws
        weights = {k: v.detach().clone() for k, v in run.train_model.state_dict().items()}
        moments, self.rng = copy.deepcopy(run.optimizer.state_dict()), torch.get_rng_state()
        state = romae.masking._STATE
        outs = step(static_in)  # what the capture records (its checks stay collected, for GraphedSteps to take)
        run.train_model.load_state_dict(weights)  # ...and undone: capturing runs nothing
        run.optimizer.load_state_dict(moments)
        torch.set_rng_state(self.rng)
        self.outs = tuple(o.detach().clone() for o in outs)
        self.checks = [e[0] for e in state.pending]

    def replay(self):
        state = romae.masking._STATE
        kept, state.pending = state.pending, []
        now = torch.get_rng_state()
        if self.repeat:  # the capture's draws again, and the generator left where it was
            torch.set_rng_state(self.rng)
        try:
            outs = self.step(self.static_in)
            checks = [e[0] for e in state.pending]
        finally:
            state.pending = kept
            if self.repeat:
                torch.set_rng_state(now)
        for static, new in zip(self.outs + tuple(self.checks), tuple(outs) + tuple(checks)):
            static.copy_(new.detach().reshape(static.shape))


def install(monkeypatch, repeat_draws: bool = False) -> list:
    """Stand-in graphs for every `fit` on the CPU that wants them (cuda_graphs not False, graphs not barred) ->
    the list of GraphedSteps built."""
    made = []
    monkeypatch.setattr(romae.masking, "_async_checks", lambda device: True)
    real_wanted = graphs.wanted
    monkeypatch.setattr(graphs, "wanted", lambda cfg, dev, n, opt: cfg.cuda_graphs is not False and graphs.allowed()
                        if dev.type == "cpu" else real_wanted(cfg, dev, n, opt))
    monkeypatch.setattr(torch.cuda, "Stream", lambda dev: None)
    monkeypatch.setattr(graphs.GraphedSteps, "_side", lambda self, batch: self.step(batch))
    init = graphs.GraphedSteps.__init__

    def build(self, step, dev, lengths=None):
        init(self, step, dev, lengths)
        made.append(self)

    def record(self, static_in):
        g = StandIn(self.step, static_in, repeat_draws)
        return g, g.outs

    monkeypatch.setattr(graphs.GraphedSteps, "__init__", build)
    monkeypatch.setattr(graphs.GraphedSteps, "_record", record)
    return made
