"""Progress that fits its place (issue 53, item 6): tqdm's bar on a terminal; a plain line every few percent (or
every minute) where the stream is a log, a notebook kernel's stream or a pipe: never carriage returns."""

from __future__ import annotations

import io
import sys

import torch

from romae import progress
from romae.compendium import staleness
from romae.config import EncoderConfig, RoMAEConfig, TrainConfig
from romae.model import RoMAEForPrediction
from romae.runner.staging import drop_progress_bars
from romae.train import ArrayDataset, fit, predict


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self, step: float = 0.0):
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def lines_of(text: str) -> list[str]:
    assert "\r" not in text, "carriage returns in a stream that is no terminal"
    assert text.endswith("\n")
    return text.splitlines()


def test_a_terminal_gets_tqdm_and_anything_else_lines():
    from tqdm import tqdm

    assert isinstance(progress.bar(total=3, file=Terminal()), tqdm)
    assert isinstance(progress.bar(total=3, file=io.StringIO(), disable=True), tqdm)  # disabled: writes nothing
    assert isinstance(progress.bar(total=3, file=io.StringIO()), progress.Lines)
    assert "progress.py" in staleness.NEVER_COMPUTES  # it writes lines, never a number a result holds


def test_lines_every_5_percent_without_carriage_returns():
    out = io.StringIO()
    bar = progress.bar(total=1000, desc="train", file=out)
    for i in range(1000):
        bar.update(1)
        if i == 500:
            bar.set_postfix(loss="0.123", lr="0.001")
    bar.close()
    bar.close()  # twice: one last line
    lines = lines_of(out.getvalue())
    assert len(lines) == 1 + 20  # the start, then each 5 %
    assert lines[0].startswith("train:   0%|") and "| 0/1000 [" in lines[0]
    assert "| 1000/1000 [" in lines[-1] and "loss=0.123, lr=0.001" in lines[-1]
    assert drop_progress_bars([{"output_type": "stream", "name": "stderr", "text": out.getvalue()}]) == []


def test_lines_every_minute_in_a_long_run_and_the_last_at_close():
    out = io.StringIO()
    bar = progress.Lines(total=100_000, initial=2_000, desc="train", file=out, clock=Clock(10.0))  # 10 s per call
    for _ in range(30):  # 300 s, 0.03 % of the run
        bar.update(1)
    bar.close()
    lines = lines_of(out.getvalue())
    assert 5 <= len(lines) <= 8, lines  # the start, about one a minute, the end
    assert "| 2030/100000 [" in lines[-1]


def test_iterating_writes_lines_and_closes():
    out = io.StringIO()
    assert list(progress.bar(range(200), desc="predict", file=out)) == list(range(200))
    lines = lines_of(out.getvalue())
    assert len(lines) == 21 and "| 200/200 [" in lines[-1]


def test_fit_and_predict_write_bounded_lines_where_stderr_is_no_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    torch.manual_seed(0)
    m = RoMAEForPrediction(RoMAEConfig(token_dim=2, encoder=EncoderConfig(d_model=16, n_heads=2, depth=1, d_ff=32),
                                       n_outputs=2))
    data = ArrayDataset(values=torch.randn(200, 5, 2), positions=torch.arange(5.0).expand(200, 1, 5),
                        labels=torch.arange(200) % 2)
    res = fit(m, data, TrainConfig(epochs=3, batch_size=2, lr=1e-3, seed=0, log_every=10), device="cpu")
    assert res.steps == 300
    lines = lines_of(err.getvalue())
    assert 2 <= len(lines) <= 22 and all(line.startswith("train:") for line in lines), lines
    assert "| 300/300 [" in lines[-1] and "loss=" in lines[-1]
    err.seek(0)
    err.truncate()
    predict(res.model, data, batch_size=4, progress=True)  # 50 batches
    lines = lines_of(err.getvalue())
    assert 2 <= len(lines) <= 22 and "| 50/50 [" in lines[-1]
