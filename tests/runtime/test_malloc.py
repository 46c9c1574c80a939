"""``tune_malloc`` (tritonpy/_runtime/_malloc.py): glibc's thresholds set once per process when
a model starts, unless the model opts out, and nothing done on another C library. What the
setting changes in a real stub (page faults per request) is measured in
tests/integration/test_malloc_served.py."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, List

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime import _malloc
from tritonpy.testing import ModelHarness


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget this process's earlier outcome, so that tune_malloc() decides again."""
    monkeypatch.setattr(_malloc, "_tuned", None)


@pytest.mark.skipif(sys.platform != "linux", reason="glibc is a Linux C library")
def test_glibc_is_recognised_and_takes_both_settings() -> None:
    # a fresh interpreter: this test process may have been tuned by an earlier test
    code = (
        "from tritonpy._runtime import _malloc\n"
        "print(_malloc.glibc_version(), _malloc.tune_malloc(), _malloc.tune_malloc())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    version, first, second = out
    assert [int(part) for part in version.split(".")[:2]] >= [2, 17], version
    assert (first, second) == ("True", "True")


def test_it_is_applied_once_per_process(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[int] = []
    monkeypatch.setattr(_malloc, "_apply", lambda: calls.append(1) or True)
    assert _malloc.tune_malloc() and _malloc.tune_malloc()
    assert calls == [1]


def test_another_c_library_is_left_alone(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_glibc(name: str) -> Any:
        raise ValueError(f"unrecognized configuration name {name!r}")

    monkeypatch.setattr(os, "confstr", no_glibc)
    assert _malloc.glibc_version() is None
    assert _malloc.tune_malloc() is False

    monkeypatch.setattr(os, "confstr", lambda name: "musl 1.2.4")
    assert _malloc.glibc_version() is None


def _model(tune: bool) -> type:
    class Double(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [-1])}
        outputs = {"Y": tp.Tensor("FP32", [-1])}
        tune_malloc = tune

        def infer(self, X: np.ndarray) -> Any:
            return {"Y": X * 2}

    return Double


@pytest.mark.parametrize("tune", [True, False])
def test_a_model_tunes_when_it_starts_unless_it_opts_out(
    tune: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: List[int] = []
    monkeypatch.setattr(_malloc, "tune_malloc", lambda: calls.append(1) or True)
    with ModelHarness(_model(tune)) as harness:
        assert calls == ([1] if tune else [])
        (y,) = harness.infer({"X": np.ones(3, np.float32)}).values()
        np.testing.assert_array_equal(y, [2, 2, 2])
