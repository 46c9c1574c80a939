"""``async def infer`` on a plain (non-streaming) model: execute returns a coroutine; merged
batches, per-request errors and isolation of a failing merged call work as in the sync path."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Dict, List

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness


class Scale(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [2])}
    outputs = {"Y": tp.Tensor("FP32", [2])}
    max_batch_size = 8

    def setup(self) -> None:
        self.calls: List[int] = []

    async def infer(self, X: np.ndarray) -> Dict[str, Any]:
        await asyncio.sleep(0)
        self.calls.append(len(X))
        if (X < 0).any():
            raise tp.InputError("X: negative values; send values >= 0")
        return {"Y": X * 3}


def test_an_async_infer_is_not_decoupled_and_execute_returns_a_coroutine() -> None:
    assert Scale.decoupled is None
    with ModelHarness(Scale) as harness:
        assert not harness.decoupled
        returned = harness.model.execute([])
        assert inspect.iscoroutine(returned)
        assert asyncio.run(returned) == []


def test_merged_requests_run_in_one_awaited_call() -> None:
    with ModelHarness(Scale) as harness:
        results = harness.infer_requests(
            [{"X": np.ones((1, 2), np.float32)}, {"X": np.full((2, 2), 2, np.float32)}]
        )
        assert harness.model.calls == [3]
    first, second = results
    assert not isinstance(first, Exception) and not isinstance(second, Exception)
    assert first["Y"].tolist() == [[3.0, 3.0]]
    assert second["Y"].tolist() == [[6.0, 6.0], [6.0, 6.0]]


def test_a_failing_request_fails_alone() -> None:
    with ModelHarness(Scale) as harness:
        results = harness.infer_requests(
            [
                {"X": np.ones((1, 2), np.float32)},
                {"X": -np.ones((1, 2), np.float32)},
                {"X": np.zeros((1, 2), np.float32)},
            ]
        )
        # merged call failed, then each request alone
        assert harness.model.calls == [3, 1, 1, 1]
    assert not isinstance(results[0], Exception)
    assert results[0]["Y"].tolist() == [[3.0, 3.0]]
    assert isinstance(results[1], tp.TritonRequestError)
    assert (results[1].code, results[1].message) == (
        "INVALID_ARG",
        "X: negative values; send values >= 0",
    )
    assert not isinstance(results[2], Exception)


def test_an_async_unbatched_model_with_an_internal_error() -> None:
    class Broken(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"Y": tp.Tensor("INT32", [1])}

        async def infer(self, X: np.ndarray) -> Dict[str, Any]:
            if int(X[0]) == 0:
                raise KeyError("zero")
            return {"Y": X}

    with ModelHarness(Broken) as harness:
        assert harness.infer({"X": np.array([5], np.int32)})["Y"].tolist() == [5]
        with pytest.raises(tp.TritonRequestError) as caught:
            harness.infer({"X": np.array([0], np.int32)})
    assert (caught.value.code, caught.value.message) == (
        "INTERNAL",
        "KeyError while running infer(): 'zero'",
    )


def test_concurrent_awaits_inside_one_infer() -> None:
    class Gather(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"Y": tp.Tensor("INT32", [1])}

        async def infer(self, X: np.ndarray) -> Dict[str, Any]:
            async def twice(v: int) -> int:
                await asyncio.sleep(0)
                return v * 2

            parts = await asyncio.gather(twice(int(X[0])), twice(1))
            return {"Y": np.array([sum(parts)], np.int32)}

    with ModelHarness(Gather) as harness:
        assert harness.infer({"X": np.array([4], np.int32)})["Y"].tolist() == [10]
