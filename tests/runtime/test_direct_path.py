"""The direct path (tritonpy/_runtime/_engine/_direct.py) of plain-tensor models: a request alone,
or the requests of a merged call, of a model whose inputs are all plain ``tp.Tensor`` (and
outputs plain Tensors or text the stub encodes) answers exactly as the general path does,
whatever the requests hold and whatever ``infer`` returns (test_direct_codecs.py: torch
tensors and images).

The requests are built with the fake pb_utils and handed to ``execute()`` directly, so that
inputs the server would refuse (wrong data type, shape, names) reach the model too. An answer
is what the client gets: the outputs the request asked for (the stub drops the others from a
response, python_backend's ``PruneOutputTensors``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Type

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime._engine.engine import engine_of
from tritonpy.testing import ModelHarness
from tritonpy.testing import fake_pb_utils as pb

Returns = Callable[[np.ndarray, np.ndarray], Any]


def _model(batch: int, returns: Returns) -> Type[tp.Model]:
    class AddSub(tp.Model):
        inputs = {"A": tp.Tensor("FP32", [4]), "B": tp.Tensor("FP32", [-1])}
        outputs = {"SUM": tp.Tensor("FP32", [4]), "DIFF": tp.Tensor("FP32", [-1])}
        max_batch_size = batch
        check_cancellation = False

        def infer(self, A: np.ndarray, B: np.ndarray) -> Any:
            return returns(A, B)

    return AddSub


def _answer(response: Any, request: Any) -> Any:
    """What the client of ``request`` receives from ``response``."""
    if response.has_error():
        error = response.error()
        return ("error", int(error.code()), error.message())
    wanted = request.requested_output_names()  # (empty: all of them)
    arrays = {
        t.name(): t.as_numpy()
        for t in response.output_tensors()
        if not wanted or t.name() in wanted
    }
    return {name: (array.dtype.str, _wire(array.tolist())) for name, array in arrays.items()}


def _wire(value: Any) -> Any:
    """The client's view of a tensor's elements: the stub encodes ``str`` as UTF-8."""
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value.encode() if isinstance(value, str) else value


def _both(model: Type[tp.Model], requests: List[Any]) -> List[List[Any]]:
    """The answers of the plain path and of the general path to the same requests."""
    answers = []
    for plain in (True, False):
        with ModelHarness(model) as harness:
            assert engine_of(harness.model).direct_inputs is not None  # the model qualifies
            if not plain:
                engine_of(harness.model).direct_inputs = None  # execute() takes the general path
            # one request per execute(): a batched model merges several
            answers.append([_answer(harness.model.execute([r])[0], r) for r in requests])
    return answers


def _request(requested: Optional[List[str]] = None, **arrays: Any) -> Any:
    tensors = [pb.Tensor(name, np.asarray(value)) for name, value in arrays.items()]
    return pb.InferenceRequest(
        model_name="m", inputs=tensors, requested_output_names=requested or []
    )


F4 = np.arange(4, dtype=np.float32)
F3 = np.arange(3, dtype=np.float32)

REQUESTS: Dict[str, Any] = {
    "good": _request(A=F4, B=F4),
    "inputs-in-another-order": pb.InferenceRequest(
        model_name="m", inputs=[pb.Tensor("B", F4), pb.Tensor("A", F4)]
    ),
    "wrong-dtype": _request(A=F4.astype(np.float64), B=F4),
    "wrong-shape": _request(A=F3, B=F4),
    "wrong-rank-of-a-variable-input": _request(A=F4, B=F4.reshape(2, 2)),
    "missing-input": _request(A=F4),
    "unknown-input": _request(A=F4, C=F4),
    "repeated-input": pb.InferenceRequest(
        model_name="m", inputs=[pb.Tensor("A", F4), pb.Tensor("A", F4)]
    ),
    "one-output-asked-for": _request(["DIFF"], A=F4, B=F4),
}

RETURNS: Dict[str, Returns] = {
    "arrays": lambda a, b: {"SUM": a + b, "DIFF": a - b},
    "float64-to-cast": lambda a, b: {"SUM": (a + b).astype(np.float64), "DIFF": a - b},
    "int-to-refuse": lambda a, b: {"SUM": (a + b).astype(np.int32), "DIFF": a - b},
    "a-list": lambda a, b: {"SUM": (a + b).tolist(), "DIFF": a - b},
    "strided": lambda a, b: {"SUM": np.repeat(a + b, 2)[::2], "DIFF": a - b},
    "wrong-shape": lambda a, b: {"SUM": a[:3], "DIFF": a - b},
    "output-missing": lambda a, b: {"DIFF": a - b},
    "output-unknown": lambda a, b: {"SUM": a + b, "DIFF": a - b, "OTHER": a},
    "a-response": lambda a, b: tp.Response({"SUM": a + b, "DIFF": a - b}),
    "not-a-dict": lambda a, b: [a + b, a - b],
    "input-error": lambda a, b: (_ for _ in ()).throw(tp.InputError("input 'A': bad")),
    "crash": lambda a, b: 1 / 0,
}


@pytest.mark.parametrize("returns", list(RETURNS), ids=list(RETURNS))
def test_unbatched_answers_match_the_general_path(returns: str) -> None:
    plain, general = _both(_model(0, RETURNS[returns]), list(REQUESTS.values()))
    assert plain == general
    if returns == "arrays":  # the good requests are answered, the others refused
        assert plain[0]["SUM"] == ("<f4", [0.0, 2.0, 4.0, 6.0])
        assert [isinstance(a, dict) for a in plain] == [True, True, *[False] * 6, True]


ROWS2 = np.arange(8, dtype=np.float32).reshape(2, 4)

BATCHED_REQUESTS = [
    _request(A=ROWS2, B=ROWS2),
    _request(A=ROWS2, B=ROWS2[:1]),  # inputs disagree on rows
    _request(A=np.float32(1.0), B=ROWS2),  # no row dimension
    _request(A=F4, B=ROWS2),  # one row of A missing its row dimension
    _request(A=ROWS2, B=np.zeros((2, 0), np.float32)),  # zero-length variable dim
]

BATCHED_RETURNS: Dict[str, Returns] = {
    "arrays": lambda a, b: {"SUM": a + b, "DIFF": a - b},
    "rows-lost": lambda a, b: {"SUM": (a + b)[:1], "DIFF": a - b},
    "one-value-per-row": lambda a, b: {"SUM": a + b, "DIFF": (a - b)[:, 0]},
    "float64-to-cast": lambda a, b: {"SUM": (a + b).astype(np.float64), "DIFF": a - b},
}


@pytest.mark.parametrize("returns", list(BATCHED_RETURNS), ids=list(BATCHED_RETURNS))
def test_batched_request_alone_answers_match_the_general_path(returns: str) -> None:
    plain, general = _both(_model(8, BATCHED_RETURNS[returns]), BATCHED_REQUESTS)
    assert plain == general
    if returns == "arrays":
        assert plain[0]["DIFF"] == ("<f4", [[0.0] * 4, [0.0] * 4])


def test_infer_sees_the_arrays_it_was_sent() -> None:
    seen: List[Any] = []

    def keep(a: np.ndarray, b: np.ndarray) -> Dict[str, Any]:
        seen.append((a, b))
        return {"SUM": a * 2, "DIFF": b - b}

    with ModelHarness(_model(0, keep)) as harness:
        outputs = harness.infer({"A": F4, "B": F3})
    assert outputs["DIFF"].tolist() == [0.0, 0.0, 0.0]
    assert seen[0][0].dtype == np.float32 and seen[0][1].shape == (3,)


class _Quoted(tp.Text):
    def encode_element(self, value: Any) -> bytes:
        return b'"' + super().encode_element(value) + b'"'


class _Shout(tp.Tensor):
    def decode(self, name: str, tensor: Any, batched: bool) -> Any:
        return super().decode(name, tensor, batched) * 2


@pytest.mark.parametrize(
    ("inputs", "outputs", "batch", "builtin"),
    [
        ({"X": tp.Text()}, {"Y": tp.Tensor("FP32", [1])}, 0, False),
        ({"X": tp.Tensor("FP32", [1])}, {"Y": _Quoted()}, 0, False),
        ({"X": tp.Tensor("BYTES", [1])}, {"Y": tp.Tensor("FP32", [1])}, 0, False),
        ({"X": tp.Tensor("FP32", [1], optional=True)}, {"Y": tp.Tensor("FP32", [1])}, 0, False),
        ({"X": tp.Tensor("FP32", [-1], ragged="pad")}, {"Y": tp.Tensor("FP32", [1])}, 4, False),
        ({"X": _Shout("FP32", [1])}, {"Y": tp.Tensor("FP32", [1])}, 0, False),
        ({"X": tp.Tensor("FP32", [1])}, {"Y": tp.Tensor("FP32", [1])}, 4, True),
    ],
    ids=[
        "text-in",
        "own-text-encoding-out",
        "bytes",
        "optional",
        "padded",
        "subclass",
        "builtin-metrics",
    ],
)
def test_only_models_whose_codecs_say_how_take_the_path(
    inputs: Dict[str, Any], outputs: Dict[str, Any], batch: int, builtin: bool
) -> None:
    def infer(self: tp.Model, X: Any) -> Dict[str, Any]:
        return {"Y": X}

    def model(inputs: Dict[str, Any], outputs: Dict[str, Any], builtin: bool) -> Any:
        namespace = {"inputs": inputs, "outputs": outputs, "infer": infer}
        namespace.update(max_batch_size=batch, builtin_metrics=builtin)
        return type("Other", (tp.Model,), namespace)

    with ModelHarness(model(inputs, outputs, builtin)) as harness:
        assert engine_of(harness.model).direct_inputs is None
    for output in (tp.Tensor("FP32", [1]), tp.Text(), tp.Bytes(dims=[-1])):
        with ModelHarness(model({"X": tp.Tensor("FP32", [1])}, {"Y": output}, False)) as harness:
            assert engine_of(harness.model).direct_inputs is not None, output


def test_a_subclass_codec_is_still_called_on_the_general_path() -> None:
    class Doubling(tp.Model):
        inputs = {"X": _Shout("FP32", [2])}
        outputs = {"Y": tp.Tensor("FP32", [2])}

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            return {"Y": X + 1}

    with ModelHarness(Doubling) as harness:
        assert harness.infer({"X": np.array([1, 2], np.float32)})["Y"].tolist() == [3.0, 5.0]


# -- several requests of one call, merged ----------------------------------------------------


def _merging_model(returns: Returns) -> Type[tp.Model]:
    class Merging(tp.Model):
        inputs = {"A": tp.Tensor("FP32", [4]), "B": tp.Tensor("INT64", [2])}
        outputs = {"SUM": tp.Tensor("FP32", [4]), "FIRST": tp.Tensor("INT64", [1])}
        max_batch_size = 16
        check_cancellation = False  # requests merge in one pass

        def setup(self) -> None:
            self.rows_seen: List[int] = []

        def infer(self, A: np.ndarray, B: np.ndarray) -> Any:
            self.rows_seen.append(len(A))
            if (A == 666).any():
                raise tp.InputError("input 'A': 666 is refused")
            return returns(A, B)

    return Merging


def _merged_both(model: Type[tp.Model], calls: List[List[Any]]) -> List[Any]:
    """(answers, rows infer saw) of the plain and the general merged path, one execute() per
    call."""
    seen = []
    for plain in (True, False):
        with ModelHarness(model) as harness:
            engine = engine_of(harness.model)
            assert engine.direct_inputs is not None and engine.merges_directly
            if not plain:
                engine.direct_inputs = None
            answers = [
                [_answer(r, q) for r, q in zip(harness.model.execute(call), call)] for call in calls
            ]
            seen.append((answers, harness.model.rows_seen))
    return seen


def _rows(n: int, start: float = 0.0) -> Any:
    a = np.arange(n * 4, dtype=np.float32).reshape(n, 4) + start
    return {"A": a, "B": np.arange(n * 2, dtype=np.int64).reshape(n, 2)}


MERGED_CALLS: Dict[str, List[Any]] = {
    "all-good": [_request(**_rows(1)), _request(**_rows(3, 10)), _request(**_rows(2, 20))],
    "one-poison": [_request(**_rows(1)), _request(**_rows(1, 666)), _request(**_rows(2))],
    "one-wrong-dtype": [_request(**_rows(1)), _request(A=_rows(1)["A"], B=np.zeros((1, 2)))],
    "one-missing-input": [_request(**_rows(2)), _request(A=_rows(1)["A"])],
    "one-repeated-input": [
        _request(**_rows(1)),
        pb.InferenceRequest(
            model_name="m", inputs=[pb.Tensor("A", _rows(1)["A"]), pb.Tensor("A", _rows(1)["A"])]
        ),
    ],
    "rows-disagree": [_request(**_rows(1)), _request(A=_rows(2)["A"], B=_rows(1)["B"])],
    "one-wrong-shape": [_request(**_rows(1)), _request(A=_rows(1)["A"][:, :3], B=_rows(1)["B"])],
    "one-asks-for-one-output": [_request(**_rows(1)), _request(["FIRST"], **_rows(2))],
}

MERGED_RETURNS: Dict[str, Returns] = {
    "arrays": lambda a, b: {"SUM": a + 1, "FIRST": b[:, :1]},
    "float64-to-cast": lambda a, b: {"SUM": (a + 1).astype(np.float64), "FIRST": b[:, :1]},
    "one-value-per-row": lambda a, b: {"SUM": a + 1, "FIRST": b[:, 0]},
    "rows-lost": lambda a, b: {"SUM": a[:1], "FIRST": b[:, :1]},
    "output-missing": lambda a, b: {"SUM": a + 1},
    "not-a-dict": lambda a, b: (a, b),
}


@pytest.mark.parametrize("returns", list(MERGED_RETURNS), ids=list(MERGED_RETURNS))
def test_merged_answers_match_the_general_path(returns: str) -> None:
    calls = list(MERGED_CALLS.values())
    plain, general = _merged_both(_merging_model(MERGED_RETURNS[returns]), calls)
    assert plain == general
    if returns == "arrays":
        answers, rows_seen = plain
        first = answers[0]  # all good: one infer() of 6 rows, each request its own rows
        assert [a["SUM"][1] for a in first] == [
            [[1.0, 2.0, 3.0, 4.0]],
            [[11.0 + i * 4 + j for j in range(4)] for i in range(3)],
            [[21.0 + i * 4 + j for j in range(4)] for i in range(2)],
        ]
        assert rows_seen[0] == 6
        assert sorted(answers[-1][1]) == ["FIRST"]  # the request that asked for one output


# -- text outputs the stub encodes --------------------------------------------------------------


def _labelling_model(batch: int, returns: Returns) -> Type[tp.Model]:
    class Labelling(tp.Model):
        inputs = {"A": tp.Tensor("FP32", [4]), "B": tp.Tensor("INT64", [2])}
        outputs = {
            "IDS": tp.Tensor("INT64", [2]),
            "NAMES": tp.Text(dims=[-1]),
            "RAW": tp.Bytes(dims=[1]),
        }
        max_batch_size = batch
        check_cancellation = False

        def setup(self) -> None:
            self.rows_seen: List[int] = []

        def infer(self, A: np.ndarray, B: np.ndarray) -> Any:
            self.rows_seen.append(len(A))
            return returns(A, B)

    return Labelling


NAMES = np.array(["zero", "ünï", "two", "bad \udcff", b"four"], dtype=object)


def _raw(b: np.ndarray) -> np.ndarray:
    raw = np.empty((len(b), 1), dtype=object)
    raw[:, 0] = [f"id {i}".encode() for i in b[:, 0]]
    return raw


LABEL_RETURNS: Dict[str, Returns] = {
    "arrays": lambda a, b: {"IDS": b, "NAMES": NAMES[b], "RAW": _raw(b)},
    "str-for-bytes": lambda a, b: {"IDS": b, "NAMES": NAMES[b], "RAW": _raw(b).astype(str)},
    "lists": lambda a, b: {"IDS": b, "NAMES": NAMES[b].tolist(), "RAW": _raw(b).tolist()},
    "an-int-among-the-names": lambda a, b: {
        "IDS": b,
        "NAMES": np.where(b == 2, 7, NAMES[b]),
        "RAW": _raw(b),
    },
    "names-of-the-wrong-rank": lambda a, b: {"IDS": b, "NAMES": NAMES[b[:, 0]], "RAW": _raw(b)},
    "strided-names": lambda a, b: {
        "IDS": b,
        "NAMES": np.repeat(NAMES[b], 2, axis=1)[:, ::2],
        "RAW": _raw(b),
    },
}


def _ids(*rows: List[int]) -> Any:
    a = np.zeros((len(rows), 4), np.float32)
    return _request(A=a, B=np.array(rows, np.int64))


def _ids_asking(requested: List[str], *rows: List[int]) -> Any:
    a = np.zeros((len(rows), 4), np.float32)
    return _request(requested, A=a, B=np.array(rows, np.int64))


LABEL_CALLS: Dict[str, List[Any]] = {
    "good": [_ids([0, 1]), _ids([2, 0], [1, 1]), _ids([4, 2])],
    "a-str-the-stub-cannot-encode": [_ids([0, 1]), _ids([3, 0]), _ids([1, 2])],
    "some-outputs-asked-for": [_ids_asking(["NAMES"], [0, 1]), _ids_asking(["IDS", "RAW"], [2, 2])],
}


@pytest.mark.parametrize("returns", list(LABEL_RETURNS), ids=list(LABEL_RETURNS))
def test_text_outputs_alone_match_the_general_path(returns: str) -> None:
    requests = [r for call in LABEL_CALLS.values() for r in call]
    plain, general = _both(_labelling_model(8, LABEL_RETURNS[returns]), requests)
    assert plain == general
    if returns == "arrays":
        assert plain[0]["NAMES"] == ("|O", [[b"zero", "ünï".encode()]])
        assert plain[0]["RAW"] == ("|O", [[b"id 0"]])
        assert plain[4][0] == "error" and "element 0" in plain[4][2]  # "bad \udcff"
        assert sorted(plain[6]) == ["NAMES"] and sorted(plain[7]) == ["IDS", "RAW"]


@pytest.mark.parametrize("returns", list(LABEL_RETURNS), ids=list(LABEL_RETURNS))
def test_text_outputs_merged_match_the_general_path(returns: str) -> None:
    calls = list(LABEL_CALLS.values())
    plain, general = _merged_both(_labelling_model(16, LABEL_RETURNS[returns]), calls)
    assert plain == general
    if returns == "arrays":
        answers, rows_seen = plain
        assert [a["NAMES"][1] for a in answers[0]] == [
            [[b"zero", "ünï".encode()]],
            [[b"two", b"zero"], ["ünï".encode()] * 2],
            [[b"four", b"two"]],
        ]
        assert rows_seen[0] == 4  # one infer() for the call
        # the request whose names hold a lone surrogate fails alone, naming the element
        assert answers[1][1][0] == "error" and "element 0" in answers[1][1][2]
        assert isinstance(answers[1][0], dict) and isinstance(answers[1][2], dict)
        assert sorted(answers[2][0]) == ["NAMES"] and sorted(answers[2][1]) == ["IDS", "RAW"]


def test_the_plain_path_does_not_ask_which_outputs_a_request_wants() -> None:
    """The stub drops unrequested outputs itself: asking (a call into the stub per request)
    would only cost time when every output is a ready array."""
    asked: List[int] = []

    class Counting(pb.InferenceRequest):
        def requested_output_names(self) -> Any:
            asked.append(1)
            return super().requested_output_names()

    def counting(rows: int) -> Any:
        a = np.zeros((rows, 4), np.float32)
        b = np.zeros((rows, 2), np.int64)
        return Counting(model_name="m", inputs=[pb.Tensor("A", a), pb.Tensor("B", b)])

    with ModelHarness(_labelling_model(16, LABEL_RETURNS["arrays"])) as harness:
        responses = harness.model.execute([counting(1)]) + harness.model.execute(
            [counting(1), counting(2)]
        )
    assert all(not r.has_error() for r in responses)
    assert [len(r.output_tensors()) for r in responses] == [3, 3, 3]
    assert asked == []
