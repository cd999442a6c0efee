"""RoMAE: Rotary Masked Autoencoders (arXiv 2505.20535), a compact re-implementation.

    from romae import RoMAEConfig, RoMAEForPreTraining, RoMAEForPrediction, size, patchify
    from romae import from_sequences, from_long, from_images, fit, predict, pretrain_finetune, metrics
"""

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

__all__ = ["EncoderConfig", "RoMAEConfig", "TrainConfig", "check_profile", "size", "random_mask",
           "Encoder", "RoMAEForPreTraining", "RoMAEForPrediction", "prediction_config", "grid_positions",
           "patch_positions", "patchify", "unpatchify", "RoPE", "apply_rope", "ArrayDataset", "fit", "predict",
           "from_sequences", "from_long", "from_images", "GridDataset", "TokenDataset", "Standardizer", "pretrain_finetune", "metrics"]
__version__ = "0.1.0"
