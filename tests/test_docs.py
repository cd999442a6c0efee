"""The public configs document every field in their docstrings (help(RoMAEConfig) shows what each means), and the
builders say how float labels (regression targets) are treated."""

from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

import romae
from romae.builders import from_long, from_sequences

PUBLIC_DATACLASSES = [getattr(romae, n) for n in romae.__all__
                      if isinstance(getattr(romae, n), type) and dataclasses.is_dataclass(getattr(romae, n))]


def test_the_public_dataclasses_are_found():
    names = {c.__name__ for c in PUBLIC_DATACLASSES}
    assert {"RoMAEConfig", "EncoderConfig", "TrainConfig"} <= names


def _attributes(cls) -> str:
    doc = inspect.getdoc(cls) or ""
    assert "Attributes:" in doc, f"{cls.__name__}'s docstring has no 'Attributes:' section"
    return doc.split("Attributes:", 1)[1]


@pytest.mark.parametrize("cls", PUBLIC_DATACLASSES, ids=lambda c: c.__name__)
def test_every_field_is_documented(cls):
    section = _attributes(cls)
    # each field opens a line of the Attributes section ("    name: meaning"), so a new field fails until documented
    listed = re.findall(r"^\s+([A-Za-z_]\w*):", section, flags=re.M)
    fields = [f.name for f in dataclasses.fields(cls)]
    missing = [f for f in fields if f not in listed]
    assert not missing, f"{cls.__name__}: fields not in its docstring's Attributes section: {missing}"
    stale = [n for n in listed if n not in fields]
    assert not stale, f"{cls.__name__}: its docstring documents fields it does not have: {stale}"
    assert listed == fields, f"{cls.__name__}: document the fields in their order {fields}"


@pytest.mark.parametrize("builder", [from_sequences, from_long], ids=lambda f: f.__name__)
def test_builders_say_how_float_labels_are_treated(builder):
    doc = " ".join((builder.__doc__ or "").split())
    assert "regression targets" in doc and ("Float labels" in doc or "float `label`" in doc)
    assert "NOT standardised" in doc and "original units" in doc


def test_regression_labels_are_kept_as_given():
    """What the docstrings say: float labels come back unchanged (no standardisation), only values are scaled."""
    import numpy as np

    rng = np.random.default_rng(0)
    y = np.array([100.0, 250.5, 3.0e4])
    train = from_sequences([rng.normal(5.0, 3.0, (4, 2)) for _ in y], labels=y)
    assert train.classes is None and np.allclose(train.tensors["labels"].numpy(), y)
    assert abs(float(train.tensors["values"].mean())) < 1e-5  # the inputs are standardised
    test = from_sequences([rng.normal(5.0, 3.0, (4, 2))], labels=[7.0], like=train)
    assert test.tensors["labels"].tolist() == [7.0]
