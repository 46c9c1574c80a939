"""BLS requests as the real 24.10 stub builds and sends them (issue 33, part "bls"); each
behaviour was measured on the real server first (tests/integration/test_conformance_qa_bls.py
compares the two on renditions of Triton's QA BLS models)."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np
import pytest

from tritonpy.testing import ModelHarness, ModelLoadError
from tritonpy.testing import fake_pb_utils as pb

REFUSED = "BLS is only supported during the 'execute' function."
ONE = {"X": np.array([1], np.int32)}
IO = {
    "input": [{"name": "X", "data_type": "TYPE_INT32", "dims": [1]}],
    "output": [{"name": "P", "data_type": "TYPE_STRING", "dims": [1]}],
}
DECOUPLED = {**IO, "model_transaction_policy": {"decoupled": True}}


class EchoParameters:
    """A callee answering the raw text of its request.parameters()."""

    def execute(self, requests: List[Any]) -> List[Any]:
        return [
            pb.InferenceResponse([pb.Tensor("P", np.array([r.parameters().encode()], object))])
            for r in requests
        ]


def x() -> List[Any]:
    return [pb.Tensor("X", np.array([1], np.int32))]


def probe(build: Any) -> Dict[str, Any]:
    """What ``build()`` gives when called inside a model's execute (with the callee
    ``echo`` registered): its result, or the exception it raised."""
    seen: Dict[str, Any] = {}

    class Caller:
        def execute(self, requests: List[Any]) -> List[Any]:
            try:
                seen["result"] = build()
            except Exception as exc:  # the test inspects what the stub would raise
                seen["error"] = exc
            return [pb.InferenceResponse([pb.Tensor("P", np.array([b""], object))])]

    with ModelHarness(EchoParameters, config=IO, name="echo") as echo:
        with ModelHarness(Caller, config=IO, targets={"echo": echo}) as caller:
            caller.infer(ONE)
    return seen


def seen_by_callee(name: Any, parameters: Any, outputs: Any = ("P",)) -> str:
    response = pb.InferenceRequest(
        model_name=name, inputs=x(), requested_output_names=list(outputs), parameters=parameters
    ).exec()
    assert not response.has_error(), response.error().message()
    return str(pb.get_output_tensor_by_name(response, "P").as_numpy()[0].decode())


def test_bls_parameters_reach_the_callee_as_the_servers_json() -> None:
    got = probe(lambda: seen_by_callee("echo", {"z": 2, "a": "two", "m": False}))
    assert got["result"] == '{"z":2,"a":"two","m":false}'  # the server's compact JSON, in order
    assert probe(lambda: seen_by_callee("echo", None))["result"] == "{}"


def test_model_and_output_names_may_be_bytes() -> None:
    got = probe(lambda: seen_by_callee(b"echo", {"a": 1}, [b"P"]))
    assert got["result"] == '{"a":1}'


@pytest.mark.parametrize(
    ("case", "kwargs", "invoked"),
    [
        ("nothing", {}, ""),
        ("no model name", {"requested_output_names": ["P"]}, "requested_output_names=['P']"),
        ("no inputs", {"model_name": "echo", "requested_output_names": ["P"]}, "model_name="),
        ("no output names", {"model_name": "echo"}, "model_name='echo'"),
        ("None name", {"model_name": None, "requested_output_names": ["P"]}, "model_name=None"),
        ("int name", {"model_name": 7, "requested_output_names": ["P"]}, "model_name=7"),
    ],
)
def test_a_request_the_binding_does_not_take_raises_pybinds_type_error(
    case: str, kwargs: Dict[str, Any], invoked: str
) -> None:
    if case not in ("nothing", "no inputs"):
        kwargs = {**kwargs, "inputs": x()}
    error = probe(lambda: pb.InferenceRequest(**kwargs))["error"]
    assert type(error) is TypeError
    text = str(error)
    assert text.startswith(
        "__init__(): incompatible constructor arguments. The following argument types are "
        "supported:\n    1. c_python_backend_utils.InferenceRequest(request_id: str = '', "
        "correlation_id: object = 0, inputs: List[triton::backend::python::PbTensor], "
        "requested_output_names: List[str], model_name: str, model_version: int = -1, "
    )
    assert "parameters: object = None)\n\nInvoked with: " in text
    assert invoked in text.split("Invoked with: ", 1)[1]


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ('{"k": 1}', "Expect N8pybind114dictE, got <class 'str'>"),
        (
            {"k": 0.5},
            "Expect parameters values to have type bool/int/str, found type <class 'float'>",
        ),
        ({3: "v"}, "Expect parameters keys to have type str, found type <class 'int'>"),
    ],
)
def test_parameters_are_a_dict_of_str_to_bool_int_str(parameters: Any, message: str) -> None:
    def build() -> Any:
        return pb.InferenceRequest(
            model_name="echo", inputs=x(), requested_output_names=["P"], parameters=parameters
        )

    error = probe(build)["error"]
    assert isinstance(error, pb.TritonModelException) and str(error) == message


def test_a_request_built_outside_model_code_stands_for_the_servers() -> None:
    # a test handing execute() a request: missing arguments default, parameters may be JSON
    request = pb.InferenceRequest(inputs=x(), parameters='{"a":1}')
    assert (request.parameters(), request.requested_output_names()) == ('{"a":1}', set())


def test_the_trace_is_passed_on() -> None:
    # QA bls_simple passes trace=request.trace() on: the binding takes no None there
    got: Dict[str, Any] = {}

    class Tracer:
        def execute(self, requests: List[Any]) -> List[Any]:
            trace = requests[0].trace()
            got["context"] = trace.get_context()
            got["passed"] = pb.InferenceRequest(
                model_name="echo", inputs=x(), requested_output_names=["P"], trace=trace
            ).trace()
            got["same"] = got["passed"] is trace
            return [pb.InferenceResponse([pb.Tensor("P", np.array([b""], object))])]

    with ModelHarness(Tracer, config=IO) as harness:
        harness.infer(ONE)
    assert (got["context"], got["same"]) == (None, True)
    assert repr(got["passed"]).startswith("<c_python_backend_utils.InferenceTrace object at 0x")


class BlsInInitialize:
    def initialize(self, args: Dict[str, str]) -> None:
        pb.InferenceRequest(model_name="echo", inputs=x(), requested_output_names=["P"]).exec()

    def execute(self, requests: List[Any]) -> None:
        return None


def test_bls_in_initialize_fails_the_load_with_the_stubs_text() -> None:
    with ModelHarness(EchoParameters, config=IO, name="echo") as echo:
        with pytest.raises(ModelLoadError) as refused:
            ModelHarness(BlsInInitialize, config=IO, targets={"echo": echo})
    assert str(refused.value) == REFUSED
    assert isinstance(refused.value, pb.TritonModelException)  # what the model could catch
    assert "execute()" in refused.value.explanation  # type: ignore[attr-defined]


def test_bls_in_finalize_raises_the_stubs_exception() -> None:
    caught: List[BaseException] = []

    class BlsInFinalize:
        def execute(self, requests: List[Any]) -> List[Any]:
            return [pb.InferenceResponse([pb.Tensor("P", np.array([b""], object))])]

        def finalize(self) -> None:
            try:
                pb.InferenceRequest(
                    model_name="echo", inputs=x(), requested_output_names=["P"]
                ).exec()
            except pb.TritonModelException as exc:
                caught.append(exc)

    with ModelHarness(EchoParameters, config=IO, name="echo") as echo:
        ModelHarness(BlsInFinalize, config=IO, targets={"echo": echo}).close()
    assert [type(e) for e in caught] == [pb.TritonModelException]
    assert str(caught[0]) == REFUSED


class FinalData:
    """Decoupled: one data response that carries the FINAL flag (QA async_execute_decouple)."""

    def execute(self, requests: List[Any]) -> None:
        for request in requests:
            request.get_response_sender().send(
                pb.InferenceResponse([pb.Tensor("P", np.array([b"last"], object))]),
                flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
            )


class DataThenFinal:
    """Decoupled: one data response, then a flags-only FINAL."""

    def execute(self, requests: List[Any]) -> None:
        for request in requests:
            sender = request.get_response_sender()
            sender.send(pb.InferenceResponse([pb.Tensor("P", np.array([b"one"], object))]))
            sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


@pytest.mark.parametrize(
    ("callee", "expected"), [(FinalData, [[b"last"]]), (DataThenFinal, [[b"one"], []])]
)
@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_final_data_response_is_the_last_the_caller_reads(
    callee: type, expected: List[Any], asynchronous: bool
) -> None:
    def outputs(responses: Any) -> List[Any]:
        return [[t.as_numpy()[0] for t in r.output_tensors()] for r in responses]

    def build() -> Any:
        request = pb.InferenceRequest(model_name="stream", inputs=x(), requested_output_names=["P"])
        if not asynchronous:
            return outputs(request.exec(decoupled=True))
        import asyncio

        async def run() -> Any:
            return outputs(await request.async_exec(decoupled=True))

        return asyncio.run(run())

    with ModelHarness(callee, config=DECOUPLED, name="stream") as stream:
        got = {}

        class Caller:
            def execute(self, requests: List[Any]) -> List[Any]:
                got["outputs"] = build()
                return [pb.InferenceResponse([pb.Tensor("P", np.array([b""], object))])]

        with ModelHarness(Caller, config=IO, targets={"stream": stream}) as caller:
            caller.infer(ONE)
    assert got["outputs"] == expected


def test_an_async_models_tasks_build_requests_as_model_code() -> None:
    # QA async_execute_decouple_bls builds its BLS requests in tasks asyncio.gather runs:
    # their frames do not show execute(), yet the binding's rules apply there too
    errors: List[BaseException] = []

    class Gathering:
        async def _one(self, request: Any) -> Any:
            try:
                pb.InferenceRequest(model_name="echo", inputs=request.inputs())
            except TypeError as exc:
                errors.append(exc)
            return pb.InferenceResponse([pb.Tensor("P", np.array([b""], object))])

        async def execute(self, requests: List[Any]) -> List[Any]:
            import asyncio

            return list(await asyncio.gather(*(self._one(r) for r in requests)))

    with ModelHarness(Gathering, config=IO) as harness:
        harness.infer(ONE)
    assert len(errors) == 1 and "incompatible constructor arguments" in str(errors[0])


def test_a_failing_finalize_is_logged_and_the_model_unloads_as_on_the_server() -> None:
    # the stub logs what finalize() raised (INFO) and unloads the model all the same
    class BrokenFinalize:
        def execute(self, requests: List[Any]) -> List[Any]:
            return [pb.InferenceResponse([pb.Tensor("P", np.array([b""], object))])]

        def finalize(self) -> None:
            raise ValueError("the file handle is gone")

    harness = ModelHarness(BrokenFinalize, config=IO, name="broken")
    with pytest.warns(RuntimeWarning, match=r"finalize\(\) raised ValueError: the file handle"):
        harness.close()
    assert harness.closed and isinstance(harness.finalize_error, ValueError)
    assert pb.log_records[-1].message == "ValueError: the file handle is gone"
