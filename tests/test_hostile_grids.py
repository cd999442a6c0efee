"""Hostile inputs to the grid side of the public API (patching, images, audio, RoPE): each refused with an error
that names the argument and the value, never a TypeError from deep inside, a ZeroDivisionError or an empty result.

The series builders' hostile inputs are in test_hostile_inputs.py. No data files; tiny tensors on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from romae import RoPE, from_images, grid_positions, patch_positions, patchify, unpatchify
from romae.audio import fbank, fit_to_patches, from_spectrograms, n_frames

X = torch.arange(2 * 8 * 8 * 3, dtype=torch.float32).reshape(2, 8, 8, 3)
IMAGES = np.random.default_rng(0).integers(0, 255, (4, 3, 8, 8), dtype=np.uint8)


@pytest.mark.parametrize("patch_size, words", [
    ((0, 4), r"patch_size must hold whole numbers >= 1, one per axis, got \(0, 4\)"),
    ((2.5, 2), r"patch_size must hold whole numbers >= 1, one per axis, got \(2.5, 2\)"),
    ((True, 2), r"got \(True, 2\)"),
    ((float("nan"), 2), r"got \(nan, 2\)"),
    ((-2, 2), r"got \(-2, 2\)"),
    (4, r"patch_size must be a sequence with one whole number per axis, got 4"),
    ("44", r"got '44'"),
    ((), r"one entry per axis"),
    ((16, 16), r"patch size 16 does not divide axis 0 of length 8"),
    ((2, 2, 2), r"x must be \[B, \*axes, C\] with 3 axes"),
])
def test_patchify_names_a_bad_patch_size(patch_size, words):
    with pytest.raises(ValueError, match=words):
        patchify(X, patch_size)


def test_patchify_refuses_an_array_an_empty_axis_and_a_bad_irregular_axis():
    with pytest.raises(TypeError, match="x must be a torch.Tensor .* got ndarray .*torch.as_tensor"):
        patchify(X.numpy(), (2, 2))
    with pytest.raises(ValueError, match=r"axis 0 of x has length 0: no patch to cut \(x shape \(2, 0, 8, 3\)\)"):
        patchify(torch.zeros(2, 0, 8, 3), (2, 2))
    with pytest.raises(ValueError, match=r"irregular_axes must name axes 0..1 of the grid, got 2"):
        patchify(X, (1, 2), irregular_axes=(2,))
    with pytest.raises(ValueError, match="irregular axis 1"):
        patchify(X, (1, 2), irregular_axes=(1,))


def test_patchify_takes_whole_floats_numpy_and_torch_sizes_alike_and_an_empty_batch():
    ref = patchify(X, (2, 4))
    for ps in [(2.0, 4.0), np.array([2, 4]), (np.int64(2), np.int32(4)), torch.tensor([2, 4]), [2, 4]]:
        assert torch.equal(patchify(X, ps), ref)
    assert torch.equal(unpatchify(ref, (2, 4), (4, 2)), X)
    empty = patchify(torch.zeros(0, 8, 8, 3), (2, 2))  # a batch of none: [0, N, D], not a reshape error
    assert empty.shape == (0, 16, 12)


def test_unpatchify_and_positions_name_bad_shapes():
    tokens = patchify(X, (2, 2))
    with pytest.raises(ValueError, match=r"grid must hold whole numbers >= 1, one per axis, got \(4, 0\)"):
        unpatchify(tokens, (2, 2), (4, 0))
    with pytest.raises(ValueError, match=r"grid have one entry per patch_size axis \(2\)"):
        unpatchify(tokens, (2, 2), (16,))
    with pytest.raises(TypeError, match="tokens must be a torch.Tensor"):
        unpatchify(tokens.numpy(), (2, 2), (4, 4))
    with pytest.raises(ValueError, match=r"grid must hold whole numbers >= 0, one per axis, got \(-1, 2\)"):
        grid_positions((-1, 2))
    assert grid_positions((0, 3)).shape == (2, 0)
    with pytest.raises(ValueError, match=r"x_shape must be \(B, \*axes, C\) with 2 axes"):
        patch_positions((2, 8, 3), (2, 2))
    assert torch.equal(patch_positions(X.shape, (2, 2))[0], grid_positions((4, 4)))


@pytest.mark.parametrize("patch_size", [2.5, float("nan"), True, 0, -2, "4", (2, 2, 2), (2.0, 2)])
def test_from_images_names_a_bad_patch_size(patch_size):
    with pytest.raises(ValueError, match=r"patch_size must be a positive int or a pair of them, got "):
        from_images(IMAGES, patch_size=patch_size)


def test_from_images_names_a_bad_size_and_takes_numpy_sizes():
    with pytest.raises(ValueError, match=r"size must be a positive int or a pair of them, got 2.5"):
        from_images(IMAGES, patch_size=4, size=2.5)
    a = from_images(IMAGES, patch_size=np.array([4, 4]))
    b = from_images(IMAGES, patch_size=4)
    assert a.patch_size == b.patch_size == (4, 4)


@pytest.mark.parametrize("call, words", [
    (lambda: fbank(torch.zeros(16000), sample_rate=0), r"fbank.sample_rate must be a finite number in \(0, inf\)"),
    (lambda: fbank(torch.zeros(16000), sample_rate=10), "is 0 samples shifted by 0; it needs at least 2 samples"),
    (lambda: fbank(torch.zeros(16000), num_mel_bins=0), "fbank.num_mel_bins must be a whole number >= 1, got 0"),
    (lambda: fbank(torch.zeros(16000), frame_shift_ms=float("nan")), "fbank.frame_shift_ms must be a finite"),
    (lambda: fbank(torch.zeros(16000), preemphasis=2), r"fbank.preemphasis must be a finite number in \[0, 1\]"),
    (lambda: n_frames(-5), "n_frames.n_samples must be a whole number >= 0, got -5"),
    (lambda: fit_to_patches(torch.zeros(10, 4), 0), "fit_to_patches.patch must be a whole number >= 1, got 0"),
    (lambda: fit_to_patches(torch.zeros(10, 4), 2, target_frames=0), "target_frames must be a whole number >= 1"),
    (lambda: fit_to_patches(torch.zeros(10), 2), r"spec must be a tensor \[..., frames, bins\], got \(10,\)"),
    (lambda: from_spectrograms([torch.zeros(100, 128)], patch_size=0), "patch_size must be a positive int or a pair"),
    (lambda: from_spectrograms([torch.zeros(100, 128)], patch_size=2.5), "got 2.5"),
])
def test_audio_names_a_bad_argument(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_audio_takes_numpy_integers():
    assert n_frames(np.int64(16000)) == n_frames(16000) == 98
    s = torch.ones(498, 8)
    assert torch.equal(fit_to_patches(s, np.int64(16)), fit_to_patches(s, 16))


@pytest.mark.parametrize("kw, words", [
    (dict(head_dim=8, n_axes=0), "RoPE.n_axes must be a whole number >= 1, got 0"),
    (dict(head_dim=0, n_axes=1), "RoPE.head_dim must be a whole number >= 2, got 0"),
    (dict(head_dim=8, n_axes=1, p=1.5), r"RoPE.p must be a finite number in \[0, 1\]"),
    (dict(head_dim=8, n_axes=1, p=float("nan")), r"RoPE.p must be a finite number in \[0, 1\].*got nan"),
    (dict(head_dim=8, n_axes=1, base=0.0), r"RoPE.base must be a finite number in \(0, inf\)"),
    (dict(head_dim=8, n_axes=1, base=-5.0), "got -5.0"),
    (dict(head_dim=6, n_axes=2), "must split into n_axes=2 equal chunks of even size"),
])
def test_rope_names_a_bad_argument(kw, words):
    with pytest.raises(ValueError, match=words):
        RoPE(**kw)


def test_rope_takes_numpy_integers_like_ints():
    a, b = RoPE(np.int64(8), np.int64(2)), RoPE(8, 2)
    assert (a.head_dim, a.n_axes) == (8, 2) and type(a.head_dim) is int
    assert torch.equal(a.theta64, b.theta64)
