"""RoMAE: Rotary Masked Autoencoders (arXiv 2505.20535), a compact re-implementation.

    from romae import RoMAEConfig, RoMAEForPreTraining, RoMAEForPrediction, size, patchify
"""

from .config import EncoderConfig, RoMAEConfig, TrainConfig, check_profile, size
from .masking import random_mask
from .model import Encoder, RoMAEForPreTraining, RoMAEForPrediction
from .patching import grid_positions, patch_positions, patchify, unpatchify
from .rope import RoPE, apply_rope

__all__ = ["EncoderConfig", "RoMAEConfig", "TrainConfig", "check_profile", "size", "random_mask",
           "Encoder", "RoMAEForPreTraining", "RoMAEForPrediction", "grid_positions", "patch_positions",
           "patchify", "unpatchify", "RoPE", "apply_rope"]
__version__ = "0.1.0"
