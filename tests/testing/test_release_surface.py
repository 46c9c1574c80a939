"""The harness's target release (issue 31 item 3): each release's pb_utils surface, its name
rules and its readiness answer, as the release's python_backend sources give them (24.10's
behaviours are also the real server's: tests/integration/test_conformance_release.py)."""

from __future__ import annotations

import asyncio
import time
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, List

import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy._tooling.release_facts import ReleaseOutsideTableWarning
from tritonpy.testing import (
    HarnessError,
    ModelHarness,
    ModelLoadError,
    RawTarget,
    Readiness,
    ReleaseSurfaceWarning,
    RepositoryHarness,
)
from tritonpy.testing import fake_pb_utils as pb

pytest_plugins = ["pytester"]

IO: Dict[str, Any] = {
    "input": [{"name": "X", "data_type": "TYPE_INT32", "dims": [1]}],
    "output": [{"name": "TEXT", "data_type": "TYPE_STRING", "dims": [-1]}],
}
X = {"X": np.array([1], np.int32)}


def attempt(fn: Any) -> str:
    try:
        return "ok: " + repr(fn())
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def texts(*values: str) -> pb.InferenceResponse:
    return pb.InferenceResponse([pb.Tensor("TEXT", np.array([v.encode() for v in values], object))])


class Probe:
    """Tries the APIs some releases lack and reports what happened, as the conformance model."""

    def execute(self, requests: List[Any]) -> List[Any]:
        tensor = pb.Tensor("T", np.array([1], np.int32))
        return [
            texts(
                attempt(lambda: pb.InferenceResponse(output_tensors=[tensor], parameters={"a": 1})),
                attempt(lambda: hasattr(pb.InferenceResponse([]), "parameters")),
                attempt(lambda: pb.InferenceResponse([]).parameters()),
            )
            for _ in requests
        ]


def probe(release: str) -> List[str]:
    with ModelHarness(Probe, config=IO, release=release) as harness:
        return [t.decode() for t in harness.infer(X)["TEXT"]]


def test_default_release_is_the_bundled_24_10_without_response_parameters() -> None:
    with ModelHarness(Probe, config=IO) as harness:
        assert harness.release == "24.10"
    made, has, called = probe("24.10")
    assert made.startswith(
        "TypeError: __init__(): incompatible constructor arguments. The following argument "
        "types are supported:\n    1. c_python_backend_utils.InferenceResponse(output_tensors: "
        "List[c_python_backend_utils.Tensor] = [], error: c_python_backend_utils.TritonError "
        "= None)\n\nInvoked with: kwargs: output_tensors=[<c_python_backend_utils.Tensor "
        "object at 0x"
    )
    assert made.endswith(">], parameters={'a': 1}")
    assert has == "ok: False"
    assert called == (
        "AttributeError: 'c_python_backend_utils.InferenceResponse' object has no attribute "
        "'parameters'"
    )
    assert probe("25.01")[1] == "ok: False"


def test_25_02_takes_response_parameters_and_the_client_receives_them() -> None:
    made, has, called = probe("25.02")
    assert made.startswith("ok: InferenceResponse(")
    assert (has, called) == ("ok: True", "ok: '{}'")

    class Tagger:
        def execute(self, requests: List[Any]) -> List[Any]:
            params = {"language": "en", "n": 2, "final": True}
            response = pb.InferenceResponse(output_tensors=[], parameters=params)
            assert response.parameters() == '{"language": "en", "n": 2, "final": true}'
            return [response for _ in requests]

    config = {"input": IO["input"], "output": []}
    with ModelHarness(Tagger, config=config, release="25.02") as harness:
        outputs, params = harness.infer_with_parameters(X)
        assert (outputs, params) == ({}, {"language": "en", "n": 2, "final": True})


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ('{"a": 1}', "Expect N8pybind114dictE, got <class 'str'>"),
        ({1: "a"}, "Expect parameters keys to have type str, found type <class 'int'>"),
        ({"a": 1.5}, "Expect parameters values to have type bool/int/str, found type <class "),
    ],
)
def test_25_02_refuses_what_its_stub_refuses(parameters: Any, message: str) -> None:
    class Bad:
        def execute(self, requests: List[Any]) -> List[Any]:
            return [pb.InferenceResponse(parameters=parameters) for _ in requests]

    with ModelHarness(Bad, config=IO, release="26.07") as harness:
        with pytest.raises(TritonRequestError) as caught:
            harness.infer(X)
    assert "TritonModelException" in caught.value.message or message in caught.value.message
    assert message in caught.value.message


def test_bls_responses_carry_the_callees_parameters_from_25_02() -> None:
    class Callee:
        def execute(self, requests: List[Any]) -> List[Any]:
            out = pb.Tensor("TEXT", np.array([b"x"], object))
            return [pb.InferenceResponse([out], parameters={"from": "callee"}) for _ in requests]

    class Caller:
        def execute(self, requests: List[Any]) -> List[Any]:
            request = pb.InferenceRequest(
                model_name="callee",
                inputs=[pb.Tensor("X", np.array([1], np.int32))],
                requested_output_names=["TEXT"],
            )
            answer = request.exec()
            return [texts(answer.parameters()) for _ in requests]

    with ModelHarness(Callee, config=IO, name="callee", release="25.02") as callee:
        with ModelHarness(Caller, config=IO, targets={"callee": callee}, release="25.02") as h:
            assert h.infer(X)["TEXT"].tolist() == [b'{"from": "callee"}']


class Streamer:
    def execute(self, requests: List[Any]) -> None:
        for request in requests:
            sender = request.get_response_sender()
            for i in range(2):
                sender.send(pb.InferenceResponse([pb.Tensor("Y", np.array([i], np.int32))]))
            sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


STREAM = {
    "model_transaction_policy": {"decoupled": True},
    "input": IO["input"],
    "output": [{"name": "Y", "data_type": "TYPE_INT32", "dims": [1]}],
}


class Canceller:
    """Reads one response of a decoupled BLS call, cancels, and reports what it saw."""

    def execute(self, requests: List[Any]) -> List[Any]:
        request = pb.InferenceRequest(
            model_name="stream",
            inputs=[pb.Tensor("X", np.array([1], np.int32))],
            requested_output_names=["Y"],
        )
        iterator = request.exec(decoupled=True)
        first = next(iterator)
        cancelled = attempt(lambda: iterator.cancel())
        rest = list(iterator)
        seen = [str(first.output_tensors()[0].as_numpy().tolist()), cancelled, str(len(rest))]
        return [texts(*seen, attempt(request.is_cancelled)) for _ in requests]


def test_response_iterator_cancel_exists_from_25_04() -> None:
    with ModelHarness(Streamer, config=STREAM, name="stream", release="25.03") as stream:
        with ModelHarness(Canceller, config=IO, targets={"stream": stream}, release="25.03") as h:
            first, cancelled, rest, _ = [t.decode() for t in h.infer(X)["TEXT"]]
    assert (first, rest) == ("[0]", "2")
    assert cancelled == (
        "AttributeError: 'c_python_backend_utils.ResponseIterator' object has no attribute 'cancel'"
    )
    with ModelHarness(Streamer, config=STREAM, name="stream", release="25.04") as stream:
        with ModelHarness(Canceller, config=IO, targets={"stream": stream}, release="25.04") as h:
            # the harness's callee has sent everything when exec() returns: the responses
            # already produced still arrive, the callee's request is marked cancelled
            assert [t.decode() for t in h.infer(X)["TEXT"]] == ["[0]", "ok: None", "2", "ok: True"]


def test_cancel_reaches_a_lazy_callee_and_does_nothing_once_finished() -> None:
    seen: List[bool] = []

    def lazy(request: Any) -> Iterator[Any]:
        for i in range(5):
            seen.append(request.is_cancelled())
            if request.is_cancelled():
                break
            yield pb.InferenceResponse([pb.Tensor("Y", np.array([i], np.int32))])
        yield pb.InferenceResponse()

    class Reader:
        def execute(self, requests: List[Any]) -> List[Any]:
            call = pb.InferenceRequest(model_name="lazy", inputs=[], requested_output_names=[])
            iterator = call.exec(decoupled=True)
            next(iterator)
            iterator.cancel()
            left = len(list(iterator))
            iterator.cancel()  # finished: nothing happens
            return [texts(str(left)) for _ in requests]

    targets = {"lazy": RawTarget(lazy)}
    with ModelHarness(Reader, config=IO, targets=targets, release="26.07") as harness:
        assert harness.infer(X)["TEXT"].tolist() == [b"1"]  # the final empty response
    assert seen == [False, True]


class Warming:
    def initialize(self, args: Dict[str, str]) -> None:
        self.answer: Any = False
        self.calls = 0

    def is_ready(self) -> Any:
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        if self.answer == "slow":
            time.sleep(0.5)
            return True
        return self.answer

    def execute(self, requests: List[Any]) -> List[Any]:
        return [texts("x") for _ in requests]


def test_is_ready_is_called_from_26_03_as_the_server_calls_it() -> None:
    with ModelHarness(Warming, config=IO, name="warm", release="26.03") as harness:
        model = harness.model
        assert harness.readiness() == Readiness(
            False, "UNAVAILABLE", "Model 'warm_0' is not ready (user-defined check failed)."
        )
        model.answer = True
        assert harness.is_ready() and bool(harness.readiness())
        model.answer = ValueError("cache cold")
        assert harness.readiness() == Readiness(False, "INTERNAL", "ValueError: cache cold")
        model.answer = 1
        assert harness.readiness() == Readiness(
            False, "INTERNAL", "is_ready() must return a boolean value"
        )
        model.answer = "slow"
        harness.ready_timeout = 0.05
        assert harness.readiness() == Readiness(
            False, "UNAVAILABLE", "Timed out waiting for user-defined is_ready() response"
        )
        time.sleep(0.6)  # the late is_ready() finishes (it runs on, as in the stub)
        assert model.calls == 6


def test_an_async_is_ready_is_awaited() -> None:
    class AsyncReady(Warming):
        async def is_ready(self) -> Any:  # type: ignore[override]
            await asyncio.sleep(0)
            return True

    with ModelHarness(AsyncReady, config=IO, release="26.07") as harness:
        assert harness.is_ready()


def test_before_26_03_is_ready_is_never_called_and_the_harness_says_so() -> None:
    with pytest.warns(ReleaseSurfaceWarning, match=r"defines is_ready\(\), which Triton 26.02"):
        harness = ModelHarness(Warming, config=IO, release="26.02")
    with harness:
        assert harness.is_ready()
        assert harness.model.calls == 0


@pytest.mark.parametrize("release", ["25.08", "26.07"])
def test_names_with_shell_characters_are_refused_from_25_08(release: str) -> None:
    with pytest.raises(ModelLoadError) as caught:
        ModelHarness(Probe, config=IO, name="probe~1", release=release)
    assert caught.value.failures == {"probe~1": "Invalid stub name: contains invalid characters"}
    assert f"Triton {release} refuses model names" in str(caught.value)
    assert "src/stub_launcher.cc" in str(caught.value)
    group = dict(IO, instance_group=[{"name": "g(1)", "kind": "KIND_CPU"}])
    with pytest.raises(ModelLoadError, match=r"instance group name 'g\(1\)'"):
        ModelHarness(Probe, config=group, name="probe", release=release)


def test_before_25_08_only_the_characters_that_break_bash_fail() -> None:
    with pytest.warns(ReleaseSurfaceWarning, match="25.08 and later refuse"):
        ModelHarness(Probe, config=IO, name="probe#1", release="25.07").close()
    with pytest.raises(ModelLoadError, match=r"unquoted into a bash -c command line"):
        ModelHarness(Probe, config=IO, name="probe$1")


def test_release_outside_the_table_and_bad_release_text() -> None:
    with pytest.warns(ReleaseOutsideTableWarning):
        harness = ModelHarness(Probe, config=IO, release="27.01")
    with harness:
        assert harness.release == "27.01"
        assert harness.release_facts.assumed_from == "26.07"
        assert harness.infer(X)["TEXT"][1] == b"ok: True"
    with pytest.raises(HarnessError, match=r"release='24\.13'.*expected YY\.MM"):
        ModelHarness(Probe, config=IO, release="24.13")


def test_outside_a_harness_the_fake_shows_the_newest_open_one_then_24_10() -> None:
    assert not hasattr(pb.InferenceResponse(), "parameters")
    with ModelHarness(Probe, config=IO, release="26.07"):
        # a decoupled model's own threads send after execute() returned
        assert pb.InferenceResponse(parameters={"a": 1}).parameters() == '{"a": 1}'
    assert not hasattr(pb.InferenceResponse(), "parameters")


def test_repository_harness_passes_its_release_on(tmp_path: Path) -> None:
    model = tmp_path / "repo" / "probe"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text(
        'name: "probe"\nbackend: "python"\nmax_batch_size: 0\n'
        'input [{ name: "X", data_type: TYPE_INT32, dims: [1] }]\n'
        'output [{ name: "TEXT", data_type: TYPE_STRING, dims: [-1] }]\n'
    )
    (model / "1" / "model.py").write_text(
        "import numpy as np\nimport triton_python_backend_utils as pb_utils\n\n\n"
        "class TritonPythonModel:\n"
        "    def execute(self, requests):\n"
        "        has = hasattr(pb_utils.InferenceResponse(), 'parameters')\n"
        "        text = pb_utils.Tensor('TEXT', np.array([str(has).encode()], object))\n"
        "        return [pb_utils.InferenceResponse([text]) for _ in requests]\n"
    )
    for release, answer in (("24.10", b"False"), ("25.02", b"True")):
        with RepositoryHarness(tmp_path / "repo", release=release) as repo:
            assert repo.infer("probe", X)["TEXT"].tolist() == [answer]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RepositoryHarness(tmp_path / "repo").close()


def test_is_ready_runs_as_model_code_with_pb_utils_importable() -> None:
    class UsesPbUtils(Warming):
        def is_ready(self) -> Any:
            import triton_python_backend_utils as pb_utils  # the fake, while model code runs

            return hasattr(pb_utils.InferenceResponse, "parameters")

    with ModelHarness(UsesPbUtils, config=IO, release="26.03") as harness:
        assert harness.is_ready()


def test_the_plugins_option_sets_the_release_of_triton_model(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_release(triton_model):
            class M:
                def execute(self, requests):
                    return []
            assert triton_model(M).release == "26.07"
            assert triton_model(M, release="25.02").release == "25.02"
    """)
    pytester.runpytest("-p", "no:cacheprovider", "--triton-release", "26.07").assert_outcomes(
        passed=1
    )


def test_a_decoupled_callees_parameters_reach_the_bls_caller() -> None:
    class TaggedStream:
        def execute(self, requests: List[Any]) -> None:
            for request in requests:
                sender = request.get_response_sender()
                y = pb.Tensor("Y", np.array([1], np.int32))
                sender.send(pb.InferenceResponse([y], parameters={"part": 1}))
                sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    class Reader:
        def execute(self, requests: List[Any]) -> List[Any]:
            call = pb.InferenceRequest(
                model_name="stream", inputs=list(requests[0].inputs()), requested_output_names=["Y"]
            )
            return [texts(*(r.parameters() for r in call.exec(decoupled=True))) for _ in requests]

    with ModelHarness(TaggedStream, config=STREAM, name="stream", release="25.04") as stream:
        with ModelHarness(Reader, config=IO, targets={"stream": stream}, release="25.04") as h:
            assert h.infer(X)["TEXT"].tolist() == [b'{"part": 1}', b"{}"]
