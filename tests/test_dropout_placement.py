"""Dropout where the paper puts it (App. A.2: attention scores and the MLP's hidden layer) or where the authors'
code does (attention probabilities and the MLP's output): `EncoderConfig.dropout_at`, with the same parameter
names either way."""

from __future__ import annotations

import pytest
import torch

from romae.config import RoMAEConfig, size
from romae.experiments import uea
from romae.model import RoMAEForPrediction


def _mlp(at: str) -> torch.nn.Sequential:
    model = RoMAEForPrediction(RoMAEConfig(token_dim=2, encoder=size("tiny", depth=1, dropout=0.5, dropout_at=at),
                                           n_outputs=3))
    return next(m for m in model.modules() if m.__class__.__name__ == "Block").mlp


def test_the_mlp_dropout_sits_on_the_hidden_layer_or_the_output():
    x = torch.ones(1, 180)
    for at in ("paper", "authors"):
        mlp = _mlp(at).train()
        seen = {}
        # the tensor the dropout sees: 720 wide (hidden) or 180 wide (output)
        for m in mlp.modules():
            if isinstance(m, torch.nn.Dropout):
                m.register_forward_hook(lambda mod, inp, out, at=at: seen.update({at: inp[0].shape[-1]}))
        mlp(x)
        assert seen[at] == {"paper": 720, "authors": 180}[at]
    assert list(_mlp("paper").state_dict()) == list(_mlp("authors").state_dict())


def test_an_unknown_placement_is_refused():
    with pytest.raises(ValueError, match="EncoderConfig.dropout_at must be one of"):
        size("tiny", dropout_at="everywhere")


def test_uea_paper_placement_has_no_head_dropout():
    ft = uea.config("paper", ["Epilepsy"]).finetune("Epilepsy")
    assert ft.dropout == 0.2
    authors, paper = uea.classifier_args(ft), uea.classifier_args(ft, "paper")
    assert authors["head_overrides"]["head_dropout"] == 0.2 and paper["head_overrides"]["head_dropout"] == 0.0
    assert paper["dropout_at"] == "paper" and paper["dropout"] == 0.2
