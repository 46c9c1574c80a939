"""The dtype table: every Triton type under its three names."""

from __future__ import annotations

import numpy as np
import pytest

from tritonpy import DTYPES, DeclarationError, lookup_dtype
from tritonpy._runtime.dtypes import dtype_of_numpy


@pytest.mark.parametrize(
    ("name", "config_name", "numpy_type"),
    [
        ("BOOL", "TYPE_BOOL", np.bool_),
        ("UINT8", "TYPE_UINT8", np.uint8),
        ("INT64", "TYPE_INT64", np.int64),
        ("FP16", "TYPE_FP16", np.float16),
        ("FP32", "TYPE_FP32", np.float32),
        ("FP64", "TYPE_FP64", np.float64),
        ("BYTES", "TYPE_STRING", np.object_),
    ],
)
def test_three_names(name: str, config_name: str, numpy_type: type) -> None:
    assert lookup_dtype(name) is lookup_dtype(config_name)
    assert lookup_dtype(name).config_name == config_name
    assert lookup_dtype(name).numpy == np.dtype(numpy_type)


def test_bf16_has_no_numpy_type() -> None:
    assert lookup_dtype("BF16").numpy is None


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(DeclarationError, match=r"unknown Triton data type 'FLOAT'.*FP32"):
        lookup_dtype("FLOAT")


def test_numpy_to_triton() -> None:
    assert dtype_of_numpy(np.dtype(np.float32)) is DTYPES["FP32"]
    assert dtype_of_numpy(np.dtype(object)) is DTYPES["BYTES"]
    assert dtype_of_numpy(np.dtype("U3")) is None


def test_cast_exactly_is_the_one_rule_for_python_values() -> None:
    from tritonpy._runtime.dtypes import cast_exactly

    assert cast_exactly(np.array([1, 2]), np.float32).dtype == np.float32
    assert cast_exactly(np.array([0.1]), np.float32) is not None  # floats may round
    assert cast_exactly(np.array([1e40]), np.float32) is None  # not to infinity
    assert cast_exactly(np.array([np.inf]), np.float32) is not None  # inf stays inf
    assert cast_exactly(np.array([2.5]), np.int32) is None
    assert cast_exactly(np.array([300]), np.int8) is None
    assert cast_exactly(np.array([-1]), np.uint8) is None
    assert cast_exactly(np.array([True]), np.int32) is None  # a bool is not a number here
    assert cast_exactly(np.array([1]), np.bool_) is None
    assert cast_exactly(np.array([True]), np.bool_) is not None
    assert cast_exactly(np.array(["1"]), np.int32) is None
