"""Model.call / call_async / call_stream (BLS) under the harness, and the BLS targets the
harness accepts (tritonpy.testing._targets)."""

from __future__ import annotations

import asyncio
import gc
import shutil
from pathlib import Path
from typing import Any, Dict

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime._calls import CallError, error_code_name
from tritonpy._runtime.errors import TritonRequestError
from tritonpy.testing import ModelHarness, fake_pb_utils
from tritonpy.testing._repository import RepositoryHarness
from tritonpy.testing._targets import RawTarget

pb = fake_pb_utils
EXAMPLES = Path(__file__).parent / "nvidia_examples"


class Scale(tp.Model):
    """The target: doubles X; a negative X is the client's mistake."""

    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1]), "N": tp.Tensor("INT32", [1])}

    def infer(self, X):
        if (X < 0).any():
            raise tp.InputError(f"input 'X': expected values >= 0, got {X.min()}")
        return {"Y": X * 2, "N": np.array([X.size], np.int32)}


class Shout(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"LOUD": tp.Text()}

    def infer(self, TEXT):
        return {"LOUD": TEXT.upper() + "!"}


class Counter:
    """A decoupled pb_utils target: N responses 0..N-1; a negative N ends with an error."""

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            n = int(pb.get_input_tensor_by_name(request, "N").as_numpy()[0])
            for i in range(abs(n)):
                sender.send(pb.InferenceResponse([pb.Tensor("I", np.array([i], np.int32))]))
            if n < 0:
                sender.send(pb.InferenceResponse(error=pb.TritonError("stopped early")))
            sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


COUNTER_CONFIG = {
    "model_transaction_policy": {"decoupled": True},
    "input": [{"name": "N", "data_type": "TYPE_INT32", "dims": [1]}],
    "output": [{"name": "I", "data_type": "TYPE_INT32", "dims": [1]}],
}


class Caller(tp.Model):
    """Runs whatever call the test puts in ``plan`` (a function of the model)."""

    inputs = {"X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1])}
    plan: Any = None

    def infer(self, X):
        return {"Y": type(self).plan(self, X)}


@pytest.fixture
def scale():
    with ModelHarness(Scale, name="scale") as harness:
        yield harness


def caller(plan: Any, **targets: Any) -> ModelHarness:
    cls = type("Caller", (Caller,), {"plan": staticmethod(plan)})
    harness = ModelHarness(cls, name="caller")
    for name, target in targets.items():
        harness.register_bls_model(name, target)
    return harness


def x(*values: float) -> Dict[str, np.ndarray]:
    return {"X": np.array(values, np.float32)}


# -- call -------------------------------------------------------------------------------------


def test_call_sends_numpy_and_decodes_outputs(scale):
    seen = {}

    def plan(model, X):
        seen.update(model.call("scale", {"X": X}))
        return seen["Y"]

    with caller(plan, scale=scale) as h:
        assert h.infer(x(1, 2.5))["Y"].tolist() == [2.0, 5.0]
    assert seen["N"].dtype == np.int32 and seen["N"].tolist() == [2]


def test_call_learns_the_data_type_of_python_numbers(scale):
    def plan(model, X):
        return model.call("scale", {"X": [1, 2, 3]}, outputs=["Y"])["Y"]

    with caller(plan, scale=scale) as h:
        assert h.infer(x(0))["Y"].tolist() == [2.0, 4.0, 6.0]
        # learned once: the next call goes through at the first try
        assert h.model._ModelCalls__caller.learned == {("scale", "X"): "FP32"}
        assert h.infer(x(0))["Y"].tolist() == [2.0, 4.0, 6.0]


def test_call_refuses_values_the_expected_type_cannot_hold():
    with ModelHarness(EXAMPLES / "add_sub") as add_sub:

        def plan(model, X):
            model.call("add_sub", {"INPUT0": [1, 2, 3, 4], "INPUT1": [0.5, 0, 0, 0]})
            return X

        with caller(plan, add_sub=add_sub) as h:
            h.infer(x(1))  # FP32 inputs: ints and floats fit
            assert h.model._ModelCalls__caller.learned[("add_sub", "INPUT0")] == "FP32"

    class Ints(tp.Model):
        inputs = {"K": tp.Tensor("INT32", [-1])}
        outputs = {"K2": tp.Tensor("INT32", [-1])}

        def infer(self, K):
            return {"K2": K}

    with ModelHarness(Ints, name="ints") as ints:

        def bad(model, X):
            model.call("ints", {"K": [1.5, 2]})
            return X

        with caller(bad, ints=ints) as h, pytest.raises(TritonRequestError) as info:
            h.infer(x(1))
    assert info.value.code == "INTERNAL"
    assert (
        "call to model 'ints', input 'K': the model expects INT32 (int32), got values "
        "[1.5, 2.0] it cannot hold exactly; pass a numpy array of dtype int32" in info.value.message
    )


def test_call_text_and_scalars():
    with ModelHarness(Shout, name="shout") as shout:

        def plan(model, X):
            loud = model.call("shout", {"TEXT": "hi"})["LOUD"]
            also = model.call("shout", {"TEXT": [b"yo"]})["LOUD"]
            assert loud.dtype == object and also.dtype == object
            return np.array([len(loud[0]), len(also[0])], np.float32)

        with caller(plan, shout=shout) as h:
            assert h.infer(x(0))["Y"].tolist() == [3.0, 3.0]


def test_call_raises_the_targets_error_as_24_10_reports_it(scale):
    caught = {}

    def plan(model, X):
        try:
            model.call("scale", {"X": X})
        except TritonRequestError as exc:
            caught["error"] = exc
        return X

    with caller(plan, scale=scale) as h:
        h.infer(x(-1))
    # 24.10 hands the target's message to the caller with code INTERNAL (measured)
    assert (caught["error"].code, caught["error"].message) == (
        "INTERNAL",
        "input 'X': expected values >= 0, got -1.0",
    )


def test_call_server_side_refusals_read_like_the_server(scale):
    caught = {}

    def plan(model, X):
        for key, inputs, outputs in (
            ("dtype", {"X": X.astype(np.float64)}, None),
            ("output", {"X": X}, ["NOPE"]),
        ):
            try:
                model.call("scale", inputs, outputs=outputs)
            except TritonRequestError as exc:
                caught[key] = exc.message
        return X

    with caller(plan, scale=scale) as h:
        h.infer(x(1))
    assert caught["dtype"] == (
        "Model scale - Error when running inference: [request id: <id_unknown>] inference "
        "input 'X' data-type is 'FP64', but model 'scale' expects 'FP32'"
    )
    assert caught["output"] == (
        "Model scale - Error when running inference: unexpected inference output 'NOPE' for "
        "model 'scale'"
    )


def test_error_code_names():
    assert error_code_name(pb.TritonError.INVALID_ARG) == "INVALID_ARG"
    assert error_code_name(7) == "CANCELLED"
    assert error_code_name(99) == "UNKNOWN"


# -- call_async -------------------------------------------------------------------------------


def test_call_async_gathers_several_calls(scale):
    with caller(lambda model, X: X, scale=scale) as h:

        async def both():
            return await asyncio.gather(
                h.model.call_async("scale", x(1)),
                h.model.call_async("scale", {"X": [3]}),
            )

        first, second = asyncio.run(both())
    assert first["Y"].tolist() == [2.0]
    assert second["Y"].tolist() == [6.0]


def test_call_async_raises_the_targets_error(scale):
    with caller(lambda model, X: X, scale=scale) as h:
        with pytest.raises(TritonRequestError, match="expected values >= 0"):
            asyncio.run(h.model.call_async("scale", x(-2)))


# -- call_stream ------------------------------------------------------------------------------


@pytest.fixture
def counter():
    with ModelHarness(Counter, name="counter", config=COUNTER_CONFIG) as harness:
        yield harness


def test_call_stream_iterates_a_decoupled_target(counter):
    def plan(model, X):
        parts = list(model.call_stream("counter", {"N": [int(X[0])]}))
        return np.array([p["I"][0] for p in parts], np.float32)

    with caller(plan, counter=counter) as h:
        assert h.infer(x(3))["Y"].tolist() == [0.0, 1.0, 2.0]
        # 24.10: an error the target sends after some parts does not reach the caller
        assert h.infer(x(-2))["Y"].tolist() == [0.0, 1.0]
        assert h.model._ModelCalls__caller.learned == {("counter", "N"): "INT32"}


def test_call_stream_async(counter):
    with caller(lambda model, X: X, counter=counter) as h:

        async def parts():
            return [p["I"].tolist() async for p in h.model.call_stream_async("counter", {"N": [2]})]

        assert asyncio.run(parts()) == [[0], [1]]


def test_call_stream_raises_a_refusal(counter):
    with caller(lambda model, X: X, counter=counter) as h:
        with pytest.raises(
            TritonRequestError, match="expected 1 inputs but got 2 inputs for model 'counter'"
        ):
            list(h.model.call_stream("counter", {"N": [1], "Z": [1]}))


# -- targets ----------------------------------------------------------------------------------


def test_a_plain_callable_on_numpy_is_a_target():
    def halve(inputs):
        if inputs["X"][0] == 0:
            raise tp.InputError("input 'X': zero")
        return {"Y": inputs["X"] / 2, "NAME": ["half"]}

    with caller(lambda model, X: model.call("halve", {"X": X})["Y"], halve=halve) as h:
        assert h.infer(x(4))["Y"].tolist() == [2.0]
        with pytest.raises(TritonRequestError, match="input 'X': zero"):
            h.infer(x(0))


def test_a_model_class_is_a_target_closed_with_its_caller():
    closed = []

    class Tracked(Scale):
        def teardown(self):
            closed.append(True)

    h = caller(lambda model, X: model.call("tracked", {"X": X})["Y"], tracked=Tracked)
    assert h.infer(x(2))["Y"].tolist() == [4.0]
    h.close()
    gc.collect()
    assert closed == [True]


def test_a_model_directory_is_a_target():
    plan = lambda model, X: model.call("add_sub", {"INPUT0": [1, 2, 3, 4], "INPUT1": [1] * 4})[  # noqa: E731
        "OUTPUT0"
    ]
    with caller(plan, add_sub=EXAMPLES / "add_sub") as h:
        assert h.infer(x(0))["Y"].tolist() == [2.0, 3.0, 4.0, 5.0]


def test_raw_target_sees_the_pb_utils_request():
    def raw(request):
        assert request.model_version() if hasattr(request, "model_version") else True
        return pb.InferenceResponse([pb.Tensor("Y", np.array([7], np.float32))])

    with caller(lambda model, X: model.call("raw", {"X": X})["Y"], raw=RawTarget(raw)) as h:
        assert h.infer(x(0))["Y"].tolist() == [7.0]


def test_unknown_target_kind_is_refused():
    with caller(lambda model, X: X) as h, pytest.raises(TypeError, match="a BLS target must"):
        h.register_bls_model("nope", 42)


def test_call_error_names_the_fix():
    assert issubclass(CallError, tp.TritonPyError)


def test_call_async_in_an_async_infer(scale):
    class Gather(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [-1])}
        outputs = {"Y": tp.Tensor("FP32", [-1])}

        async def infer(self, X):
            first, second = await asyncio.gather(
                self.call_async("scale", {"X": X}), self.call_async("scale", {"X": X + 1})
            )
            return {"Y": first["Y"] + second["Y"]}

    with ModelHarness(Gather, targets={"scale": scale}) as h:
        assert h.infer(x(1, 2))["Y"].tolist() == [6.0, 10.0]
        with pytest.raises(TritonRequestError, match="expected values >= 0"):
            h.infer(x(-5))


# -- RepositoryHarness -------------------------------------------------------------------------

BLS_MODELS = Path(__file__).parents[1] / "integration" / "bls_models"


def test_repository_harness_serves_every_model_as_a_target():
    with RepositoryHarness(BLS_MODELS) as repo:
        assert "cf_bls_router" in repo.models and "cf_target_count" in repo.models
        out = repo.infer("cf_bls_router", {"X": np.array([1, -5], np.float32)})
        assert out["ROUTE"].tolist() == [b"cf_target_negate"]
        assert out["Y"].tolist() == [-1.0, 5.0]
        # loaded lazily: only what the call needed
        assert sorted(repo._loaded) == ["cf_bls_router", "cf_target_negate"]
        parts = repo.infer_stream("cf_target_count", {"N": np.array([2], np.int32)})
        assert [p["I"].tolist() for p in parts] == [[0], [1]]
        with pytest.raises(tp.TritonPyError, match="model 'nope' is not in repository"):
            repo.harness("nope")
    assert not pb.is_model_ready("cf_target_scale")


def test_repository_harness_runs_an_ensemble_as_a_target(tmp_path):
    for name in ("cf_target_scale", "cf_target_negate"):
        shutil.copytree(BLS_MODELS / name, tmp_path / name)
    (tmp_path / "twice").mkdir()
    (tmp_path / "twice" / "config.pbtxt").write_text(
        """name: "twice"
platform: "ensemble"
input [ { name: "A" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "B" data_type: TYPE_FP32 dims: [ -1 ] } ]
ensemble_scheduling { step [
  { model_name: "cf_target_scale" model_version: -1
    input_map { key: "X" value: "A" } output_map { key: "Y" value: "mid" } },
  { model_name: "cf_target_negate" model_version: -1
    input_map { key: "X" value: "mid" } output_map { key: "Y" value: "B" } }
] }
"""
    )

    class UsesEnsemble(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [-1])}
        outputs = {"Y": tp.Tensor("FP32", [-1])}

        def infer(self, X):
            return {"Y": self.call("twice", {"A": X})["B"]}

    with RepositoryHarness(tmp_path) as repo, ModelHarness(UsesEnsemble) as h:
        assert repo.models == ["cf_target_negate", "cf_target_scale", "twice"]
        assert h.infer(x(1, 2))["Y"].tolist() == [-2.0, -4.0]


class ErrorFlaggedFinal:
    """A plain pb_utils decoupled target that ends its stream with an error flagged FINAL."""

    def execute(self, requests):
        import triton_python_backend_utils as pb_utils

        for request in requests:
            sender = request.get_response_sender()
            sender.send(
                pb_utils.InferenceResponse(error=pb_utils.TritonError("no more words")),
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
            )
        return None


DECOUPLED_TEXT_CONFIG = {
    "input": [{"name": "TEXT", "data_type": "TYPE_STRING", "dims": [1]}],
    "output": [{"name": "WORD", "data_type": "TYPE_STRING", "dims": [1]}],
    "model_transaction_policy": {"decoupled": True},
}


def test_a_stream_ending_with_an_error_flagged_final_is_refused_instead_of_hanging():
    """24.10 (measured): a BLS caller of a decoupled target that sends its error response
    with the FINAL flag waits forever; the harness names the rule instead."""
    with ModelHarness(ErrorFlaggedFinal, config=DECOUPLED_TEXT_CONFIG, name="words") as target:
        with RepositoryHarness(BLS_MODELS) as repo:
            relay = repo.harness("cf_bls_relay")
            relay.register_bls_model("cf_target_words", target)
            text = {"TEXT": np.array([b"one two"], object)}
            with pytest.raises(TritonRequestError) as info:
                relay.infer_stream(text)
    assert "ended its stream with an error response carrying the FINAL flag" in str(info.value)
    assert "waits forever" in str(info.value)


def test_a_tritonpy_stream_error_ends_a_bls_callers_stream():
    """A tritonpy generator sends its error, then a flags-only FINAL: the BLS caller's stream
    ends after the parts sent (24.10 drops the error response on the BLS path)."""
    with RepositoryHarness(BLS_MODELS) as repo:
        text = {"TEXT": np.array([b"one bad two"], object)}
        parts = repo.infer_stream("cf_bls_relay", text)
    assert [part["WORD"].tolist() for part in parts] == [[b"ONE"]]


def test_numpy_scalars_keep_their_dtype(scale):
    def plan(model, X):
        return model.call("scale", {"X": np.float32(1.5)})["Y"]

    with caller(plan, scale=scale) as h:
        assert h.infer(x(0))["Y"].tolist() == [3.0]
        assert h.model._ModelCalls__caller.learned == {}  # sent as FP32 at once: nothing to learn
