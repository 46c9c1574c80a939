"""The fake pb_utils and the harness on the plain pb_utils models of
tests/integration/plain_models (measured on tritonserver 24.10; the same models run on the real
server in tests/integration/test_conformance_plain.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest

from tritonpy._runtime.errors import TritonRequestError
from tritonpy.testing import ClientCancelledError, HarnessError, ModelBugError, ModelHarness
from tritonpy.testing import fake_pb_utils as pb
from tritonpy.testing._hash_order import server_input_order, string_hash

PLAIN = Path(__file__).parent.parent / "integration" / "plain_models"


def one(value: int) -> np.ndarray:
    return np.array([value], np.int32)


def test_instance_name_is_model_group_index_instance_index() -> None:
    with ModelHarness(PLAIN / "pl_instance") as h:
        assert h.infer({"X": np.ones(2, np.float32)})["NAME"].tolist() == [b"pl_instance_0_0"]
        assert h.config["instance_group"][0]["name"] == "pl_instance_0"
        with pytest.raises(TritonRequestError) as failed:
            h.infer({"X": -np.ones(2, np.float32)})
    assert failed.value.message.startswith(
        "Failed to process the request(s) for model 'pl_instance_0_0', message: ValueError: "
        "negative input\n\nAt:\n"
    )


def test_tensor_from_fixed_width_bytes() -> None:
    with ModelHarness(PLAIN / "pl_sbytes") as h:
        out = h.infer({"TEXT": [b"ab", b"c\x00d"]})
    assert out["OUT"].tolist() == [b"ab!", b"c\x00d!"]
    assert out["OUT"].dtype == np.object_
    assert out["KIND"].tolist() == [b"S:(2,):[b'ab!', b'c\\x00d!']"]
    assert pb.Tensor("T", np.array([b"x"], np.bytes_)).triton_dtype() == 13  # BYTES


@pytest.mark.parametrize("mode, value", [(0, 10), (1, 11), (2, 12), (3, 14), (4, 15)])
def test_non_decoupled_model_answering_through_the_sender(mode: int, value: int) -> None:
    with ModelHarness(PLAIN / "pl_sender") as h:
        assert h.infer({"MODE": one(mode)})["OUT"].tolist() == [value]


def test_sender_rules_and_their_messages() -> None:
    with ModelHarness(PLAIN / "pl_sender") as h:
        for mode in (2, 3, 4):
            h.infer({"MODE": one(mode)})
        status = h.infer({"MODE": one(9)})["STATUS"].tolist()
    more = b"TritonModelException: Unable to send response. Non-decoupled model cannot send more "
    assert status == [
        more + b"than one response.",
        b"TritonModelException: Inference Response object must be provided when the response "
        b"flags is set to zero.",
        more + b"than one response.",
        b"TritonModelException: Unable to send response. Response sender has been closed.",
    ]


def test_sender_refuses_unknown_flags_and_a_final_before_any_response() -> None:
    request = pb.InferenceRequest(model_name="m", inputs=[], requested_output_names=[])
    request.set_decoupled(False)
    sender = request.get_response_sender()
    with pytest.raises(pb.TritonModelException, match="Unsupported flag provided"):
        sender.send(pb.InferenceResponse([]), flags=2)
    with pytest.raises(pb.TritonModelException, match="cannot send complete final before"):
        sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


def test_decoupled_model_refuses_plain_infer_as_the_server_does() -> None:
    with ModelHarness(PLAIN / "pl_decoupled") as h, pytest.raises(TritonRequestError) as refused:
        h.infer({"COUNT": one(1), "MODE": one(0)})
    assert refused.value.code == "UNSUPPORTED"
    assert "doesn't support models with decoupled transaction policy" in refused.value.message


@pytest.mark.parametrize(
    "count, mode, expected", [(1, 0, [0]), (1, 1, [0]), (3, 1, [0, 1, 2]), (0, 4, [])]
)
def test_decoupled_streams(count: int, mode: int, expected: list) -> None:
    with ModelHarness(PLAIN / "pl_decoupled") as h:
        parts = h.infer_stream({"COUNT": one(count), "MODE": one(mode)})
    assert [p["OUT"].tolist() for p in parts] == [[v] for v in expected]


def test_decoupled_error_response_mid_stream() -> None:
    with ModelHarness(PLAIN / "pl_decoupled") as h, pytest.raises(TritonRequestError) as failed:
        h.infer_stream({"COUNT": one(2), "MODE": one(2)})
    assert (failed.value.code, failed.value.message) == ("INTERNAL", "stopped after 2")


def test_cancel_after_stops_the_stream() -> None:
    # mode 3 waits (up to 10 s) after each response until the request is cancelled
    with ModelHarness(PLAIN / "pl_decoupled") as h:
        parts = h.infer_stream({"COUNT": one(5), "MODE": one(3)}, cancel_after=1, errors="return")
        assert [p["OUT"].tolist() for p in parts[:-1]] == [[0]]
        # then the client's own cancellation, as tritonclient's callback after stop_stream
        assert isinstance(parts[-1], ClientCancelledError) and parts[-1].code == "CANCELLED"
        # a model that ignores the cancellation: the client still gets the first n only
        with pytest.raises(ClientCancelledError) as info:
            h.infer_stream({"COUNT": one(4), "MODE": one(1)}, cancel_after=2)
        assert [p["OUT"].tolist() for p in info.value.parts] == [[0], [1]]
        with pytest.raises(HarnessError, match="cancel_after=0"):
            h.infer_stream({"COUNT": one(1), "MODE": one(0)}, cancel_after=0)


def test_relative_and_absolute_sibling_imports() -> None:
    with ModelHarness(PLAIN / "pl_relative") as first, ModelHarness(PLAIN / "pl_relative") as two:
        out = first.infer({"X": [1, 2]})
        assert out["REL"].tolist() == [2, 4]
        assert out["ABS"].tolist() == [3, 6]
        assert out["MODULE"].tolist() == [b"model"]
        # each harness has its own package: the sibling module is not shared
        assert first.module is not None and two.module is not None
        assert first.module.__package__ != two.module.__package__


def test_targets_and_bls_to_an_unknown_model() -> None:
    decoupled = ModelHarness(PLAIN / "pl_decoupled")
    instance = ModelHarness(PLAIN / "pl_instance")
    targets = {"pl_decoupled": decoupled, "pl_instance": instance}
    with decoupled, instance, ModelHarness(PLAIN / "pl_bls", targets=targets) as h:

        def call(target: str, count: int, use_async: bool) -> tuple:
            out = h.infer(
                {"TARGET": [target.encode()], "COUNT": one(count), "ASYNC": np.array([use_async])}
            )
            return out["VALUES"].tolist(), out["ERROR"].tolist()[0]

        assert call("pl_decoupled", 3, False) == ([0, 1, 2], b"")
        assert call("pl_decoupled", 2, True) == ([0, 1], b"")
        assert call("pl_instance", 2, False) == ([1], b"")
        values, message = call("pl_instance", 3, True)
        assert values == []
        assert message.startswith(b"code 1: Failed to process the request(s) for model ")
        assert call("nope", 1, False) == (
            [],
            b"code 1: Model nope - Error when running inference: Failed for execute the "
            b"inference request. Model 'nope' is not ready.",
        )
    assert not pb.is_model_ready("pl_decoupled")  # unregistered on close


def test_async_exec_needs_a_running_loop() -> None:
    request = pb.InferenceRequest(model_name="x", inputs=[], requested_output_names=[])
    with pytest.raises(RuntimeError, match="no running event loop"):
        request.async_exec()

    async def inside() -> pb.InferenceResponse:
        answer: pb.InferenceResponse = await request.async_exec()
        return answer

    assert asyncio.run(inside()).has_error()


def test_server_input_order_is_libstdcxx_unordered_map_order() -> None:
    # reference values printed by a libstdc++ std::unordered_map<std::string, int> (g++ 12)
    assert string_hash("A") == 6919333181322027406
    assert server_input_order(["A", "B", "C"]) == ["B", "C", "A"]
    assert server_input_order(["C", "B", "A"]) == ["B", "A", "C"]
    assert server_input_order(["F32", "F16", "FLAGS", "I64"]) == ["FLAGS", "F16", "I64", "F32"]
    assert server_input_order(["INPUT0", "INPUT1"]) == ["INPUT1", "INPUT0"]
    names = [f"x{i}" for i in range(40)]  # past two rehashes (13, 29, 59 buckets)
    assert sorted(server_input_order(names)) == sorted(names)


def test_shape_error_names_the_input_the_server_names() -> None:
    wrong = {"A": np.ones(3, np.float32), "B": np.ones(2, np.float32), "C": np.ones(1, np.float32)}
    with ModelHarness(PLAIN / "pl_shapes") as h, pytest.raises(TritonRequestError) as failed:
        h.infer(wrong)
    assert failed.value.message == (
        "[request id: <id_unknown>] unexpected shape for input 'B' for model 'pl_shapes'. "
        "Expected [3], got [2]. "
    )


def test_rescheduled_requests_run_again_with_iterative_sequence_batching() -> None:
    with ModelHarness(PLAIN / "pl_reschedule") as h:
        assert h.infer({"KEY": one(1)})["RUNS"].tolist() == [3]
        both = h.infer_requests([{"KEY": one(2)}, {"KEY": one(3)}])
        assert [r["RUNS"].tolist() for r in both] == [[3], [3]]  # type: ignore[index]
        # one sequence slot (no batching): the second waits for the first's release, as in
        # the server's backlog; three rounds each
        assert h.execute_calls == 3 + 3 + 3


def test_rescheduling_without_iterative_sequence_names_the_rule() -> None:
    # the real server never answers such a request (measured: the client times out)
    with ModelHarness(PLAIN / "pl_reschedule_plain") as h:
        with pytest.raises(ModelBugError, match="iterative_sequence: true"):
            h.infer({"KEY": one(1)})


def test_surface_request_accessors() -> None:
    with ModelHarness(PLAIN / "pl_surface") as h:
        result = h.infer({"OP": [b"request"]})["RESULT"].tolist()
    assert result == [b"0", b"0", b"", b"False", b"False", b"{'RESULT'}", b"{}", b"0"]


def test_surface_model_loading_api() -> None:
    with ModelHarness(PLAIN / "pl_instance") as target:
        with ModelHarness(PLAIN / "pl_surface", targets={"pl_instance": target}) as h:
            result = h.infer({"OP": [b"models"]})["RESULT"].tolist()
    assert result == [
        b"True",
        b"True",
        b"False",
        b"False",
        b"None",
        b"False",
        b"None",
        b"True",
        b"None",
    ]


def test_loading_a_model_the_server_lacks_is_a_model_bug() -> None:
    with ModelHarness(PLAIN / "pl_surface") as h, pytest.raises(ModelBugError) as bug:
        h.infer({"OP": [b"load_missing"]})
    message = str(bug.value)
    assert "may abort instead, ending the whole server process" in message
    assert (
        "Failed to load model: Failed to process the request for model 'pl_surface_0_0', "
        "message: failed to load 'nope', failed to poll from model repository"
    ) in message


def test_surface_metrics_messages_and_lifetime() -> None:
    def ask(op: str) -> list:
        return h.infer({"OP": [op.encode()]})["RESULT"].tolist()

    with ModelHarness(PLAIN / "pl_surface") as h:
        assert ask("metrics") == [b"2.0", b"7.5"]  # the change of the counter
        assert ask("metrics") == [b"2.0", b"7.5"]
        # the model keeps its families: values persist from one call to the next
        (counts,) = pb._families["pl_surface_count"]._metrics.values()
        assert counts.value == 4.0
        buckets = ask("metric_buckets")
        names = ask("metric_names")
        deleted = ask("metric_deleted")
    where = b"Failed to process the request for model 'pl_surface_0_0', message: "
    assert buckets == [
        b"TritonModelException: Failed to create metric. Missing required buckets.",
        b"TritonModelException: Failed to create metric. Unexpected buckets found.",
    ]
    assert names == [
        b"TritonModelException: Error when creating MetricFamily: " + where + b"Family name "
        b"already exists with different type",
        b"TritonModelException: Error when creating MetricFamily: " + where + b"Invalid metric "
        b"name",
    ]
    assert deleted[0].endswith(
        b"should be deleted AFTER its corresponding 'Metric' objects have been deleted."
    )


@pytest.mark.parametrize(
    "op", ["refused_increment_counter", "refused_observe_gauge", "refused_value_histogram"]
)
def test_metric_calls_that_can_abort_the_server_are_model_bugs(op: str) -> None:
    # measured: tritonserver 24.10 sometimes ends itself (boost lock_exception) on these; a
    # model's `except Exception` cannot hide it under the harness either
    with ModelHarness(PLAIN / "pl_surface") as h, pytest.raises(ModelBugError) as bug:
        h.infer({"OP": [op.encode()]})
    assert "may abort instead, ending the whole server process" in str(bug.value)


def test_logger_records_the_models_line_as_the_server_log_shows_it() -> None:
    pb.clear_logs()
    with ModelHarness(PLAIN / "pl_surface") as h:
        h.infer({"OP": [b"logger"]})
    lines = [r.server_line() for r in pb.log_records]
    # measured on 24.10: 'I1201 03:33:54.536511 14798 model.py:42] "surface info"', ...
    assert lines[0].startswith("I model.py:") and lines[0].endswith('] "surface info"')
    assert [line[0] for line in lines] == ["I", "W", "E", "I", "I", "I"]  # VERBOSE shows as I
    assert pb.log_records[3].level == pb.LogLevel.VERBOSE


def test_bls_exec_without_decoupled_on_a_decoupled_target() -> None:
    targets = {"pl_decoupled": PLAIN / "pl_decoupled"}
    with ModelHarness(PLAIN / "pl_bls", targets=targets) as h:
        inputs = {
            "TARGET": [b"pl_decoupled"],
            "COUNT": one(2),
            "ASYNC": np.array([False]),
            "STREAM": np.array([False]),
        }
        out = h.infer(inputs)
    assert out["ERROR"].tolist() == [
        b"code 1: Model pl_decoupled - Error when running inference: Model pl_decoupled is "
        b"using the decoupled. The current BLS request call doesn't support models using the "
        b"decoupled transaction policy. Please use 'decoupled=True' argument to the 'exec' or "
        b"'async_exec' calls for decoupled models.'"
    ]


def test_stream_errors_returned_after_the_parts_sent_before() -> None:
    with ModelHarness(PLAIN / "pl_decoupled") as h:
        parts = h.infer_stream({"COUNT": one(2), "MODE": one(2)}, errors="return")
        with pytest.raises(HarnessError, match="errors='ignore'"):
            h.infer_stream({"COUNT": one(1), "MODE": one(0)}, errors="ignore")
    assert [p["OUT"].tolist() for p in parts[:2]] == [[0], [1]]
    assert isinstance(parts[2], TritonRequestError)
    assert (parts[2].code, parts[2].message) == ("INTERNAL", "stopped after 2")


def test_instance_name_without_an_instance_group_is_model_0() -> None:
    """Measured on 24.10: without instance_group in config.pbtxt Triton's group is named after
    the model (instance '<model>_0'); an explicit unnamed group is '<model>_<index>' (instance
    '<model>_0_0', the pl_instance case above)."""

    class Named:
        def initialize(self, args: Dict[str, str]) -> None:
            self.name = args["model_instance_name"]

        def execute(self, requests: List[Any]) -> List[Any]:
            return []

    with ModelHarness(Named, name="plain") as h:
        assert h.model.name == "plain_0"
    config = {"instance_group": [{"kind": "KIND_CPU", "count": 1}]}
    with ModelHarness(Named, name="grouped", config=config) as h:
        assert h.model.name == "grouped_0_0"
