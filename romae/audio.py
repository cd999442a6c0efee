"""Audio -> log-Mel filterbank spectrograms (Kaldi-compatible, batched in torch) -> RoMAE tokens.

SSAST (`YuanGongND/ssast`, src/dataloader.py), whose conventions the paper follows for ESC-50, computes
`torchaudio.compliance.kaldi.fbank(waveform - waveform.mean(), htk_compat=True, use_energy=False,
window_type="hanning", num_mel_bins=128, dither=0.0, frame_shift=10)` on waveforms in [-1, 1] at 16 kHz.
torchaudio does not load with this torch, so `fbank` re-implements Kaldi's algorithm for a batch of
waveforms at once (tested against `kaldi-native-fbank`):

    frames of 25 ms every 10 ms (snip_edges: 1 + (n - 400) // 160 frames at 16 kHz)
    -> remove each frame's mean -> pre-emphasis 0.97 -> window (SSAST's Hann) -> zero-pad to 512 -> |rfft|^2
    -> triangular Mel filters on Kaldi's mel scale 1127 ln(1 + f / 700), 20 Hz .. Nyquist
    -> log(max(energy, float32 eps))

The window: SSAST passes window_type="hanning", which in Kaldi (feature-window.cc), torchaudio's
`compliance.kaldi` and kaldi-native-fbank is the symmetric Hann window 0.5 - 0.5 cos(2 pi i / (N - 1)),
i = 0 .. N-1, over the N = 400 samples of a frame (`torch.hann_window(N, periodic=False)`). It is not Kaldi's
default: Kaldi's, torchaudio's and kaldi-native-fbank's default window_type is "povey", that Hann window raised
to the power 0.85. `fbank` defaults to "hanning", as SSAST; "povey" is offered and tested too.

Note: with 128 filters at 16 kHz the fourth filter (index 3) covers no FFT bin, so it is log(eps) for
every frame, in SSAST's features as here; Kaldi and kaldi-native-fbank refuse that configuration.

    spec = fbank(waves)                               # [B, frames, 128]
    data = from_spectrograms(specs, labels, patch_size=16)   # GridDataset: (time, frequency) patches
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from .config import check_number, check_whole
from .images import GridDataset, _pair

EPS = float(torch.finfo(torch.float32).eps)  # Kaldi / torchaudio's log floor


def mel_scale(f):
    """Kaldi's mel scale: 1127 ln(1 + f / 700)."""
    return 1127.0 * np.log1p(np.asarray(f, dtype=np.float64) / 700.0)


def mel_banks(num_bins: int, n_fft: int, sample_rate: float, low_freq: float = 20.0,
              high_freq: float = 0.0) -> Tensor:
    """Kaldi's triangular filters [num_bins, n_fft // 2 + 1] (the Nyquist column is zero, as in Kaldi).

    high_freq <= 0 means Nyquist + high_freq (Kaldi's convention)."""
    nyquist = 0.5 * sample_rate
    high = high_freq if high_freq > 0 else nyquist + high_freq
    if not 0 <= low_freq < high <= nyquist:
        raise ValueError(f"need 0 <= low_freq < high_freq <= Nyquist ({nyquist} Hz), got {low_freq}, {high}")
    lo, hi = mel_scale(low_freq), mel_scale(high)
    delta = (hi - lo) / (num_bins + 1)
    mel = mel_scale(np.arange(n_fft // 2) * sample_rate / n_fft)  # Kaldi's n_fft / 2 bins, Nyquist left out
    left = lo + delta * np.arange(num_bins)[:, None]
    center, right = left + delta, left + 2 * delta
    up, down = (mel - left) / (center - left), (right - mel) / (right - center)
    w = np.where((mel > left) & (mel <= center), up, np.where((mel > center) & (mel < right), down, 0.0))
    return torch.from_numpy(np.pad(w, ((0, 0), (0, 1))))


def _window(kind: str, n: int) -> Tensor:
    """Kaldi's windows over a frame of n samples (feature-window.cc): symmetric, cosines of 2 pi i / (n - 1)."""
    i = torch.arange(n, dtype=torch.float64)
    hann = 0.5 - 0.5 * torch.cos(2 * math.pi * i / (n - 1))
    if kind == "hanning":
        return hann
    if kind == "povey":  # Kaldi's default
        return hann.pow(0.85)
    if kind == "hamming":
        return 0.54 - 0.46 * torch.cos(2 * math.pi * i / (n - 1))
    if kind == "rectangular":
        return torch.ones(n, dtype=torch.float64)
    raise ValueError(f"unknown window {kind!r}; choose hanning, povey, hamming or rectangular")


def n_frames(n_samples: int, sample_rate: int = 16000, frame_length_ms: float = 25.0,
             frame_shift_ms: float = 10.0) -> int:
    """Frames Kaldi makes of n samples (snip_edges=True): 1 + (n - length) // shift, 0 if too short."""
    length, shift = _frame(sample_rate, frame_length_ms, frame_shift_ms, "n_frames")
    n_samples = _whole("n_frames", "n_samples", n_samples)
    return 0 if n_samples < length else 1 + (n_samples - length) // shift


def _whole(owner: str, name: str, value, **kw) -> int | None:
    """config.check_whole, numpy integers (a shape read from an array) taken as ints."""
    return check_whole(owner, name, int(value) if isinstance(value, np.integer) else value, **kw)


def _frame(sample_rate, frame_length_ms, frame_shift_ms, owner: str) -> tuple[int, int]:
    """(frame length, frame shift) in samples, each a ValueError naming `owner`'s argument unless >= 1 (2 for the
    length: its window divides by n - 1)."""
    check_number(owner, "sample_rate", sample_rate, 0, low_open=True, meaning=" (Hz)")
    check_number(owner, "frame_length_ms", frame_length_ms, 0, low_open=True)
    check_number(owner, "frame_shift_ms", frame_shift_ms, 0, low_open=True)
    length, shift = int(sample_rate * frame_length_ms / 1000), int(sample_rate * frame_shift_ms / 1000)
    if length < 2 or shift < 1:
        raise ValueError(f"{owner}: a frame of {frame_length_ms} ms shifted by {frame_shift_ms} ms at {sample_rate} Hz "
                         f"is {length} samples shifted by {shift}; it needs at least 2 samples and a shift of 1")
    return length, shift


def fbank(waveform, sample_rate: int = 16000, num_mel_bins: int = 128, frame_length_ms: float = 25.0,
          frame_shift_ms: float = 10.0, window: str = "hanning", preemphasis: float = 0.97,
          remove_dc_offset: bool = True, low_freq: float = 20.0, high_freq: float = 0.0,
          subtract_mean: bool = True) -> Tensor:
    """Kaldi-compatible log-Mel filterbank of waveforms [..., n] -> [..., frames, num_mel_bins] (float32).

    Defaults are SSAST's (window "hanning" = the symmetric Hann window, not Kaldi's default "povey"; 128 bins,
    no dither, no energy); `subtract_mean` removes each waveform's mean first, as SSAST does before calling Kaldi.
    window: hanning | povey | hamming | rectangular (Kaldi's names). Computed in float64.
    """
    x = torch.as_tensor(waveform)
    if x.is_complex() or not (x.is_floating_point() or x.dtype in (torch.int16, torch.int32)):
        raise TypeError(f"waveform must be real samples (float or int16), got {x.dtype}")
    x = x.to(torch.float64)
    if x.dim() == 0 or x.shape[-1] == 0:
        raise ValueError(f"waveform must be [..., n_samples] with n_samples > 0, got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError("waveform holds NaN or infinite samples")
    _whole("fbank", "num_mel_bins", num_mel_bins, minimum=1)
    check_number("fbank", "preemphasis", preemphasis, 0, 1)
    length, shift = _frame(sample_rate, frame_length_ms, frame_shift_ms, "fbank")
    count = n_frames(x.shape[-1], sample_rate, frame_length_ms, frame_shift_ms)
    if count == 0:
        raise ValueError(f"waveform of {x.shape[-1]} samples is shorter than one frame ({length} samples = "
                         f"{frame_length_ms} ms at {sample_rate} Hz)")
    if subtract_mean:
        x = x - x.mean(-1, keepdim=True)
    frames = x.unfold(-1, length, shift)[..., :count, :]  # [..., frames, length]
    if remove_dc_offset:
        frames = frames - frames.mean(-1, keepdim=True)
    if preemphasis:  # Kaldi: w[i] -= c * w[i - 1] for i > 0, and w[0] -= c * w[0]
        prev = torch.cat((frames[..., :1], frames[..., :-1]), -1)
        frames = frames - preemphasis * prev
    frames = frames * _window(window, length)
    n_fft = 1 << (length - 1).bit_length()  # round_to_power_of_two
    power = torch.fft.rfft(frames, n=n_fft).abs().pow(2)  # [..., frames, n_fft // 2 + 1]
    mel = power @ mel_banks(num_mel_bins, n_fft, sample_rate, low_freq, high_freq).T
    return mel.clamp_min(EPS).log().float()


def fit_to_patches(spec: Tensor, patch: int, remainder: str = "pad", pad_value: float = 0.0,
                   target_frames: int | None = None) -> Tensor:
    """Frames [..., T, F] -> a multiple of `patch` frames (or exactly `target_frames`).

    remainder="pad": append frames of `pad_value` (SSAST pads its fbank with zeros before normalising, to
    512 frames for ESC-50's 498); "crop": drop the last T mod patch frames.
    """
    patch = _whole("fit_to_patches", "patch", patch, minimum=1)
    target_frames = _whole("fit_to_patches", "target_frames", target_frames, minimum=1, none=True)
    if not isinstance(spec, Tensor) or spec.dim() < 2:
        raise ValueError(f"spec must be a tensor [..., frames, bins], got "
                         f"{tuple(spec.shape) if isinstance(spec, Tensor) else type(spec).__name__}")
    T = spec.shape[-2]
    if target_frames is None:
        if remainder not in ("pad", "crop"):
            raise ValueError(f"remainder must be 'pad' or 'crop', got {remainder!r}")
        target_frames = -(-T // patch) * patch if remainder == "pad" else (T // patch) * patch
        if target_frames == 0:
            raise ValueError(f"{T} frames are fewer than one patch of {patch}: use remainder='pad'")
    elif target_frames % patch:
        raise ValueError(f"target_frames={target_frames} is not a multiple of the patch size {patch}")
    if target_frames <= T:
        return spec[..., :target_frames, :]
    pad = spec.new_full((*spec.shape[:-2], target_frames - T, spec.shape[-1]), pad_value)
    return torch.cat((spec, pad), -2)


def from_spectrograms(specs: Sequence | Tensor, labels=None, *, patch_size=16, mean: float | None = None,
                      std: float | None = None, remainder: str = "pad", target_frames: int | None = None,
                      classes: list | None = None, dtype=torch.float16) -> GridDataset:
    """Spectrograms [T_i, F] (or a batch [N, T, F]) -> a GridDataset of (time, frequency) patches.

    Every spectrogram is brought to the same number of frames (`fit_to_patches`; the longest one's, or
    `target_frames`). mean / std: normalisation; None = from these spectrograms' real frames (pass the
    training set's to test data). Stored as `dtype` (float16 halves the memory; tokens are float32).
    """
    specs = [torch.as_tensor(s) for s in specs]  # kept in their own dtype: no float32 copy of a large set
    if not specs:
        raise ValueError("no spectrograms given")
    if any(s.dim() != 2 for s in specs) or len({s.shape[1] for s in specs}) != 1:
        raise ValueError(f"spectrograms must be [frames, bins] with one bin count, got shapes "
                         f"{sorted({tuple(s.shape) for s in specs})[:3]}")
    ph, pw = _pair(patch_size, "patch_size")
    if specs[0].shape[1] % pw:
        raise ValueError(f"patch width {pw} does not divide the {specs[0].shape[1]} frequency bins")
    if mean is None or std is None:  # over the real frames, in float64 running sums
        n = sum(s.numel() for s in specs)
        total = sum(s.double().sum() for s in specs)
        mean_ = float(total / n)
        var = sum(((s.double() - mean_) ** 2).sum() for s in specs) / max(n - 1, 1)
        mean = mean_ if mean is None else mean
        std = float(var.sqrt()) if std is None else std
    longest = target_frames or max(fit_to_patches(s[:, :1], ph, remainder).shape[0] for s in specs)
    grids = torch.empty(len(specs), 1, longest, specs[0].shape[1], dtype=dtype)
    for i, s in enumerate(specs):
        grids[i, 0] = fit_to_patches(s.float(), ph, target_frames=longest)
    return GridDataset(grids, labels, patch_size=(ph, pw), mean=(mean,), std=(std,), scale=1.0, classes=classes)


__all__ = ["fbank", "mel_banks", "mel_scale", "n_frames", "fit_to_patches", "from_spectrograms"]
