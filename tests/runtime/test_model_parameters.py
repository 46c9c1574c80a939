"""Request parameters reach ``infer(parameters=...)``: a dict per request, a list of dicts per
row for merged rows; ``tp.Response`` response parameters (which release 24.10 refuses)."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime.response import Response, make_inference_response
from tritonpy.testing import ModelHarness


class Merged(tp.Model):
    inputs = {"X": tp.Tensor("INT32", [1])}
    outputs = {"Y": tp.Tensor("INT32", [1])}
    max_batch_size = 8

    def infer(self, X: np.ndarray, parameters: List[Dict[str, Any]]) -> Dict[str, Any]:
        offsets = np.array([[p.get("offset", 0)] for p in parameters], np.int32)
        return {"Y": X + offsets}


def test_merged_rows_get_one_dict_per_row() -> None:
    with ModelHarness(Merged) as harness:
        first, second = harness.infer_requests(
            [{"X": np.zeros((2, 1), np.int32)}, {"X": np.zeros((1, 1), np.int32)}],
            parameters={"offset": 7},
        )
        alone = harness.infer({"X": np.zeros((2, 1), np.int32)}, parameters={"offset": 3})
    assert not isinstance(first, Exception) and not isinstance(second, Exception)
    assert first["Y"].tolist() == [[7], [7]] and second["Y"].tolist() == [[7]]
    # a request alone in a merging model still gets one dict per row
    assert alone["Y"].tolist() == [[3], [3]]


def test_unmerged_requests_get_their_dict() -> None:
    seen: List[Any] = []

    class PerRequest(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"Y": tp.Tensor("INT32", [1])}

        def infer(self, X: np.ndarray, parameters: Dict[str, Any]) -> Dict[str, Any]:
            seen.append(parameters)
            return {"Y": X}

    with ModelHarness(PerRequest) as harness:
        harness.infer({"X": np.array([1], np.int32)}, parameters={"a": 1, "b": "x", "c": True})
        harness.infer({"X": np.array([1], np.int32)})
    assert seen == [{"a": 1, "b": "x", "c": True}, {}]


def test_streams_get_their_dict() -> None:
    class Repeat(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"Y": tp.Tensor("INT32", [1])}
        max_batch_size = 4

        def infer(self, X: np.ndarray, parameters: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
            for _ in range(int(parameters["times"])):
                yield {"Y": X}

    with ModelHarness(Repeat) as harness:
        parts = harness.infer_stream({"X": np.ones((1, 1), np.int32)}, parameters={"times": 3})
    assert len(parts) == 3


def test_an_input_named_parameters_is_refused() -> None:
    with pytest.raises(tp.DeclarationError, match="rename the input"):

        class Clash(tp.Model):
            inputs = {"parameters": tp.Tensor("INT32", [1])}
            outputs = {"Y": tp.Tensor("INT32", [1])}

            def infer(self, parameters: np.ndarray) -> Dict[str, Any]:
                return {"Y": parameters}


def test_parameters_is_not_a_missing_input_in_the_signature_check() -> None:
    class Optional(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"Y": tp.Tensor("INT32", [1])}

        def infer(self, X: np.ndarray, parameters: Dict[str, Any]) -> Dict[str, Any]:
            return {"Y": X}

    assert Optional._Model__infer.wants_parameters  # type: ignore[attr-defined]


def test_response_values_are_checked() -> None:
    with pytest.raises(tp.OutputError, match="bool, int or str"):
        Response({"Y": 1}, parameters={"score": 0.5})  # type: ignore[dict-item]


class Release2410:
    """pb_utils of release 24.10 as far as responses go: its InferenceResponse takes
    output_tensors and error only (pybind11 refuses parameters= with this TypeError, measured
    on the real server)."""

    class InferenceResponse:
        def __init__(self, output_tensors: Any = (), error: Any = None, **extra: Any) -> None:
            if extra:
                raise TypeError(
                    "__init__(): incompatible constructor arguments. The following argument "
                    "types are supported: ..."
                )
            self.outputs = list(output_tensors)


def test_response_parameters_on_a_24_10_backend_fail_with_a_clear_error() -> None:
    with pytest.raises(tp.OutputError) as caught:
        make_inference_response(Release2410, [], {"tag": "a"})
    assert "response parameters ['tag']" in str(caught.value)
    assert "release 24.10 and older refuse it" in str(caught.value)


def test_a_response_without_parameters_is_a_plain_response() -> None:
    class Wrapped(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [1])}
        outputs = {"Y": tp.Tensor("INT32", [1])}

        def infer(self, X: np.ndarray) -> Response:
            return Response({"Y": X + 1})

    with ModelHarness(Wrapped) as harness:
        assert harness.infer({"X": np.array([1], np.int32)})["Y"].tolist() == [2]
