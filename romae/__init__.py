"""RoMAE: Rotary Masked Autoencoders (arXiv 2505.20535), a compact re-implementation.

    from romae import RoMAEConfig, RoMAEForPreTraining, RoMAEForPrediction, size, patchify
    from romae import from_sequences, from_long, from_images, fit, predict, pretrain_finetune, metrics

`import romae` loads nothing else: each name is imported from its module when it is first used (PEP 562), so a
script that needs the model does not load scikit-learn (metrics) or pandas (builders).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the lazy names are, for readers (editors, type checkers, romae.compendium.staleness)
    from . import metrics
    from .builders import Standardizer, TokenDataset, from_long, from_sequences
    from .config import EncoderConfig, RoMAEConfig, TrainConfig, check_profile, size
    from .images import GridDataset, from_images
    from .masking import random_mask
    from .model import Encoder, RoMAEForPreTraining, RoMAEForPrediction, prediction_config
    from .patching import grid_positions, patch_positions, patchify, unpatchify
    from .recipe import pretrain_finetune
    from .rope import RoPE, apply_rope
    from .train import ArrayDataset, fit, predict

_WHERE = {  # name -> the module that defines it (the block above, as data)
    **dict.fromkeys(["Standardizer", "TokenDataset", "from_long", "from_sequences"], "builders"),
    **dict.fromkeys(["EncoderConfig", "RoMAEConfig", "TrainConfig", "check_profile", "size"], "config"),
    **dict.fromkeys(["GridDataset", "from_images"], "images"),
    "random_mask": "masking",
    **dict.fromkeys(["Encoder", "RoMAEForPreTraining", "RoMAEForPrediction", "prediction_config"], "model"),
    **dict.fromkeys(["grid_positions", "patch_positions", "patchify", "unpatchify"], "patching"),
    "pretrain_finetune": "recipe",
    **dict.fromkeys(["RoPE", "apply_rope"], "rope"),
    **dict.fromkeys(["ArrayDataset", "fit", "predict"], "train"),
}
__all__ = [*_WHERE, "metrics"]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name == "metrics":
        value = importlib.import_module(".metrics", __name__)
    elif name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    else:
        raise AttributeError(f"module 'romae' has no attribute {name!r}")
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
