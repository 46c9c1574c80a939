"""Conformance: every case runs through ModelHarness (the fake pb_utils) and through a real
tritonserver over HTTP and gRPC; outputs, dtypes, shapes, error codes and messages must agree.

Where they disagree, the fake is what gets fixed. The requests of a case are sent to the server
concurrently, so the real dynamic batcher merges them as it sees fit; the harness sends them in
one ``execute()``. Outputs that describe how requests were batched are compared only where that
cannot differ.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import cv2
import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy.client import InferClient
from tritonpy.server import TritonServer
from tritonpy.testing import ModelHarness

pytestmark = pytest.mark.integration

MODELS = Path(__file__).parent / "conformance_models"
PROTOCOLS = ("http", "grpc")

Inputs = Dict[str, np.ndarray]
Result = Union[Dict[str, np.ndarray], TritonRequestError]


def column(*values: bytes) -> np.ndarray:
    array = np.empty((len(values), 1), dtype=object)
    array[:, 0] = list(values)
    return array


def png(image_rgb: np.ndarray) -> bytes:
    return bytes(cv2.imencode(".png", cv2.cvtColor(image_rgb, cv2.COLOR_RGB2BGR))[1].tobytes())


@dataclass
class Case:
    id: str
    model: str
    requests: List[Inputs]
    #: assertions on the harness results (the server's are compared with them)
    expect: Callable[[List[Result]], None]
    outputs: Optional[List[str]] = None
    #: outputs whose values depend on how the server batched the requests
    batch_dependent: Sequence[str] = field(default_factory=tuple)


def ok(result: Result) -> Dict[str, np.ndarray]:
    assert not isinstance(result, TritonRequestError), f"unexpected error: {result}"
    return result


def error(result: Result, code: str, message: str) -> None:
    assert isinstance(result, TritonRequestError), f"expected an error, got {result}"
    assert (result.code, result.message) == (code, message)


# -- the cases ----------------------------------------------------------------------------------


def tensor_requests() -> List[Inputs]:
    def request(rows: int, start: int) -> Inputs:
        return {
            "F32": np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) + start,
            "F16": np.array([[0.5, -65504.0]] * rows, np.float16),
            "FLAGS": np.array([[True, False]] * rows),
            "I64": np.full((rows, 1), 2**40 + start, np.int64),
        }

    return [request(1, 0), request(3, 100), request(2, 200)]


def expect_tensor(results: List[Result]) -> None:
    first, second, _ = (ok(r) for r in results)
    assert first["F32_X2"].dtype == np.float32
    assert second["F32_X2"].tolist()[0] == [200.0, 202.0, 204.0]
    assert first["F16_NEG"].dtype == np.float16
    assert first["F16_NEG"].tolist() == [[-0.5, 65504.0]]
    assert first["FLAGS_NOT"].tolist() == [[False, True]]
    assert first["I64_SUM"].dtype == np.int32  # int64 -> INT32, wrapping as numpy does
    assert second["ROWS"].shape == (3, 1)


STRINGS = [b"", b"plain", "ünïcødé ✓".encode(), b"nul\x00inside", b"trailing\x00\x00"]


def strings_request(texts: Sequence[bytes], raw: Sequence[bytes]) -> Inputs:
    docs = [json.dumps({"i": i, "nested": [1, None, "x"]}).encode() for i in range(len(texts))]
    return {"TEXT": column(*texts), "RAW": column(*raw), "DOC": column(*docs)}


def expect_strings(results: List[Result]) -> None:
    first, second = ok(results[0]), ok(results[1])
    assert first["UPPER"].ravel().tolist() == [t.decode().upper().encode() for t in STRINGS]
    assert first["RAW_REVERSED"].ravel().tolist() == [s[::-1] for s in STRINGS]
    assert first["RAW_LENGTH"].ravel().tolist() == [len(s) for s in STRINGS]
    assert json.loads(first["SUMMARY"][2, 0]) == {
        "text": "ünïcødé ✓",
        "chars": 9,
        "doc": {"i": 2, "nested": [1, None, "x"]},
    }
    assert second["RAW_REVERSED"].ravel().tolist() == [b"\xfe\xff", b"\x00"]
    error(
        results[2],
        "INVALID_ARG",
        "input 'TEXT', row 1: expected UTF-8 text, got 2 bytes b'\\xc3(' ('utf-8' codec "
        "can't decode byte 0xc3 in position 0: invalid continuation byte)",
    )


def expect_words(results: List[Result]) -> None:
    result = ok(results[0])
    assert result["SORTED"].tolist() == [b"apple", b"kiwi", b"pear"]
    assert result["COUNT"].tolist() == [3]


def expect_text_array(results: List[Result]) -> None:
    first = ok(results[0])
    text = "ünïcødé ✓"
    assert first["FORMS"].tolist() == [
        [s.encode() for s in (text, text.upper(), text[::-1])],
        [b"plain", b"PLAIN", b"nialp"],
    ]
    assert first["RAW"].tolist() == [[text.encode(), text.upper().encode()], [b"plain", b"PLAIN"]]
    assert first["UPPER"].tolist() == [[text.upper().encode()], [b"PLAIN"]]
    error(
        results[1],
        "INTERNAL",
        "output 'UPPER', element 0: cannot encode str as UTF-8 text: 'utf-8' codec can't "
        "encode character '\\udcff' in position 4: surrogates not allowed",
    )
    assert ok(results[2])["FORMS"].tolist() == [[b"x", b"X", b"x"]]


def expect_json_out(results: List[Result]) -> None:
    first = ok(results[0])
    assert [json.loads(b) for b in first["STATS"].ravel()] == [
        {"chars": 8, "words": ["ünï", "code"], "half": 4.5},
        {"chars": 1, "words": ["x"], "half": 0.5},
    ]
    assert first["UPPER"].tolist() == [["ÜNÏ CODE".encode()], [b"X"]]
    error(
        results[1],
        "INTERNAL",
        "output 'STATS', element 0: cannot encode dict as a UTF-8 JSON document: Object of "
        "type set is not JSON serializable",
    )
    assert ok(results[2])["UPPER"].tolist() == [[b"OK"]]


IMAGE = np.zeros((6, 4, 3), np.uint8)
IMAGE[..., 0] = 250  # red
IMAGE[:, :2, 2] = 40  # blue in the left half


def expect_image(results: List[Result]) -> None:
    result = ok(results[0])
    assert result["SHAPE"].tolist() == [[6, 4, 3], [6, 4, 3]]
    np.testing.assert_allclose(result["MEAN_RGB"][0], [250, 0, 20])
    flipped = cv2.imdecode(np.frombuffer(result["FLIPPED"][0, 0], np.uint8), cv2.IMREAD_COLOR)
    np.testing.assert_array_equal(cv2.cvtColor(flipped, cv2.COLOR_BGR2RGB), IMAGE[:, ::-1])
    error(
        results[1],
        "INVALID_ARG",
        "input 'IMAGE', row 0: expected an encoded image (PNG, JPEG, ...), got 12 bytes "
        "b'not an image' (OpenCV could not decode it)",
    )
    assert ok(results[2])["SHAPE"].tolist() == [[6, 4, 3]]


def expect_torch(results: List[Result]) -> None:
    result = ok(results[0])
    assert result["Y"].tolist() == [[0.0, 13.0], [-1.0, 5.0]]
    assert result["Y"].dtype == np.float32
    np.testing.assert_allclose(result["NORM"].ravel(), [np.sqrt(30), np.sqrt(5)], rtol=1e-6)


def expect_ragged(results: List[Result]) -> None:
    lengths = [ok(r)["LENGTH"].ravel().tolist() for r in results]
    assert lengths == [[3], [1, 1], [5]]
    assert ok(results[1])["TOTAL"].ravel().tolist() == [7, 8]
    assert ok(results[0])["SHIFTED"].tolist() == [[2, 3, 4]]
    assert ok(results[1])["SHIFTED"].tolist() == [[8], [9]]
    assert ok(results[2])["SHIFTED"].shape == (1, 5)


def expect_grouped(results: List[Result]) -> None:
    assert ok(results[0])["REVERSED"].tolist() == [[3.0, 2.0, 1.0]]
    assert ok(results[1])["REVERSED"].tolist() == [[5.0, 4.0], [7.0, 6.0]]
    assert [ok(r)["WIDTH"].ravel().tolist() for r in results] == [[3], [2, 2], [3]]


def expect_optional(results: List[Result]) -> None:
    assert ok(results[0])["Y"].tolist() == [[2.0, 4.0]]
    assert ok(results[1])["Y"].tolist() == [[10.0, 20.0], [30.0, 40.0]]
    assert ok(results[1])["NOTE_OUT"].ravel().tolist() == [b"(none)", b"(none)"]
    assert ok(results[2])["NOTE_OUT"].ravel().tolist() == [b"a note"]


def expect_picky(results: List[Result]) -> None:
    assert ok(results[0])["LENGTH"].tolist() == [[2]]
    error(
        results[1],
        "INVALID_ARG",
        "input 'TEXT': expected anything but 'poison', got 'poison'",
    )
    error(results[2], "INTERNAL", "ZeroDivisionError while running infer(): division by zero")
    error(
        results[3],
        "INTERNAL",
        "output 'LENGTH': expected 1 rows (one per input row), got 2; infer() must return one "
        "row per input row",
    )
    assert ok(results[4])["LENGTH"].tolist() == [[5], [1]]


def expect_unbatched(results: List[Result]) -> None:
    assert ok(results[0])["TRACE"].tolist() == [5.0]
    assert ok(results[0])["GREETING"].tolist() == [b"hello, Ada"]
    error(
        results[1],
        "INVALID_ARG",
        "input 'MATRIX': expected a square matrix, got shape [1, 2]",
    )


def plain_request(mode: int) -> Inputs:
    return {"X": np.array([1.5, -2.0, 4.0], np.float32), "MODE": np.array([mode], np.int32)}


def expect_plain(results: List[Result]) -> None:
    arrays, converted = ok(results[0]), ok(results[1])
    assert arrays["Y"].tolist() == [3.0, -4.0, 8.0]
    assert arrays["EVEN"].tolist() == [0, 2, 4]
    assert arrays["COUNT"].tolist() == [3]
    assert converted["Y"].dtype == np.float32 and converted["Y"].tolist() == [0.75, -1.0, 2.0]
    assert converted["EVEN"].dtype == np.int64 and converted["COUNT"].tolist() == [3]
    error(
        results[2],
        "INTERNAL",
        "Plain.infer() did not return output 'COUNT'; it returned ['EVEN', 'Y']",
    )
    error(
        results[3],
        "INTERNAL",
        "output 'Y': expected shape [-1], got [1, 3]; reshape the value returned by infer()",
    )


def expect_plain_some_outputs(results: List[Result]) -> None:
    for result in results:  # COUNT was not asked for: leaving it out is fine
        assert sorted(ok(result)) == ["EVEN", "Y"]
        assert ok(result)["Y"].tolist() == [3.0, -4.0, 8.0]


def scores_request(*best: int) -> Inputs:
    """One row per id in ``best``, each scoring that id highest and the next id second."""
    scores = np.zeros((len(best), 5), np.float32)
    for row, index in enumerate(best):
        scores[row, index] = 2.0
        scores[row, (index + 1) % 5] = 1.0
    return {"SCORES": scores}


def expect_labels(results: List[Result]) -> None:
    first = ok(results[0])
    assert first["IDS"].tolist() == [[0, 1], [4, 0]]
    assert first["NAMES"].tolist() == [[b"zero", "ünï".encode()], [b"four", b"zero"]]
    assert first["FIRST"].tolist() == [[b"id 0"], [b"id 4"]]
    error(
        results[1],
        "INTERNAL",
        "output 'NAMES', element 0: cannot encode str as UTF-8 text: 'utf-8' codec can't "
        "encode character '\\udcff' in position 4: surrogates not allowed",
    )
    assert ok(results[2])["NAMES"].tolist() == [["ünï".encode(), b"two"]] * 2


def expect_labels_some_outputs(results: List[Result]) -> None:
    for result in results:  # asked for NAMES only: the stub dropped IDS and FIRST
        assert sorted(ok(result)) == ["NAMES"]
    assert ok(results[0])["NAMES"].tolist() == [["ünï".encode(), b"two"]]


def expect_missing_input(results: List[Result]) -> None:
    assert isinstance(results[0], TritonRequestError)
    assert results[0].code == "INVALID_ARG"
    assert "F16" in results[0].message


CASES = [
    Case(
        "tensor-dtypes-and-casts",
        "cf_tensor",
        tensor_requests(),
        expect_tensor,
        batch_dependent=("ROWS",),
    ),
    Case(
        "tensor-missing-required-input",
        "cf_tensor",
        [{k: v for k, v in tensor_requests()[0].items() if k != "F16"}],
        expect_missing_input,
    ),
    Case(
        "strings-edge-cases",
        "cf_strings",
        [
            strings_request(STRINGS, STRINGS),
            strings_request([b"a", b"b"], [b"\xff\xfe", b"\x00"]),
            strings_request([b"fine", b"\xc3\x28"], [b"x", b"y"]),
        ],
        expect_strings,
    ),
    Case(
        "text-list-unbatched",
        "cf_words",
        [{"WORDS": np.array([b"pear", b"apple", b"kiwi"], dtype=object)}],
        expect_words,
    ),
    Case(
        "text-arrays-passed-to-the-stub",
        "cf_text_array",
        [
            {"TEXT": column("ünïcødé ✓".encode(), b"plain")},
            {"TEXT": column(b"bad \xff")},
            {"TEXT": column(b"x")},
        ],
        expect_text_array,
    ),
    Case(
        "json-out-direct",
        "cf_json_out",
        [
            {"TEXT": column("ünï code".encode(), b"x"), "RAW": column(b"raw bytes", b"y")},
            {"TEXT": column(b"set"), "RAW": column(b"")},
            {"TEXT": column(b"ok"), "RAW": column(b"\xff")},
        ],
        expect_json_out,
    ),
    Case(
        "image-in-and-out",
        "cf_image",
        [
            {"IMAGE": column(png(IMAGE), png(IMAGE))},
            {"IMAGE": column(b"not an image")},
            {"IMAGE": column(png(IMAGE))},
        ],
        expect_image,
    ),
    Case(
        "torch-dlpack",
        "cf_torch",
        [{"X": np.array([[1, 2, 3, 4], [0, 0, 1, 2]], np.float32)}],
        expect_torch,
    ),
    Case(
        "ragged-padded",
        "cf_ragged",
        [
            {"TOKENS": np.array([[1, 2, 3]], np.int64)},
            {"TOKENS": np.array([[7], [8]], np.int64)},
            {"TOKENS": np.arange(5, dtype=np.int64).reshape(1, 5)},
        ],
        expect_ragged,
    ),
    Case(
        "ragged-grouped",
        "cf_grouped",
        [
            {"SEQ": np.array([[1, 2, 3]], np.float32)},
            {"SEQ": np.array([[4, 5], [6, 7]], np.float32)},
            {"SEQ": np.array([[0, 0, 0]], np.float32)},
        ],
        expect_grouped,
    ),
    Case(
        "optional-inputs",
        "cf_optional",
        [
            {"X": np.array([[1, 2]], np.float32), "FACTOR": np.array([[2]], np.float32)},
            {"X": np.array([[1, 2], [3, 4]], np.float32)},
            {"X": np.array([[1, 1]], np.float32), "NOTE": column(b"a note")},
        ],
        expect_optional,
    ),
    Case(
        "error-isolation",
        "cf_picky",
        [
            {"TEXT": column(b"ok")},
            {"TEXT": column(b"poison")},
            {"TEXT": column(b"crash")},
            {"TEXT": column(b"wrong-rows")},
            {"TEXT": column(b"fine!", b"x")},
        ],
        expect_picky,
    ),
    Case(
        "plain-tensors",
        "cf_plain",
        [plain_request(mode) for mode in range(4)],
        expect_plain,
    ),
    Case(
        "plain-tensors-some-outputs",
        "cf_plain",
        [plain_request(0), plain_request(2)],
        expect_plain_some_outputs,
        outputs=["Y", "EVEN"],
    ),
    Case(
        "plain-tensor-in-text-out",
        "cf_labels",
        [scores_request(0, 4), scores_request(3), scores_request(1, 1)],
        expect_labels,
    ),
    Case(
        "plain-tensor-in-text-out-some-outputs",
        "cf_labels",
        [scores_request(1), scores_request(4, 0)],
        expect_labels_some_outputs,
        outputs=["NAMES"],
    ),
    Case(
        "unbatched",
        "cf_unbatched",
        [
            {"MATRIX": np.array([[2.0, 1.0], [0.0, 3.0]]), "NAME": np.array([b"Ada"], object)},
            {"MATRIX": np.array([[2.0, 1.0]]), "NAME": np.array([b"Bob"], object)},
        ],
        expect_unbatched,
    ),
]

CASE_IDS = [case.id for case in CASES]


# -- running a case ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(triton_server_factory: Callable[..., TritonServer]) -> TritonServer:
    return triton_server_factory(MODELS, startup_timeout=180)


def run_harness(case: Case) -> List[Result]:
    with ModelHarness(MODELS / case.model) as harness:
        return harness.infer_requests(case.requests, requested_outputs=case.outputs)


def run_server(server: TritonServer, protocol: str, case: Case) -> List[Result]:
    url = server.http_url if protocol == "http" else server.grpc_url
    results: List[Optional[Result]] = [None] * len(case.requests)

    def send(index: int) -> None:
        client = InferClient(url, protocol)
        try:
            outputs = client.infer(case.model, case.requests[index], case.outputs)
            results[index] = {o.name: o.array for o in outputs}
        except TritonRequestError as exc:
            results[index] = exc
        finally:
            client.close()

    # concurrent, so that Triton's dynamic batcher merges what it can
    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(case.requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(r is not None for r in results), "a request got no answer"
    return [r for r in results if r is not None]


def normalized(message: str) -> str:
    """The server lists input names in hash-table order (``['I64','FLAGS','F32']``): sort
    such lists so that only their content is compared."""
    return re.sub(
        r"\[('[^']*'(?:,'[^']*')*)\]",
        lambda m: "[" + ",".join(sorted(m.group(1).split(","))) + "]",
        message,
    )


def assert_same(expected: List[Result], actual: List[Result], case: Case) -> None:
    assert len(expected) == len(actual)
    for index, (want, got) in enumerate(zip(expected, actual)):
        where = f"{case.id}, request {index}"
        if isinstance(want, TritonRequestError) or isinstance(got, TritonRequestError):
            assert isinstance(want, TritonRequestError), f"{where}: server failed: {got}"
            assert isinstance(got, TritonRequestError), f"{where}: server answered {got}"
            assert (got.code, normalized(got.message)) == (want.code, normalized(want.message)), (
                where
            )
            continue
        assert sorted(got) == sorted(want), where
        for name in want:
            assert got[name].dtype == want[name].dtype, f"{where}, {name}"
            assert got[name].shape == want[name].shape, f"{where}, {name}"
            if name in case.batch_dependent:
                continue
            if want[name].dtype == np.object_:
                assert got[name].tolist() == want[name].tolist(), f"{where}, {name}"
            else:
                np.testing.assert_array_equal(got[name], want[name], err_msg=f"{where}, {name}")


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_harness_gives_the_expected_results(case: Case) -> None:
    case.expect(run_harness(case))


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_real_server_agrees_with_the_harness(
    server: TritonServer, protocol: str, case: Case
) -> None:
    assert_same(run_harness(case), run_server(server, protocol, case), case)


def test_real_dynamic_batcher_merges_concurrent_requests(server: TritonServer) -> None:
    """ROWS reports the rows infer() saw: above a request's own rows, requests were merged."""
    request = tensor_requests()[0]
    case = Case("merge", "cf_tensor", [request] * 16, lambda results: None)
    for _ in range(5):
        results = run_server(server, "grpc", case)
        seen = [int(ok(r)["ROWS"][0, 0]) for r in results]
        if max(seen) > 1:
            break
    assert max(seen) > 1, f"the server never merged 16 concurrent requests: {seen}"


def test_the_plain_path_relies_on_the_servers_input_checks_only_there(
    server: TritonServer,
) -> None:
    """tritonserver checks every request's inputs against the configuration before the model
    sees it, so the plain-tensor path skips those checks there (COUNT 1) and keeps them under
    the harness (COUNT 0); an input of another shape is refused alike by both, before
    infer() (tritonpy's client refuses another data type itself)."""
    wrong = {"X": np.array([1.5], np.float32), "MODE": np.array([0, 0], np.int32)}
    case = Case("server-checks", "cf_plain", [plain_request(4), wrong], lambda results: None)
    local, served = run_harness(case), run_server(server, "grpc", case)
    assert ok(local[0])["COUNT"].tolist() == [0]
    assert ok(served[0])["COUNT"].tolist() == [1]
    assert ok(local[0])["Y"].tolist() == ok(served[0])["Y"].tolist() == [3.0, -4.0, 8.0]
    refused = "unexpected shape for input 'MODE' for model 'cf_plain'. Expected [1], got [2]"
    for result in (local[1], served[1]):
        assert isinstance(result, TritonRequestError) and result.code == "INVALID_ARG"
        assert refused in result.message


@pytest.mark.parametrize("model", sorted(p.name for p in MODELS.iterdir() if p.is_dir()))
def test_auto_completed_config_matches_the_server(server: TritonServer, model: str) -> None:
    client = InferClient(server.http_url, "http")
    try:
        served = client.model_config(model)
    finally:
        client.close()
    with ModelHarness(MODELS / model) as harness:
        local = harness.config

    def tensors(config: Dict[str, Any], key: str) -> List[Any]:
        return [
            (t["name"], t["data_type"], [int(d) for d in t["dims"]], bool(t.get("optional")))
            for t in config.get(key, [])
        ]

    assert served["max_batch_size"] == local["max_batch_size"]
    assert ("dynamic_batching" in served) == ("dynamic_batching" in local)
    assert tensors(served, "input") == tensors(local, "input")
    assert tensors(served, "output") == tensors(local, "output")
