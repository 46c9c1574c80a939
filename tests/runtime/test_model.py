"""tritonpy.Model under the fake pb_utils: auto-complete, merged batching, ragged rows,
optional inputs, per-request errors, cancellation."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest

import tritonpy as tp
from tritonpy.testing import ClientCancelledError, ModelHarness


class AddSub(tp.Model):
    inputs = {"A": tp.Tensor("FP32", [4]), "B": tp.Tensor("FP32", [4])}
    outputs = {"SUM": tp.Tensor("FP32", [4]), "DIFF": tp.Tensor("FP32", [4])}
    max_batch_size = 16

    def setup(self) -> None:
        self.calls: List[int] = []

    def infer(self, A: np.ndarray, B: np.ndarray) -> Dict[str, Any]:
        self.calls.append(len(A))
        return {"SUM": A + B, "DIFF": A - B}


def rows(n: int, start: float = 0.0) -> np.ndarray:
    return (np.arange(n * 4, dtype=np.float32) + start).reshape(n, 4)


# -- auto-complete --------------------------------------------------------------------------


def test_auto_complete_fills_the_config_from_the_declarations() -> None:
    with ModelHarness(AddSub) as harness:
        config = harness.config
    assert config["max_batch_size"] == 16
    assert "dynamic_batching" in config
    assert [(i["name"], i["data_type"], i["dims"]) for i in config["input"]] == [
        ("A", "TYPE_FP32", [4]),
        ("B", "TYPE_FP32", [4]),
    ]
    assert [o["name"] for o in config["output"]] == ["SUM", "DIFF"]
    assert all(o["data_type"] == "TYPE_FP32" and o["dims"] == [4] for o in config["output"])


def test_auto_complete_marks_optional_inputs() -> None:
    class WithOptional(tp.Model):
        inputs = {"X": tp.Tensor("INT64", [-1]), "K": tp.Tensor("INT32", [1], default=5)}
        outputs = {"Y": tp.Tensor("INT64", [-1])}

        def infer(self, X: np.ndarray, K: np.ndarray) -> Dict[str, Any]:
            return {"Y": X * K}

    with ModelHarness(WithOptional) as harness:
        inputs = {i["name"]: i for i in harness.config["input"]}
        assert harness.config["max_batch_size"] == 0
        assert "dynamic_batching" not in harness.config
    assert inputs["K"]["optional"] is True
    assert "optional" not in inputs["X"] or inputs["X"]["optional"] is False


def test_two_line_config_model_directory_runs_like_the_design_example(tmp_path: Path) -> None:
    cv2 = pytest.importorskip("cv2", reason="tp.Image needs OpenCV: pip install 'tritonpy[image]'")

    model_dir = tmp_path / "preprocess"
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "config.pbtxt").write_text('name: "preprocess"\nbackend: "python"\n')
    (model_dir / "1" / "model.py").write_text(
        """
import cv2
import numpy as np
import tritonpy as tp


class Preprocess(tp.Model):
    inputs = {"IMAGE": tp.Image(color="RGB")}
    outputs = {"PIXELS": tp.Tensor("FP32", [3, 224, 224])}
    max_batch_size = 32

    def setup(self):
        self.mean = np.array([0.485, 0.456, 0.406], np.float32)
        self.std = np.array([0.229, 0.224, 0.225], np.float32)

    def infer(self, IMAGE):
        x = np.stack([cv2.resize(im, (224, 224)) for im in IMAGE]).astype(np.float32) / 255
        return {"PIXELS": ((x - self.mean) / self.std).transpose(0, 3, 1, 2)}


TritonPythonModel = Preprocess
"""
    )
    image = np.zeros((48, 64, 3), np.uint8)
    image[..., 2] = 255  # pure red in BGR order
    png = cv2.imencode(".png", image)[1].tobytes()
    with ModelHarness(model_dir) as harness:
        assert harness.config["max_batch_size"] == 32
        out = harness.infer({"IMAGE": np.array([[png], [png]], dtype=object)})
    pixels = out["PIXELS"]
    assert pixels.shape == (2, 3, 224, 224)
    assert pixels.dtype == np.float32
    # RGB order: channel 0 is red = (1 - 0.485) / 0.229
    assert pixels[0, 0, 0, 0] == pytest.approx((1 - 0.485) / 0.229, rel=1e-5)
    assert pixels[1, 2, 100, 100] == pytest.approx((0 - 0.406) / 0.225, rel=1e-5)


# -- merged batching ------------------------------------------------------------------------


@pytest.mark.parametrize("row_counts", [[1], [2, 3], [1, 4, 2, 1], [3] * 5])
def test_rows_of_all_requests_are_merged_into_one_infer_call(row_counts: List[int]) -> None:
    requests = [
        {"A": rows(n, start=100 * i), "B": np.ones((n, 4), np.float32)}
        for i, n in enumerate(row_counts)
    ]
    with ModelHarness(AddSub) as harness:
        results = harness.infer_requests(requests)
        assert harness.model.calls == [sum(row_counts)]
    for request, result in zip(requests, results):
        assert not isinstance(result, Exception)
        np.testing.assert_array_equal(result["SUM"], request["A"] + 1)
        np.testing.assert_array_equal(result["DIFF"], request["A"] - 1)


def test_per_request_switch_calls_infer_once_per_request() -> None:
    class OneAtATime(AddSub):
        merge_requests = False

    with ModelHarness(OneAtATime) as harness:
        results = harness.infer_requests([{"A": rows(n), "B": rows(n)} for n in (2, 1, 3)])
        assert harness.model.calls == [2, 1, 3]
    assert [r["SUM"].shape[0] for r in results] == [2, 1, 3]


def test_without_batching_infer_runs_per_request_without_a_batch_dimension() -> None:
    seen: List[Any] = []

    class Scalarish(tp.Model):
        inputs = {"X": tp.Tensor("INT32", [3]), "NAME": tp.Text()}
        outputs = {"Y": tp.Tensor("INT32", [3]), "GREETING": tp.Text()}

        def infer(self, X: np.ndarray, NAME: str) -> Dict[str, Any]:
            seen.append((X.shape, NAME))
            return {"Y": X + 1, "GREETING": f"hello {NAME}"}

    with ModelHarness(Scalarish) as harness:
        results = harness.infer_requests(
            [
                {"X": np.array([1, 2, 3], np.int32), "NAME": "ann"},
                {"X": np.array([4, 5, 6], np.int32), "NAME": "bob"},
            ]
        )
    assert seen == [((3,), "ann"), ((3,), "bob")]
    assert results[1]["Y"].tolist() == [5, 6, 7]
    assert results[0]["GREETING"].tolist() == [b"hello ann"]


def test_zero_row_request_gives_zero_row_outputs() -> None:
    # Triton itself refuses empty batches before a model sees them (the harness does too), so
    # drive execute() directly: the runtime must still answer 0 rows with 0 rows.
    from tritonpy.testing import fake_pb_utils as pb

    def request(n: int) -> Any:
        return pb.InferenceRequest(
            inputs=[pb.Tensor("A", rows(n)), pb.Tensor("B", rows(n))],
            requested_output_names=["SUM", "DIFF"],
        )

    with ModelHarness(AddSub) as harness:
        responses = harness.model.execute([request(0), request(2)])
        assert harness.model.calls == [2]
    first, second = (
        {t.name(): t.as_numpy() for t in response.output_tensors()} for response in responses
    )
    assert first["SUM"].shape == (0, 4) and first["SUM"].dtype == np.float32
    np.testing.assert_array_equal(second["SUM"], rows(2) * 2)


def test_only_requested_outputs_are_returned() -> None:
    with ModelHarness(AddSub) as harness:
        out = harness.infer({"A": rows(1), "B": rows(1)}, requested_outputs=["DIFF"])
    assert list(out) == ["DIFF"]


def test_merged_requests_each_get_the_outputs_they_asked_for() -> None:
    from tritonpy.testing import fake_pb_utils as pb

    def request(n: int, wanted: List[str]) -> Any:
        return pb.InferenceRequest(
            inputs=[pb.Tensor("A", rows(n)), pb.Tensor("B", rows(n))],
            requested_output_names=wanted,
        )

    with ModelHarness(AddSub) as harness:
        responses = harness.model.execute(
            [request(1, ["DIFF"]), request(2, ["SUM", "DIFF"]), request(1, ["SUM"])]
        )
        assert harness.model.calls == [4]  # one merged infer() call
    names = [[t.name() for t in response.output_tensors()] for response in responses]
    assert names == [["DIFF"], ["SUM", "DIFF"], ["SUM"]]
    np.testing.assert_array_equal(responses[1].output_tensors()[0].as_numpy(), rows(2) * 2)


# -- ragged rows ----------------------------------------------------------------------------


class Lengths(tp.Model):
    inputs = {"TOKENS": tp.Tensor("INT64", [-1])}
    outputs = {"LENGTH": tp.Tensor("INT64", [1]), "DOUBLED": tp.Tensor("INT64", [-1])}
    max_batch_size = 8

    def setup(self) -> None:
        self.shapes: List[Any] = []

    def infer(self, TOKENS: np.ndarray) -> Dict[str, Any]:
        self.shapes.append(TOKENS.shape)
        return {"LENGTH": np.full(len(TOKENS), TOKENS.shape[1]), "DOUBLED": TOKENS * 2}


def test_ragged_requests_are_grouped_by_shape_by_default() -> None:
    lengths = [3, 5, 3, 1]
    with ModelHarness(Lengths) as harness:
        results = harness.infer_requests(
            [{"TOKENS": np.arange(n, dtype=np.int64).reshape(1, n)} for n in lengths]
        )
        assert sorted(harness.model.shapes) == [(1, 1), (1, 5), (2, 3)]
    assert [int(r["LENGTH"][0, 0]) for r in results] == lengths
    assert [r["DOUBLED"].tolist() for r in results][1] == [[0, 2, 4, 6, 8]]


class PaddedMean(tp.Model):
    inputs = {"TOKENS": tp.Tensor("FP32", [-1], ragged="pad", pad_value=-1.0)}
    outputs = {
        "MEAN": tp.Tensor("FP32", [1]),
        "ECHO": tp.Tensor("FP32", [-1], ragged="pad"),
    }
    max_batch_size = 8

    def setup(self) -> None:
        self.batches: List[tp.Padded] = []

    def infer(self, TOKENS: tp.Padded) -> Dict[str, Any]:
        self.batches.append(TOKENS)
        total = (TOKENS.values * TOKENS.mask).sum(axis=1)
        return {"MEAN": total / TOKENS.lengths, "ECHO": TOKENS}


def test_pad_policy_merges_ragged_requests_with_lengths_and_mask() -> None:
    requests = [
        {"TOKENS": np.array([[1, 2, 3]], np.float32)},
        {"TOKENS": np.array([[4], [6]], np.float32)},
        {"TOKENS": np.array([[1, 1, 1, 1, 6]], np.float32)},
    ]
    with ModelHarness(PaddedMean) as harness:
        results = harness.infer_requests(requests)
        (batch,) = harness.model.batches
    assert batch.values.shape == (4, 5)
    assert batch.lengths.tolist() == [3, 1, 1, 5]
    assert batch.values[1].tolist() == [4, -1, -1, -1, -1]
    assert [r["MEAN"].ravel().tolist() for r in results] == [[2.0], [4.0, 6.0], [2.0]]
    # padded outputs come back cut to each request's own length
    for request, result in zip(requests, results):
        np.testing.assert_array_equal(result["ECHO"], request["TOKENS"])


def test_pad_policy_gives_padded_even_for_a_single_request() -> None:
    with ModelHarness(PaddedMean) as harness:
        out = harness.infer({"TOKENS": np.array([[2, 4]], np.float32)})
        assert isinstance(harness.model.batches[0], tp.Padded)
    assert out["MEAN"].tolist() == [[3.0]]


# -- optional inputs ------------------------------------------------------------------------


class Scale(tp.Model):
    inputs = {
        "X": tp.Tensor("FP32", [2]),
        "FACTOR": tp.Tensor("FP32", [1], default=10.0),
        "NOTE": tp.Text(optional=True),
    }
    outputs = {"Y": tp.Tensor("FP32", [2]), "NOTE_OUT": tp.Text()}
    max_batch_size = 8

    def setup(self) -> None:
        self.notes: List[Any] = []

    def infer(self, X: np.ndarray, FACTOR: np.ndarray, NOTE: Any) -> Dict[str, Any]:
        self.notes.append(NOTE)
        notes = NOTE if NOTE is not None else ["-"] * len(X)
        return {"Y": X * FACTOR, "NOTE_OUT": notes}


def test_missing_optional_input_gets_its_default_per_row() -> None:
    x = np.ones((3, 2), np.float32)
    with ModelHarness(Scale) as harness:
        out = harness.infer({"X": x})
    np.testing.assert_array_equal(out["Y"], x * 10)
    assert out["NOTE_OUT"].ravel().tolist() == [b"-"] * 3


def test_requests_with_and_without_an_optional_input_in_one_batch() -> None:
    x = np.ones((1, 2), np.float32)
    requests = [
        {"X": x, "FACTOR": np.array([[2]], np.float32)},
        {"X": x},
        {"X": x, "NOTE": np.array([[b"hi"]], dtype=object)},
    ]
    with ModelHarness(Scale) as harness:
        results = harness.infer_requests(requests)
        notes = harness.model.notes
    assert [r["Y"].tolist() for r in results] == [[[2, 2]], [[10, 10]], [[10, 10]]]
    assert results[2]["NOTE_OUT"].tolist() == [[b"hi"]]
    # NOTE has no default: requests without it are not merged with requests that have it
    assert sorted(map(str, notes)) == sorted(map(str, [None, ["hi"]]))


def test_missing_required_input_is_rejected_before_the_model() -> None:
    with ModelHarness(Scale) as harness, pytest.raises(tp.TritonRequestError) as caught:
        harness.infer({"FACTOR": np.array([[2]], np.float32)})
    assert caught.value.code == "INVALID_ARG"
    assert "X" in caught.value.message


# -- errors stay with their request ---------------------------------------------------------


class Picky(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"LENGTH": tp.Tensor("INT32", [1])}
    max_batch_size = 8

    def setup(self) -> None:
        self.batch_sizes: List[int] = []

    def infer(self, TEXT: List[str]) -> Dict[str, Any]:
        self.batch_sizes.append(len(TEXT))
        if "poison" in TEXT:
            raise tp.InputError("input 'TEXT': expected anything but 'poison', got 'poison'")
        if "crash" in TEXT:
            raise ZeroDivisionError("division by zero")
        return {"LENGTH": np.array([len(t) for t in TEXT], np.int32)}


def text(*values: bytes) -> Dict[str, Any]:
    return {"TEXT": np.array([[v] for v in values], dtype=object)}


def test_poison_request_fails_alone_with_invalid_arg() -> None:
    with ModelHarness(Picky) as harness:
        results = harness.infer_requests([text(b"ok"), text(b"poison", b"x"), text(b"fine")])
        # one merged attempt, then each request alone
        assert harness.model.batch_sizes == [4, 1, 2, 1]
    assert results[0]["LENGTH"].tolist() == [[2]]
    assert isinstance(results[1], tp.TritonRequestError)
    assert results[1].code == "INVALID_ARG"
    assert results[1].message == "input 'TEXT': expected anything but 'poison', got 'poison'"
    assert results[2]["LENGTH"].tolist() == [[4]]


def _outcome(result: Any) -> Any:
    if isinstance(result, tp.TritonRequestError):
        return (result.code, result.message)
    return {name: value.tolist() for name, value in result.items()}


@pytest.mark.parametrize(
    "requests",
    [
        [text(b"ok"), text(b"poison", b"x"), text(b"fine")],
        [text(b"crash"), text(b"abc")],
        [text(b"\xff\xfe"), text(b"abc"), text(b"de")],
        [text(b"a"), text(b"bb", b"ccc"), text(b"dddd")],
    ],
    ids=["poison", "crash", "undecodable", "all-good"],
)
def test_the_one_pass_merge_answers_like_the_general_path(requests: List[Any]) -> None:
    """check_cancellation=False lets a merged call take the one-pass path (merge_directly);
    True sends it through the general one. Same responses, same infer() calls."""
    outcomes, calls = [], []
    for check in (True, False):

        class Variant(Picky):
            check_cancellation = check

        with ModelHarness(Variant) as harness:
            outcomes.append([_outcome(r) for r in harness.infer_requests(requests)])
            calls.append(harness.model.batch_sizes)
    assert outcomes[0] == outcomes[1]
    assert calls[0] == calls[1]


class Ragged(tp.Model):
    """Rows of -1 length: requests merge only with requests of the same length."""

    inputs = {"SEQ": tp.Tensor("FP32", [-1])}
    outputs = {"TOTAL": tp.Tensor("FP32", [1]), "NOTE": tp.Text()}
    max_batch_size = 8

    def setup(self) -> None:
        self.shapes: List[Any] = []

    def infer(self, SEQ: np.ndarray) -> Dict[str, Any]:
        self.shapes.append(SEQ.shape)
        if (SEQ == 666).any():
            raise tp.InputError("input 'SEQ': 666 is refused")
        return {"TOTAL": SEQ.sum(axis=1), "NOTE": [f"{len(row)} values" for row in SEQ]}


class RaggedPlain(Ragged):
    """The same with plain tensors only (the plain-tensor path)."""

    outputs = {"TOTAL": tp.Tensor("FP32", [1]), "NOTE": tp.Tensor("INT64", [1])}

    def infer(self, SEQ: np.ndarray) -> Dict[str, Any]:
        result = super().infer(SEQ)
        return {"TOTAL": result["TOTAL"], "NOTE": np.full((len(SEQ), 1), SEQ.shape[1])}


def seq(*rows: List[float]) -> Dict[str, Any]:
    return {"SEQ": np.array(rows, np.float32)}


@pytest.mark.parametrize("model", [Ragged, RaggedPlain], ids=["general-codecs", "plain"])
@pytest.mark.parametrize(
    ("requests", "infer_shapes"),
    [
        ([seq([1, 2]), seq([3, 4], [5, 6]), seq([7, 8])], [(4, 2)]),
        ([seq([1, 2]), seq([1, 2, 3]), seq([4, 5]), seq([9])], [(2, 2), (1, 3), (1, 1)]),
        (
            [seq([1, 2]), seq([666, 2]), seq([1, 2, 3]), seq([3, 4])],
            [(3, 2), (1, 2), (1, 2), (1, 2), (1, 3)],  # the group fails, then each alone
        ),
    ],
    ids=["one-length", "three-lengths", "poison-in-a-group"],
)
def test_ragged_requests_merged_in_one_pass_answer_like_the_general_path(
    model: Any, requests: List[Any], infer_shapes: List[Any]
) -> None:
    """The one-pass paths group requests by their row shapes as the general path does."""
    outcomes, shapes = [], []
    for check in (True, False):  # True: the general path; False: the one-pass paths

        class Variant(model):  # type: ignore[valid-type,misc]
            check_cancellation = check

        with ModelHarness(Variant) as harness:
            outcomes.append([_outcome(r) for r in harness.infer_requests(requests)])
            shapes.append(harness.model.shapes)
    assert outcomes[0] == outcomes[1]
    assert shapes[0] == shapes[1] == infer_shapes


def test_an_image_that_fails_to_decode_when_merged_fails_alone() -> None:
    cv2 = pytest.importorskip("cv2", reason="tp.Image needs OpenCV: pip install 'tritonpy[image]'")
    png = cv2.imencode(".png", np.zeros((4, 6, 3), np.uint8))[1].tobytes()

    class Shapes(tp.Model):
        inputs = {"IMAGE": tp.Image(color="RGB")}
        outputs = {"SHAPE": tp.Tensor("INT32", [3])}
        max_batch_size = 8
        check_cancellation = False  # the one-pass merge

        def infer(self, IMAGE: List[np.ndarray]) -> Dict[str, Any]:
            return {"SHAPE": np.array([image.shape for image in IMAGE], np.int32)}

    column = [np.array([[png]], dtype=object), np.array([[b"not an image"]], dtype=object)]
    with ModelHarness(Shapes) as harness:
        results = harness.infer_requests([{"IMAGE": column[0]}, {"IMAGE": column[1]}] * 2)
    assert [_outcome(r) for r in results[::2]] == [{"SHAPE": [[4, 6, 3]]}] * 2
    for failed in results[1::2]:
        assert isinstance(failed, tp.TritonRequestError) and failed.code == "INVALID_ARG"
        assert failed.message.endswith("(OpenCV could not decode it)")


def test_unexpected_exception_is_internal_and_logged_with_traceback() -> None:
    from tritonpy.testing import fake_pb_utils

    with ModelHarness(Picky) as harness:
        results = harness.infer_requests([text(b"crash"), text(b"abc")])
    assert isinstance(results[0], tp.TritonRequestError)
    assert results[0].code == "INTERNAL"
    assert results[0].message == "ZeroDivisionError while running infer(): division by zero"
    assert results[1]["LENGTH"].tolist() == [[3]]
    logged = "\n".join(record.message for record in fake_pb_utils.log_records)
    assert "ZeroDivisionError" in logged and "Traceback" in logged


def test_undecodable_input_fails_only_its_request() -> None:
    with ModelHarness(Picky) as harness:
        results = harness.infer_requests([text(b"\xff\xfe"), text(b"abc")])
        assert harness.model.batch_sizes == [1]
    assert isinstance(results[0], tp.TritonRequestError)
    assert results[0].code == "INVALID_ARG"
    assert results[0].message.startswith("input 'TEXT', row 0: expected UTF-8 text, got 2 bytes")
    assert results[1]["LENGTH"].tolist() == [[3]]


def test_cancelled_request_is_not_computed() -> None:
    with ModelHarness(Picky) as harness:
        results = harness.infer_requests([text(b"a"), text(b"bb"), text(b"ccc")], cancelled=[1])
        assert harness.model.batch_sizes == [2]
    assert isinstance(results[1], ClientCancelledError)  # the client's own CANCELLED
    assert results[1].code == "CANCELLED"
    assert model_did(results[1]) == "CANCELLED"  # the model skipped it
    assert results[0]["LENGTH"].tolist() == [[1]]
    assert results[2]["LENGTH"].tolist() == [[3]]


def model_did(result: Any) -> Any:
    """What the model answered a request its client cancelled (the client sees CANCELLED):
    its LENGTH, or its error's code."""
    assert isinstance(result, ClientCancelledError) and result.code == "CANCELLED", result
    answer = result.model_result
    return answer.code if isinstance(answer, tp.TritonRequestError) else answer["LENGTH"].tolist()


def test_auto_cancellation_checks_only_while_infer_is_slow() -> None:
    class Fast(Picky):
        pass

    class Always(Picky):
        check_cancellation = True

    class Never(Picky):
        check_cancellation = False

    requests = [text(b"a"), text(b"bb")]
    with ModelHarness(Fast) as fast, ModelHarness(Always) as always, ModelHarness(Never) as never:
        # first batch: "auto" has no timing yet, so it checks
        # (the client of a cancelled request sees CANCELLED; model_result: what the model did)
        assert model_did(fast.infer_requests(requests, cancelled=[0])[0]) == "CANCELLED"
        for _ in range(5):
            fast.infer_requests(requests)
        # infer() takes microseconds: "auto" stops paying for the round trip
        assert model_did(fast.infer_requests(requests, cancelled=[0])[0]) == [[1]]
        for _ in range(5):
            always.infer_requests(requests)
        assert model_did(always.infer_requests(requests, cancelled=[0])[0]) == "CANCELLED"
        assert model_did(never.infer_requests(requests, cancelled=[0])[0]) == [[1]]


def test_slow_infer_keeps_auto_cancellation_on() -> None:
    import time

    class Slow(Picky):
        def infer(self, TEXT: List[str]) -> Dict[str, Any]:
            time.sleep(0.003)
            return super().infer(TEXT)

    with ModelHarness(Slow) as harness:
        for _ in range(3):
            harness.infer_requests([text(b"a")])
        result = harness.infer_requests([text(b"a"), text(b"b")], cancelled=[1])[1]
    assert isinstance(result, tp.TritonRequestError) and result.code == "CANCELLED"


def test_one_descheduled_call_does_not_switch_auto_checks_back_on() -> None:
    import time

    class Hiccup(Picky):
        def infer(self, TEXT: List[str]) -> Dict[str, Any]:
            if "hiccup" in TEXT:
                time.sleep(0.02)  # as if the CPU were taken away for 20 ms
            return super().infer(TEXT)

    with ModelHarness(Hiccup) as harness:
        for _ in range(5):
            harness.infer_requests([text(b"a")])
        harness.infer_requests([text(b"hiccup")])
        result = harness.infer_requests([text(b"a"), text(b"bb")], cancelled=[0])[0]
    assert model_did(result) == [[1]]  # still fast: not checked


def test_check_cancellation_must_be_bool_or_auto() -> None:
    class Odd(Picky):
        check_cancellation = "sometimes"  # type: ignore[assignment]

    with pytest.raises(tp.DeclarationError, match="must be True, False or 'auto'"):
        ModelHarness(Odd)


def test_model_stays_usable_after_errors() -> None:
    with ModelHarness(Picky) as harness:
        for _ in range(3):
            harness.infer_requests([text(b"crash"), text(b"poison")])
        assert harness.infer(text(b"abcd"))["LENGTH"].tolist() == [[4]]


# -- outputs that do not fit ----------------------------------------------------------------


def make_model(result: Any, output: tp.Codec | None = None) -> type:
    class Returns(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [2])}
        outputs = {"Y": output or tp.Tensor("FP32", [2])}
        max_batch_size = 4

        def infer(self, X: np.ndarray) -> Any:
            return result(X) if callable(result) else result

    return Returns


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ([1, 2], "infer() must return a dict {output name: value}, got list"),
        ({}, "infer() did not return output 'Y'"),
        ({"Y": np.zeros((2, 2)), "Z": 1}, "returned ['Z'], which are not declared outputs"),
        ({"Y": np.zeros((3, 2))}, "output 'Y': expected 1 rows (one per input row), got 3"),
        ({"Y": np.zeros((1, 3))}, "output 'Y': expected shape [rows, 2], got [1, 3]"),
        ({"Y": np.zeros((1, 2), np.complex64)}, "output 'Y': expected FP32, got complex64"),
    ],
)
def test_bad_outputs_are_internal_errors_naming_the_problem(result: Any, message: str) -> None:
    with (
        ModelHarness(make_model(result)) as harness,
        pytest.raises(tp.TritonRequestError) as caught,
    ):
        harness.infer({"X": np.zeros((1, 2), np.float32)})
    assert caught.value.code == "INTERNAL"
    assert message in caught.value.message


def test_output_cast_policy_same_kind() -> None:
    model = make_model(lambda X: {"Y": X.astype(np.float64) + 0.5})
    with ModelHarness(model) as harness:
        out = harness.infer({"X": np.ones((1, 2), np.float32)})
    assert out["Y"].dtype == np.float32
    assert out["Y"].tolist() == [[1.5, 1.5]]

    refuses = make_model(lambda X: {"Y": X}, output=tp.Tensor("INT32", [2]))
    with ModelHarness(refuses) as harness, pytest.raises(tp.TritonRequestError) as caught:
        harness.infer({"X": np.ones((1, 2), np.float32)})
    assert "expected INT32, got FP32 (float32)" in caught.value.message
    assert ".astype(np.int32)" in caught.value.message


# -- declarations are checked early --------------------------------------------------------


def test_non_codec_declaration_is_refused_at_class_creation() -> None:
    with pytest.raises(tp.DeclarationError, match=r"inputs\['X'\] must be a codec"):

        class Bad(tp.Model):
            inputs = {"X": "FP32"}  # type: ignore[dict-item]


def test_infer_signature_must_accept_the_inputs() -> None:
    with pytest.raises(tp.DeclarationError, match=r"does not accept the declared inputs \['B'\]"):

        class Bad(tp.Model):
            inputs = {"A": tp.Tensor("FP32", [1]), "B": tp.Tensor("FP32", [1])}
            outputs = {"C": tp.Tensor("FP32", [1])}

            def infer(self, A: np.ndarray) -> Dict[str, Any]:
                return {"C": A}


def test_bf16_tensor_is_refused_with_a_fix() -> None:
    with pytest.raises(tp.DeclarationError, match=r"numpy has no BF16 type.*TorchTensor"):
        tp.Tensor("BF16", [4])


def test_optional_output_is_refused() -> None:
    with pytest.raises(tp.DeclarationError, match="outputs cannot be optional"):

        class Bad(tp.Model):
            outputs = {"Y": tp.Text(optional=True)}


def test_config_that_disagrees_with_the_class_fails_to_load(tmp_path: Path) -> None:
    config = {
        "input": [
            {"name": "A", "data_type": "TYPE_INT32", "dims": [4]},
        ]
    }
    with pytest.raises(tp.DeclarationError, match=r"TYPE_INT32"):
        ModelHarness(AddSub, config=config)


def test_config_batch_size_above_the_class_limit_fails_to_load() -> None:
    with pytest.raises(tp.DeclarationError, match=r"max_batch_size 64, above the class's"):
        ModelHarness(AddSub, config={"max_batch_size": 64})


def test_config_may_lower_the_batch_size() -> None:
    with ModelHarness(AddSub, config={"max_batch_size": 4}) as harness:
        assert harness.config["max_batch_size"] == 4
        out = harness.infer({"A": rows(4), "B": rows(4)})
    assert out["SUM"].shape == (4, 4)


def test_setup_sees_the_model_context(tmp_path: Path) -> None:
    seen: Dict[str, Any] = {}

    class Context(tp.Model):
        outputs = {"Y": tp.Tensor("INT32", [1])}

        def setup(self) -> None:
            seen.update(
                name=self.model_name,
                version=self.model_version,
                batched=self.batched,
                config=self.model_config["name"],
            )

        def infer(self) -> Dict[str, Any]:
            return {"Y": [1]}

    with ModelHarness(Context, name="ctx") as harness:
        assert harness.infer({})["Y"].tolist() == [1]
    assert seen == {"name": "ctx", "version": 1, "batched": False, "config": "ctx"}


def test_teardown_runs_on_close() -> None:
    closed: List[bool] = []

    class Closing(AddSub):
        def teardown(self) -> None:
            closed.append(True)

    harness = ModelHarness(Closing)
    harness.close()
    assert closed == [True]
