"""Images (and other regular 2-D grids) kept compact in memory and cut into tokens batch by batch.

A `GridDataset` stores the raw grids, e.g. decoded uint8 images [N, C, H, W] (100,000 Tiny ImageNet
images at 64 px are 1.2 GB as uint8, five times that as float32), and builds a batch's tokens only when
the batch is asked for:

    data = from_images(images, labels, patch_size=(4, 4))      # uint8 [N, 3, H, W], ImageNet mean/std
    batch = data.batch(torch.arange(8))   # values [8, N, 4*4*3], positions [8, 2, N], labels [8]
    aug = data.with_augment(rand_augment(2, 9))                 # fine-tuning view: same storage

Per batch: uint8 -> float in [0, 1] -> `augment` (if any) -> resize (if `size`) -> (x - mean) / std per
channel -> `patchify` on (height, width) with the channel fastest inside a token -> integer grid
positions (row, column), as the authors' image experiment. Augmentation draws from torch's global
generator, which `romae.train.fit` seeds and checkpoints, so a resumed run draws what an uninterrupted
one would.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from .patching import grid_positions, patchify, unpatchify

IMAGENET_MEAN = (0.485, 0.456, 0.406)  # torchvision / timm IMAGENET_DEFAULT_MEAN (App. D.1: "ImageNet mean")
IMAGENET_STD = (0.229, 0.224, 0.225)


def _pair(x, name: str) -> tuple[int, int]:
    """A positive int or a pair of them (height, width); 2.5, True, "4", (2, 2, 2) are a ValueError naming `name`."""
    whole = lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v >= 1
    if isinstance(x, (str, bytes)) or not isinstance(x, (Sequence, np.ndarray, Tensor)):
        t = (x, x)
    else:
        t = tuple(x.tolist() if isinstance(x, (np.ndarray, Tensor)) else x)
    if len(t) != 2 or not all(whole(v) for v in t):
        raise ValueError(f"{name} must be a positive int or a pair of them, got {x!r}")
    return int(t[0]), int(t[1])


class GridDataset:
    """Grids [N, C, H, W] (+ labels) -> token batches; see the module docstring.

    scale: divisor that brings stored values to [0, 1] (255 for uint8 images, 1 for float grids).
    mean, std: per-channel normalisation after scaling. size: resize (height, width) before patching
    (None = as stored). augment: callable on float [B, C, H, W] in [0, 1] (training views only).
    """

    def __init__(self, grids, labels=None, *, patch_size, mean: Sequence[float], std: Sequence[float],
                 scale: float = 1.0, size=None, augment: Callable[[Tensor], Tensor] | None = None,
                 classes: list | None = None):
        grids = torch.as_tensor(grids)
        if grids.dim() != 4 or 0 in grids.shape:
            raise ValueError(f"grids must be a non-empty [N, C, H, W] array, got shape {tuple(grids.shape)}")
        if grids.is_complex() or grids.dtype == torch.bool:
            raise TypeError(f"grids must hold real numbers, got {grids.dtype}")
        self.grids = grids
        C = grids.shape[1]
        self.mean = torch.as_tensor(mean, dtype=torch.float32).reshape(-1)
        self.std = torch.as_tensor(std, dtype=torch.float32).reshape(-1)
        if self.mean.numel() != C or self.std.numel() != C:
            raise ValueError(f"mean and std need one value per channel ({C}), got {self.mean.numel()} and "
                             f"{self.std.numel()}")
        if not bool((self.std > 0).all() & torch.isfinite(self.mean).all() & torch.isfinite(self.std).all()):
            raise ValueError(f"std must be positive and mean, std finite, got mean {self.mean.tolist()}, "
                             f"std {self.std.tolist()}")
        if not (scale > 0 and np.isfinite(scale)):
            raise ValueError(f"scale must be a positive number, got {scale!r}")
        self.scale = float(scale)
        self.patch_size = _pair(patch_size, "patch_size")
        self.size = None if size is None else _pair(size, "size")
        H, W = self.size or grids.shape[2:]
        if H % self.patch_size[0] or W % self.patch_size[1]:
            raise ValueError(f"patch_size {self.patch_size} does not divide the image size {(H, W)}: crop or "
                             "resize (size=) so that it does")
        self.grid = (H // self.patch_size[0], W // self.patch_size[1])
        self._positions = grid_positions(self.grid)  # [2, N]: (row, column) of each patch, row-major
        if labels is not None:
            labels = torch.as_tensor(labels)
            if labels.shape[:1] != grids.shape[:1]:
                raise ValueError(f"{len(labels)} labels for {len(grids)} grids")
            if labels.is_floating_point() and labels.dim() == 1:
                raise TypeError("class labels must be integers (class indices)")
            labels = labels.long()
        self.labels = labels
        self.classes = classes
        self.augment = augment

    def __len__(self) -> int:
        return len(self.grids)

    @property
    def token_dim(self) -> int:
        return self.patch_size[0] * self.patch_size[1] * self.grids.shape[1]

    @property
    def n_axes(self) -> int:
        return 2

    @property
    def n_tokens(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def n_classes(self) -> int | None:
        if self.classes is not None:
            return len(self.classes)
        return None if self.labels is None else int(self.labels.max()) + 1

    def images(self, idx, augment: bool = True) -> Tensor:
        """Normalised float images [B, C, H', W'] of samples idx (augmented if this view augments)."""
        return self._normalised(self.grids[torch.as_tensor(idx)], augment)

    def _normalised(self, grids: Tensor, augment: bool = True) -> Tensor:
        """Stored grids [B, C, H, W] -> normalised float images, on the grids' device (augment, resize)."""
        x = grids.float() / self.scale
        if augment and self.augment is not None:
            x = self.augment(x)
        if self.size is not None and tuple(x.shape[-2:]) != self.size:
            x = F.interpolate(x, size=self.size, mode="bilinear", align_corners=False, antialias=True)
        mean, std = self.mean.to(x.device), self.std.to(x.device)
        return (x - mean[:, None, None]) / std[:, None, None]

    def to_tokens(self, x: Tensor) -> Tensor:
        """Normalised images [B, C, H, W] -> tokens [B, N, ph * pw * C] (channel fastest)."""
        return patchify(x.permute(0, 2, 3, 1), self.patch_size)

    def to_images(self, tokens: Tensor, denormalise: bool = True) -> Tensor:
        """Tokens [B, N, token_dim] -> images [B, C, H, W] (in [0, 1] scale if `denormalise`)."""
        x = unpatchify(tokens, self.patch_size, self.grid).permute(0, 3, 1, 2)
        return x * self.std[:, None, None] + self.mean[:, None, None] if denormalise else x

    def batch(self, idx) -> dict[str, Tensor]:
        """idx [B] -> {values [B, N, token_dim], positions [B, 2, N], labels [B] (if any)}: `finish(raw(idx))`."""
        return self.finish(self.raw(idx))

    def raw(self, idx) -> dict[str, Tensor]:
        """The draw-free part of `batch`: {"grids": the stored grids of idx (uint8 images stay uint8), "labels"}.
        `romae.feeding` gathers it ahead (in a thread, into pinned memory) and moves it to the device."""
        idx = torch.as_tensor(idx)
        out = {"grids": self.grids[idx]}
        if self.labels is not None:
            out["labels"] = self.labels[idx]
        return out

    def finish(self, raw: dict[str, Tensor]) -> dict[str, Tensor]:
        """The rest of `batch`, on the device `raw` lies on (a GPU resizes and augments there, kornia included):
        float, augment, resize, normalise, tokens. Augmentation draws random numbers: call it on the training
        thread, so a seeded (and resumed) run draws in one order."""
        grids = raw["grids"]
        out = {"values": self.to_tokens(self._normalised(grids)),
               "positions": self._positions.to(grids.device).expand(len(grids), -1, -1)}
        if "labels" in raw:
            out["labels"] = raw["labels"]
        return out

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        return {k: v[0] for k, v in self.batch(torch.tensor([i])).items()}

    def content_hash(self) -> str:
        """A hash of everything `batch` is made from (the stored grids, labels, scaling, resizing, patching and the
        augmentation's name and settings): what `romae.feeding.data_fingerprint` keys this dataset by, without
        drawing augmentations."""
        import hashlib

        from .storage import describe_callable, tensor_digest

        h = hashlib.sha256()
        for v in (self.grids, self.labels, self.mean, self.std, self.scale, self.patch_size, self.size,
                  describe_callable(self.augment)):
            tensor_digest(h, v)
        return h.hexdigest()[:16]

    def subset(self, idx) -> "GridDataset":
        """The samples idx, sharing nothing mutable with this dataset."""
        out = copy.copy(self)
        idx = torch.as_tensor(idx)
        out.grids = self.grids[idx]
        out.labels = None if self.labels is None else self.labels[idx]
        return out

    def with_augment(self, augment: Callable[[Tensor], Tensor] | None) -> "GridDataset":
        """A view of the same grids whose batches are augmented by `augment` (None: not augmented)."""
        out = copy.copy(self)
        out.augment = augment
        return out

    def __repr__(self) -> str:
        return (f"GridDataset({len(self)} grids {tuple(self.grids.shape[1:])} {self.grids.dtype}, patch "
                f"{self.patch_size}, {self.n_tokens} tokens of {self.token_dim}"
                + (f", resized to {self.size}" if self.size else "")
                + (", augmented" if self.augment is not None else "") + ")")


@torch.no_grad()
def mae_reconstruction(model, data: GridDataset, idx, seed: int = 0) -> dict:
    """MAE's picture of samples idx: {original, masked, prediction, pasted} grids [B, C, H, W] in the stored
    scale (de-normalised; NaN where nothing is shown) and the mask [B, N] (True = hidden).

    `model`: a RoMAEForPreTraining for `data`'s tokens. A fixed random mask (under `seed`) hides
    ceil(mask_ratio * N) patches. With norm-pix targets the model predicts each hidden patch standardised;
    as MAE's visualisation, the prediction is shown with the original patch's mean and std put back.
    """
    b = data.batch(torch.as_tensor(idx))
    v = b["values"]
    B, N, D = v.shape
    g = torch.Generator().manual_seed(seed)
    n_hide = int(np.ceil(model.cfg.mask_ratio * N))
    order = torch.rand(B, N, generator=g).argsort(1)
    mask = torch.zeros(B, N, dtype=torch.bool).scatter_(1, order[:, :n_hide], True)
    was_training = model.training
    model.eval()
    pred, _ = model(v, b["positions"], mask=mask)
    model.train(was_training)
    pred = pred.reshape(B, -1, D)
    if model.cfg.normalize_targets:  # back to the token scale with each target patch's statistics
        t = v[mask].reshape(B, -1, D)
        pred = pred * (t.var(-1, keepdim=True) + 1e-6).sqrt() + t.mean(-1, keepdim=True)
    masked, prediction, pasted = v.clone(), v.clone(), v.clone()
    masked[mask] = float("nan")  # hidden patches
    prediction[~mask] = float("nan")  # only what the model predicted
    prediction[mask] = pasted[mask] = pred.reshape(-1, D)
    out = {k: data.to_images(t) for k, t in
           dict(original=v, masked=masked, prediction=prediction, pasted=pasted).items()}
    return dict(out, mask=mask)


def from_images(images, labels=None, *, patch_size, mean=IMAGENET_MEAN, std=IMAGENET_STD, size=None,
                classes: list | None = None, channels_last: bool | None = None) -> GridDataset:
    """A GridDataset of 8-bit images: uint8 [N, C, H, W] (or [N, H, W, C]; [N, H, W] is one channel).

    Normalised with ImageNet's mean / std by default (pass your own per channel); `size` resizes each
    batch (bilinear) before it is cut into patches, e.g. (224, 224) as the authors did for Tiny ImageNet.
    """
    x = torch.as_tensor(np.asarray(images))
    if x.dtype != torch.uint8:
        raise TypeError(f"from_images expects uint8 pixels (0-255), got {x.dtype}; use GridDataset for other "
                        "grids (scale=, mean=, std=)")
    if x.dim() == 3:
        x = x.unsqueeze(1)
    if x.dim() != 4:
        raise ValueError(f"images must be [N, C, H, W], [N, H, W, C] or [N, H, W], got {tuple(x.shape)}")
    if channels_last is None:  # channels are the short axis: 1, 3 or 4 of them
        channels_last = x.shape[-1] in (1, 3, 4) and x.shape[1] not in (1, 3, 4)
    if channels_last:
        x = x.permute(0, 3, 1, 2)
    x = x.contiguous()
    if len(mean) != x.shape[1] and len(mean) == 3 and x.shape[1] == 1:  # grayscale: ImageNet's average
        mean, std = (float(np.mean(mean)),), (float(np.mean(std)),)
    return GridDataset(x, labels, patch_size=patch_size, mean=mean, std=std, scale=255.0, size=size,
                       classes=classes)


def rand_augment(n: int = 2, m: int = 9, group: int = 8) -> Callable[[Tensor], Tensor]:
    """RandAugment (Cubuk et al. 2020) with `n` operations of magnitude `m` (of 30, as torchvision's
    `num_magnitude_bins=31`), batched by kornia, on float images in [0, 1].

    kornia draws one pair of operations per call (magnitudes and signs per image); calling it on groups of
    `group` images gives every image a random pair, shared with at most group - 1 others, at ~1/6 of the
    cost of one call per image.
    """
    from kornia.augmentation.auto import RandAugment  # kornia is needed only by augmented views

    aug = RandAugment(n=n, m=m)
    if group < 1:
        raise ValueError(f"group must be >= 1, got {group}")

    def apply(x: Tensor) -> Tensor:
        return torch.cat([aug(part) for part in x.split(group)]).clamp_(0.0, 1.0)

    apply.__name__ = f"rand_augment(n={n}, m={m})"
    return apply


__all__ = ["GridDataset", "from_images", "rand_augment", "mae_reconstruction", "IMAGENET_MEAN", "IMAGENET_STD"]
