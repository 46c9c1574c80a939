"""A stateful tp.Model (``sequence = tp.Sequence(...)``) served by the real tritonserver 24.10
and run by ModelHarness: the same requests (values, correlation ids, START/END flags) get the
same answers, for the direct and oldest strategies, numeric and string ids, interleaved
sequences, concurrent sequences the oldest strategy gathers into one execute(), and a sequence
left open past its idle timeout, then started again.

The model's configuration is the one ``tritonpy config`` writes from the declaration.
"""

from __future__ import annotations

import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple, Union

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from tritonpy import TritonRequestError
from tritonpy.client import SequenceControl, request_error, stream_infer
from tritonpy.config._declarations import sync_config
from tritonpy.server import TritonServer
from tritonpy.testing import ModelHarness

pytestmark = pytest.mark.integration

START, END = 1, 2
#: (value, correlation id, flags) of each request, in the order they are sent
Step = Tuple[int, Union[int, str], int]
#: (SUM, EVICTED) of a response, or (error code, message)
Answer = Tuple[Any, Any]

SOURCE = textwrap.dedent(
    """\
    import numpy as np
    import tritonpy as tp


    class RunningSum(tp.Model):
        inputs = {"VALUE": tp.Tensor("INT32", [1])}
        outputs = {"SUM": tp.Tensor("INT32", [1]), "EVICTED": tp.Tensor("INT32", [1])}
        max_batch_size = 8
        sequence = tp.Sequence(DECLARATION)

        def setup(self):
            self.evicted = 0  # sequences this instance evicted after their idle timeout

        def start_sequence(self, sequence):
            return {"sum": 0}

        def infer(self, VALUE, sequence):
            sequence.state["sum"] += int(VALUE.sum())
            return {
                "SUM": np.array([[sequence.state["sum"]]], np.int32),
                "EVICTED": np.array([[self.evicted]], np.int32),
            }

        def end_sequence(self, sequence):
            self.evicted += sequence.evicted


    TritonPythonModel = RunningSum
    """
)
STREAM = textwrap.dedent(
    """\
    import numpy as np
    import tritonpy as tp


    class StreamSum(tp.Model):
        inputs = {"VALUE": tp.Tensor("INT32", [1])}
        outputs = {"SUM": tp.Tensor("INT32", [1])}
        # without max_candidate_sequences, max_batch_size 0 gives the instance one sequence
        # slot: 24.10 lets a second sequence take it, and the first one's next request is
        # refused (measured)
        sequence = tp.Sequence(
            strategy="oldest", idle_timeout_s=60, preserve_ordering=True, max_candidate_sequences=4
        )

        def start_sequence(self, sequence):
            return [0]

        def infer(self, VALUE, sequence):
            for _ in range(2):
                sequence.state[0] += int(VALUE[0])
                yield {"SUM": np.array([sequence.state[0]], np.int32)}


    TritonPythonModel = StreamSum
    """
)
COUNTDOWN = textwrap.dedent(
    """\
    import numpy as np
    import tritonpy as tp


    class Countdown(tp.Model):
        inputs = {"IN": tp.Tensor("INT32", [1])}
        outputs = {"OUT": tp.Tensor("INT32", [1])}
        sequence = tp.Sequence(iterative=True)

        def infer(self, IN, sequence):
            for left in range(int(IN[0]) - 1, -1, -1):
                yield {"OUT": np.array([left], np.int32)}


    TritonPythonModel = Countdown
    """
)
MODELS = {
    "tp_seq_direct": SOURCE.replace("DECLARATION", 'strategy="direct", idle_timeout_s=60'),
    "tp_seq_oldest": SOURCE.replace(
        "DECLARATION", 'strategy="oldest", idle_timeout_s=60, max_candidate_sequences=16'
    ),
    "tp_seq_idle": SOURCE.replace("DECLARATION", 'strategy="direct", idle_timeout_s=1'),
    "tp_seq_stream": STREAM,
    "tp_countdown": COUNTDOWN,
}


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("tp_sequences") / "repo"
    for name, source in MODELS.items():
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "1" / "model.py").write_text(source)
        (repo / name / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n')
        sync_config(repo / name)  # sequence_batching from the declaration
    return repo


@pytest.fixture(scope="module")
def server(triton_server_factory: Callable[..., TritonServer], repository: Path) -> TritonServer:
    return triton_server_factory(repository)


def _input(value: int) -> Any:
    tensor = grpcclient.InferInput("VALUE", [1, 1], "INT32")
    tensor.set_data_from_numpy(np.array([[value]], np.int32))
    return tensor


def _served(client: Any, model: str, step: Step) -> Answer:
    value, corrid, flags = step
    try:
        result = client.infer(
            model,
            [_input(value)],
            sequence_id=corrid,
            sequence_start=bool(flags & START),
            sequence_end=bool(flags & END),
        )
    except InferenceServerException as exc:
        error = request_error(exc)
        return (error.code, error.message)
    return (int(result.as_numpy("SUM")[0][0]), int(result.as_numpy("EVICTED")[0][0]))


def _harnessed(harness: ModelHarness, step: Step) -> Answer:
    value, corrid, flags = step
    try:
        outputs = harness.infer(
            {"VALUE": np.array([[value]], np.int32)}, correlation_id=corrid, flags=flags
        )
    except TritonRequestError as exc:
        return (exc.code, exc.message)
    return (int(outputs["SUM"][0][0]), int(outputs["EVICTED"][0][0]))


def _agree(harness: Answer, server: Answer) -> bool:
    """Equal answers; two refusals agree on their code (the server refuses a request of an
    unknown sequence itself, the model's own message words the same rule)."""
    if isinstance(harness[0], str) and isinstance(server[0], str):
        return harness[0] == server[0] == "INVALID_ARG"
    return harness == server


CASES: List[Tuple[str, str, List[Union[Step, float]]]] = [
    (
        "interleaved-direct",
        "tp_seq_direct",
        [(1, 5, START), (10, 6, START), (2, 5, 0), (20, 6, 0), (3, 5, END), (30, 6, END)],
    ),
    (
        "string-ids-oldest",
        "tp_seq_oldest",
        [(1, "a", START), (10, "b", START), (2, "a", 0), (20, "b", END), (3, "a", END)],
    ),
    ("one-request-sequences", "tp_seq_oldest", [(7, 9, START | END), (8, 9, START | END)]),
    ("no-start", "tp_seq_direct", [(1, 41, 0)]),
    ("after-end", "tp_seq_oldest", [(1, 42, START), (2, 42, END), (3, 42, 0)]),
    # 2.0: seconds of silence, past the 1 s idle timeout
    ("idle-timeout", "tp_seq_idle", [(1, 9, START), 2.0, (2, 9, 0), (5, 9, START), (6, 9, END)]),
]


@pytest.mark.parametrize(("case", "model", "steps"), CASES, ids=[c[0] for c in CASES])
def test_the_harness_answers_as_the_server(
    server: TritonServer, repository: Path, case: str, model: str, steps: List[Any]
) -> None:
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    served: List[Answer] = []
    harnessed: List[Answer] = []
    try:
        with ModelHarness(repository / model) as harness:
            for step in steps:
                if isinstance(step, float):
                    time.sleep(step)  # the server's idle time
                    harness.clock.advance(step)  # the harness's
                    continue
                served.append(_served(client, model, step))
                harnessed.append(_harnessed(harness, step))
    finally:
        client.close()
    assert len(served) == len(harnessed)
    for got, want in zip(harnessed, served):
        assert _agree(got, want), (case, harnessed, served)
    if case == "interleaved-direct":
        assert [s for s, _ in served] == [1, 10, 3, 30, 6, 60]
    if case == "idle-timeout":
        assert served[1][0] == "INVALID_ARG" and "START" in served[1][1]
        assert served[2:] == [(5, 1), (11, 1)]  # a fresh sum; the instance evicted 9 once


def test_concurrent_sequences_of_the_oldest_strategy(
    server: TritonServer, repository: Path
) -> None:
    """Eight sequences sent at once, step after step: the oldest strategy gathers several
    into one execute(); each keeps its own sum, as the harness computes them in one call."""
    ids: List[Union[int, str]] = [*range(100, 104), *(f"s{i}" for i in range(4))]
    steps = 4
    expected = {corrid: 0 for corrid in ids}
    served: Dict[Union[int, str], List[int]] = {corrid: [] for corrid in ids}
    clients = [grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") for _ in ids]
    pool = ThreadPoolExecutor(len(ids))
    with ModelHarness(repository / "tp_seq_oldest") as harness:
        for index in range(steps):
            flags = START if index == 0 else END if index == steps - 1 else 0
            values = [len(str(corrid)) * (index + 1) for corrid in ids]
            futures = [
                pool.submit(_served, client, "tp_seq_oldest", (v, corrid, flags))
                for client, v, corrid in zip(clients, values, ids)
            ]
            batch = harness.infer_requests(
                [{"VALUE": np.array([[v]], np.int32)} for v in values],
                correlation_ids=ids,
                flags=[flags] * len(ids),
            )
            for corrid, v, future, result in zip(ids, values, futures, batch):
                expected[corrid] += v
                answer = future.result()
                served[corrid].append(answer[0])
                assert not isinstance(result, TritonRequestError), result
                assert int(result["SUM"][0][0]) == answer[0] == expected[corrid]
    pool.shutdown()
    for client in clients:
        client.close()
    assert all(len(sums) == steps for sums in served.values())


def _harness_stream(harness: ModelHarness, step: Step) -> List[Any]:
    """One request of a streaming sequence model under the harness: the SUM of each part."""
    value, corrid, flags = step
    parts = harness.infer_stream(
        {"VALUE": np.array([value], np.int32)}, correlation_id=corrid, flags=flags
    )
    return [int(part["SUM"][0]) for part in parts]


def test_a_streaming_sequence_model(server: TritonServer, repository: Path) -> None:
    """Decoupled and stateful (oldest, preserve_ordering): two parts a request, each adding
    VALUE to the sequence's sum, on the server as in the harness."""
    url = f"127.0.0.1:{server.grpc_port}"
    steps: List[Step] = [(1, "a", START), (10, 7, START), (2, "a", END), (20, 7, END)]
    served = []
    for value, corrid, flags in steps:
        control = SequenceControl(corrid, start=bool(flags & START), end=bool(flags & END))
        result = stream_infer(
            url, "tp_seq_stream", {"VALUE": np.array([value], np.int32)}, sequence=control
        )
        assert result.error is None, result.error
        served.append([int(r["SUM"][0]) for r in result.responses])
    with ModelHarness(repository / "tp_seq_stream") as harness:
        harnessed = [_harness_stream(harness, step) for step in steps]
    assert served == harnessed == [[1, 2], [10, 20], [4, 6], [40, 60]]


def test_an_iterative_sequence_counts_down(server: TritonServer, repository: Path) -> None:
    """iterative=True: one step per execute(), the request rescheduled between the steps
    (Triton's qa/python_models/iterative_sequence, declared)."""
    url = f"127.0.0.1:{server.grpc_port}"
    result = stream_infer(url, "tp_countdown", {"IN": np.array([3], np.int32)})
    assert result.error is None, result.error
    with ModelHarness(repository / "tp_countdown") as harness:
        parts = harness.infer_stream({"IN": np.array([3], np.int32)})
    served = [r["OUT"].tolist() for r in result.responses]
    assert served == [p["OUT"].tolist() for p in parts] == [[2], [1], [0]]
