"""tp.Model's hooks of newer releases (issue 31 item 3): ``ready()`` becomes Triton's
``is_ready`` (called from 26.03 on) and ``response_parameters = True`` refuses to load where
the Python backend has no response parameters (before 25.02), each run in the harness at the
releases that have them and at the ones that lack them."""

from __future__ import annotations

from typing import Any, Dict

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness, Readiness, ReleaseSurfaceWarning


class Plain(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [2])}
    outputs = {"Y": tp.Tensor("FP32", [2])}

    def infer(self, X: Any) -> Dict[str, Any]:
        return {"Y": X * 2}


class Warming(Plain):
    def setup(self) -> None:
        self.warm: Any = False

    def ready(self) -> bool:
        return self.warm  # type: ignore[no-any-return]


class AsyncWarming(Plain):
    async def ready(self) -> bool:
        return True


class Tagged(Plain):
    response_parameters = True

    def infer(self, X: Any) -> Any:
        return tp.Response({"Y": X}, parameters={"scale": 1, "unit": "m"})


X = {"X": np.ones(2, np.float32)}


def test_a_model_without_ready_has_no_is_ready() -> None:
    # the server then answers readiness without calling into the stub (its fast path)
    assert not hasattr(Plain, "is_ready")
    with ModelHarness(Plain, release="26.07") as harness:
        assert harness.is_ready()


def test_ready_is_the_is_ready_hook_from_26_03() -> None:
    assert hasattr(Warming, "is_ready")
    with ModelHarness(Warming, release="26.03") as harness:
        assert harness.readiness() == Readiness(
            False, "UNAVAILABLE", "Model 'Warming_0' is not ready (user-defined check failed)."
        )
        harness.model.warm = True
        assert harness.is_ready()
        harness.model.warm = "yes"
        answer = harness.readiness()
        assert (answer.ready, answer.code) == (False, "INTERNAL")
        assert "Warming.ready() returned 'yes' (str): Triton needs True or False" in answer.message
    with ModelHarness(AsyncWarming, release="26.07") as harness:
        assert harness.is_ready()


def test_before_26_03_ready_is_never_called_and_the_harness_warns() -> None:
    with pytest.warns(ReleaseSurfaceWarning, match=r"Triton 24\.10 never calls"):
        harness = ModelHarness(Warming)
    with harness:
        assert harness.is_ready()  # the model is not warm, but 24.10 does not ask it
        assert harness.infer(X)["Y"].tolist() == [2.0, 2.0]


def test_response_parameters_reach_the_client_from_25_02() -> None:
    with ModelHarness(Tagged, release="25.02") as harness:
        outputs, params = harness.infer_with_parameters(X)
    assert outputs["Y"].tolist() == [1.0, 1.0]
    assert params == {"scale": 1, "unit": "m"}


@pytest.mark.parametrize("release", ["24.10", "25.01"])
def test_response_parameters_refuse_to_load_on_older_releases(release: str) -> None:
    with pytest.raises(tp.DeclarationError) as caught:
        ModelHarness(Tagged, release=release)
    text = str(caught.value)
    assert f"Python backend (release {release}) has no response parameters" in text
    assert "arrived in release 25.02, python_backend r25.02 src/pb_stub.cc" in text


def test_an_undeclared_response_with_parameters_fails_its_request_on_24_10() -> None:
    class Undeclared(Tagged):
        response_parameters = False

    with ModelHarness(Undeclared) as harness:
        with pytest.raises(tp.TritonRequestError, match="has no response parameters"):
            harness.infer(X)
