"""The process-wide settings a model makes in its stub when it starts: ``tune_malloc``
(tritonpy/_runtime/_malloc.py: glibc's thresholds set once per process unless the model opts
out, nothing done on another C library) and ``torch_threads`` (_torch_threads.py). What they
change in a real stub is checked in tests/integration/test_stub_settings_served.py."""

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


@pytest.mark.parametrize("bad", ["false", 0, None])
def test_tune_malloc_must_be_a_bool(bad: Any) -> None:
    with pytest.raises(tp.DeclarationError, match="tune_malloc must be True or False"):

        class Bad(tp.Model):
            inputs = {"X": tp.Tensor("FP32", [-1])}
            outputs = {"Y": tp.Tensor("FP32", [-1])}
            tune_malloc = bad

            def infer(self, X: np.ndarray) -> Any:
                return {"Y": X}


# -- torch_threads ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -2, True, 1.5, "1"])
def test_torch_threads_must_be_a_positive_integer(bad: Any) -> None:
    with pytest.raises(tp.DeclarationError, match="torch_threads must be a positive integer"):

        class Bad(tp.Model):
            inputs = {"X": tp.Tensor("FP32", [-1])}
            outputs = {"Y": tp.Tensor("FP32", [-1])}
            torch_threads = bad

            def infer(self, X: np.ndarray) -> Any:
                return {"Y": X}


def test_torch_threads_sets_torch_when_the_model_starts() -> None:
    torch = pytest.importorskip("torch", reason="torch_threads sets PyTorch's threads")
    before = torch.get_num_threads()

    class Small(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [-1])}
        outputs = {"Y": tp.Tensor("FP32", [-1])}
        torch_threads = 1

        def infer(self, X: np.ndarray) -> Any:
            return {"Y": X + torch.get_num_threads()}

    try:
        torch.set_num_threads(2)
        with ModelHarness(Small) as harness:
            (y,) = harness.infer({"X": np.zeros(2, np.float32)}).values()
        np.testing.assert_array_equal(y, [1, 1])
    finally:
        torch.set_num_threads(before)


def test_torch_threads_without_torch_names_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from tritonpy._runtime import _torch_threads

    real = importlib.import_module

    def no_torch(name: str, *args: Any) -> Any:
        if name == "torch":
            raise ImportError("No module named 'torch'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_torch)
    with pytest.raises(tp.DeclarationError, match=r"classifier: torch_threads = 1 needs PyTorch"):
        _torch_threads.apply_torch_threads(1, "classifier")
    _torch_threads.apply_torch_threads(None, "classifier")  # None: torch is not even imported
