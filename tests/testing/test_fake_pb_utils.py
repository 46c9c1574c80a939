"""The fake pb_utils: each behaviour it claims, with the real server's messages (r24.10)."""

from __future__ import annotations

import ast
import json
import logging
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from tritonpy.testing import fake_pb_utils as pb

REAL_MODULE = (
    Path(__import__("sysconfig").get_paths()["purelib"])
    / "pytriton/tritonserver/backends/python/triton_python_backend_utils.py"
)

# Names of the real module's C++ part (c_python_backend_utils), measured in r24.10.
REAL_NATIVE_NAMES = [
    "InferenceRequest",
    "InferenceResponse",
    "Logger",
    "MetricFamily",
    "PreferredMemory",
    "TRITONSERVER_MEMORY_CPU",
    "TRITONSERVER_MEMORY_GPU",
    "Tensor",
    "TritonError",
    "TritonModelException",
    "get_model_dir",
    "is_model_ready",
    "load_model",
    "unload_model",
]


@pytest.fixture(autouse=True)
def _clean():
    pb.reset()
    yield
    pb.reset()


# -- surface ------------------------------------------------------------------------------


def _real_module_source() -> str:
    """The real module's source; without nvidia-pytriton the comparison cannot run: skipped on
    an install without the server extra, a failure in CI (which must run it)."""
    if not REAL_MODULE.is_file():
        missing = pytest.fail if os.environ.get("CI") else pytest.skip
        missing(
            f"the real triton_python_backend_utils.py is missing at {REAL_MODULE}: install "
            f"nvidia-pytriton (pip install 'tritonpy[server]') to compare the fake with it"
        )
    return REAL_MODULE.read_text()


def _real_public_names() -> set:
    tree = ast.parse(_real_module_source())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_")}


@pytest.mark.pytriton
def test_every_public_name_of_the_real_module_exists_in_the_fake():
    real = _real_public_names()
    assert "serialize_byte_tensor" in real and "ModelConfig" in real  # parsed the right file
    missing = sorted(n for n in real | set(REAL_NATIVE_NAMES) if not hasattr(pb, n))
    assert missing == []


@pytest.mark.pytriton
def test_model_config_methods_match_the_real_class():
    tree = ast.parse(_real_module_source())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelConfig"]
    methods = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
    assert methods <= set(dir(pb.ModelConfig))


def test_object_methods_match_the_measured_real_ones():
    for attr in [
        "as_numpy",
        "from_dlpack",
        "is_cpu",
        "name",
        "shape",
        "to_dlpack",
        "triton_dtype",
        "__dlpack__",
        "__dlpack_device__",
    ]:
        assert hasattr(pb.Tensor, attr)
    for attr in [
        "async_exec",
        "correlation_id",
        "exec",
        "flags",
        "get_response_sender",
        "inputs",
        "is_cancelled",
        "parameters",
        "request_id",
        "requested_output_names",
        "set_flags",
        "set_release_flags",
        "timeout",
        "trace",
    ]:
        assert hasattr(pb.InferenceRequest, attr)
    for attr in ["error", "has_error", "output_tensors"]:
        assert hasattr(pb.InferenceResponse, attr)
    for attr in [
        "ERROR",
        "INFO",
        "LogLevel",
        "VERBOSE",
        "WARNING",
        "log",
        "log_error",
        "log_info",
        "log_verbose",
        "log_warn",
    ]:
        assert hasattr(pb.Logger, attr)


def test_constants():
    assert pb.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START == 1
    assert pb.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END == 2
    assert pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL == 1
    assert pb.TRITONSERVER_REQUEST_RELEASE_ALL == 1
    assert pb.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE == 2
    assert int(pb.TRITONSERVER_MEMORY_CPU) == 1 and int(pb.TRITONSERVER_MEMORY_GPU) == 0


# -- TritonError --------------------------------------------------------------------------


def test_triton_error_codes_are_the_servers():
    names = [
        "UNKNOWN",
        "INTERNAL",
        "NOT_FOUND",
        "INVALID_ARG",
        "UNAVAILABLE",
        "UNSUPPORTED",
        "ALREADY_EXISTS",
        "CANCELLED",
    ]
    assert [int(getattr(pb.TritonError, n)) for n in names] == list(range(8))
    assert [pb.error_code_name(i) for i in range(8)] == names
    err = pb.TritonError("boom")
    assert err.message() == "boom"
    assert err.code() == pb.TritonError.INTERNAL
    bad = pb.TritonError("x", pb.TritonError.INVALID_ARG)
    assert bad.code().name == "INVALID_ARG" and bad.code_name() == "INVALID_ARG"
    with pytest.raises(TypeError):
        pb.TritonError("x", 99)


def test_triton_model_exception_is_plain():
    assert issubclass(pb.TritonModelException, Exception)


# -- Tensor -------------------------------------------------------------------------------


def test_tensor_basics():
    t = pb.Tensor("X", np.arange(6, dtype=np.float32).reshape(2, 3))
    assert t.name() == "X"
    assert t.shape() == [2, 3]
    assert t.is_cpu() is True
    assert t.triton_dtype() == 11
    assert t.as_numpy().dtype == np.float32
    assert pb.Tensor("b", np.array([b"a"], dtype=object)).triton_dtype() == 13
    assert pb.Tensor("b", np.array([True])).triton_dtype() == 1


def test_tensor_refuses_unicode_arrays_like_the_real_one():
    with pytest.raises(pb.TritonModelException, match=r"NumPy dtype is not supported\."):
        pb.Tensor("S", np.array(["a", "b"]))


def test_tensor_makes_strided_views_contiguous():
    view = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    t = pb.Tensor("X", view)
    assert t.as_numpy().flags.c_contiguous
    np.testing.assert_array_equal(t.as_numpy(), view)


def test_bytes_tensor_keeps_trailing_nuls():
    data = np.array([b"a\x00\x00", b"", b"\xff"], dtype=object)
    t = pb.Tensor("S", data)
    assert t.as_numpy().tolist() == [b"a\x00\x00", b"", b"\xff"]


def test_dlpack_roundtrip_with_numpy():
    src = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = pb.Tensor.from_dlpack("X", src)
    assert np.shares_memory(t.as_numpy(), src)
    back = np.from_dlpack(t)
    np.testing.assert_array_equal(back, src)
    assert t.__dlpack_device__() == (1, 0)
    capsule = t.to_dlpack()
    assert type(capsule).__name__ == "PyCapsule"
    from_capsule = pb.Tensor.from_dlpack("Y", capsule)
    np.testing.assert_array_equal(from_capsule.as_numpy(), src)


def test_from_dlpack_refuses_non_contiguous():
    with pytest.raises(pb.TritonModelException, match="DLPack tensor is not contiguous"):
        pb.Tensor.from_dlpack("X", np.arange(6).reshape(2, 3).T)


@pytest.mark.torch
def test_dlpack_with_torch():
    torch = pytest.importorskip("torch", reason="needs PyTorch: pip install 'tritonpy[torch]'")

    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = pb.Tensor.from_dlpack("T", x)
    assert t.as_numpy().tolist() == x.tolist()
    y = torch.from_dlpack(pb.Tensor("U", np.ones(3, np.float32)))
    assert y.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(pb.TritonModelException, match="not contiguous"):
        pb.Tensor.from_dlpack("T", x.t())


def test_bytes_tensor_has_no_dlpack():
    with pytest.raises(pb.TritonModelException):
        pb.Tensor("S", np.array([b"x"], dtype=object)).to_dlpack()


# -- serialize / deserialize --------------------------------------------------------------


@pytest.mark.parametrize(
    "items",
    [
        [b"hello", b"world"],
        [b"", b"", b"x"],
        [b"a\x00b", b"\x00"],
        [b"trailing\x00\x00"],
        [b"\xff\xfe\x00\x80"],
        ["text", "é"],
    ],
)
def test_serialize_deserialize_roundtrip(items):
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    data = pb.serialize_byte_tensor(arr)
    expected = [i.encode("utf-8") if isinstance(i, str) else i for i in items]
    assert data == b"".join(struct.pack("<I", len(e)) + e for e in expected)
    assert pb.deserialize_bytes_tensor(data).tolist() == expected
    assert pb.deserialize_bytes_tensor(np.frombuffer(data, np.uint8)).tolist() == expected


def test_serialize_edge_cases_match_the_real_function():
    assert pb.serialize_byte_tensor(np.array([], dtype=object)) == ()
    assert pb.serialize_byte_tensor(np.array([1, 2], dtype=np.int32)) is None
    assert (
        pb.serialize_byte_tensor(np.array([b"ab", b"c"])) == b"\x02\x00\x00\x00ab\x01\x00\x00\x00c"
    )
    two_d = np.array([[b"a", b"b"], [b"c", b"d"]], dtype=object)
    assert pb.deserialize_bytes_tensor(pb.serialize_byte_tensor(two_d)).tolist() == [
        b"a",
        b"b",
        b"c",
        b"d",
    ]
    assert pb.serialize_byte_tensor(np.array([7], dtype=object)) == b"\x01\x00\x00\x007"
    out = pb.deserialize_bytes_tensor(b"")
    assert out.dtype == object and out.shape == (0,)
    with pytest.raises(struct.error):
        pb.deserialize_bytes_tensor(b"\x05\x00\x00\x00ab")


# -- dtype maps ---------------------------------------------------------------------------


def test_dtype_maps():
    assert pb.triton_string_to_numpy("TYPE_FP32") is np.float32
    assert pb.triton_string_to_numpy("TYPE_STRING") is np.object_
    assert pb.TRITON_STRING_TO_NUMPY["TYPE_BOOL"] is bool
    assert [pb.triton_to_numpy_type(i) for i in (1, 8, 11, 13)] == [
        np.bool_,
        np.int32,
        np.float32,
        np.object_,
    ]
    assert pb.triton_to_numpy_type(14) is None  # BF16: no numpy type
    assert pb.numpy_to_triton_type(np.float16) == 10
    assert pb.numpy_to_triton_type(np.dtype("float64")) == 12
    assert pb.numpy_to_triton_type(np.bytes_) == 13
    assert pb.numpy_to_triton_type(np.object_) == 13
    assert pb.numpy_to_triton_type(np.complex64) is None
    with pytest.raises(KeyError):
        pb.triton_string_to_numpy("TYPE_BF16")


def test_config_lookup_helpers():
    cfg = {"input": [{"name": "A"}], "output": [{"name": "B"}]}
    assert pb.get_input_config_by_name(cfg, "A") == {"name": "A"}
    assert pb.get_input_config_by_name(cfg, "B") is None
    assert pb.get_output_config_by_name(cfg, "B") == {"name": "B"}
    assert pb.get_output_config_by_name({}, "B") is None
    assert pb.using_decoupled_model_transaction_policy({}) is False
    assert (
        pb.using_decoupled_model_transaction_policy(
            {"model_transaction_policy": {"decoupled": True}}
        )
        is True
    )


# -- requests and responses ---------------------------------------------------------------


def test_request_defaults_and_lookup():
    t = pb.Tensor("X", np.ones(2, np.float32))
    r = pb.InferenceRequest(model_name="m", inputs=[t], requested_output_names=["Y"])
    assert (r.request_id(), r.correlation_id(), r.flags(), r.timeout()) == ("", 0, 0, 0)
    assert r.parameters() == "{}"
    assert r.requested_output_names() == {"Y"}
    assert pb.get_input_tensor_by_name(r, "X") is t
    assert pb.get_input_tensor_by_name(r, "Z") is None
    assert r.is_cancelled() is False
    r.cancel_as_client()
    assert r.is_cancelled() is True
    assert json.loads(pb.InferenceRequest(parameters={"a": 1, "b": "s"}).parameters()) == {
        "a": 1,
        "b": "s",
    }
    r.set_release_flags(pb.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
    assert r.release_flags() == 2


def test_bls_to_an_unknown_model_is_the_servers_error_response():
    r = pb.InferenceRequest(model_name="other", inputs=[], requested_output_names=[])
    # measured on tritonserver 24.10: an error response (code INTERNAL), not an exception
    answer = r.exec()
    assert answer.has_error()
    assert answer.error().code() == pb.ErrorCode.INTERNAL
    assert answer.error().message() == (
        "Model other - Error when running inference: Failed for execute the inference request. "
        "Model 'other' is not ready."
    )
    (streamed,) = list(r.exec(decoupled=True))
    assert streamed.error().message() == answer.error().message()
    pb.register_bls_model(
        "other",
        lambda req: pb.InferenceResponse([pb.Tensor("Y", np.array([len(req.inputs())], np.int32))]),
    )
    resp = r.exec()
    assert pb.get_output_tensor_by_name(resp, "Y").as_numpy().tolist() == [0]
    assert pb.is_model_ready("other") and not pb.is_model_ready("nosuch")
    with pytest.raises(pb._errors.ServerAbort, match="failed to poll from model repository"):
        pb.load_model("nosuch")


def test_response_snapshots_output_data():
    arr = np.array([1, 2, 3], np.int32)
    resp = pb.InferenceResponse([pb.Tensor("Y", arr)])
    arr[:] = 0
    assert pb.get_output_tensor_by_name(resp, "Y").as_numpy().tolist() == [1, 2, 3]
    assert resp.has_error() is False and resp.error() is None
    assert pb.get_output_tensor_by_name(resp, "Z") is None


def test_error_response():
    resp = pb.InferenceResponse(error=pb.TritonError("x", pb.TritonError.NOT_FOUND))
    assert resp.has_error() and resp.error().message() == "x"
    assert resp.output_tensors() == []
    with pytest.raises(TypeError):
        pb.InferenceResponse(error="not an error")
    with pytest.raises(TypeError):
        pb.InferenceResponse([np.ones(2)])


def test_response_sender_rules():
    r = pb.InferenceRequest()
    sender = r.get_response_sender()
    assert sender is r.get_response_sender()
    assert sender.is_cancelled() is False
    with pytest.raises(pb.TritonModelException, match="must be provided when the response flags"):
        sender.send()
    sender.send(pb.InferenceResponse([pb.Tensor("Y", np.array([1], np.int32))]))
    sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    with pytest.raises(pb.TritonModelException, match="Response sender has been closed"):
        sender.send(pb.InferenceResponse([]))
    with pytest.raises(pb.TritonModelException, match="Response sender has been closed"):
        sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert [f for _, f in sender.sent] == [0, 1]
    r.cancel_as_client()
    assert sender.is_cancelled() is True


def test_sender_snapshots_at_send():
    arr = np.array([5], np.int32)
    sender = pb.InferenceRequest().get_response_sender()
    sender.send(pb.InferenceResponse([pb.Tensor("Y", arr)]))
    arr[0] = 6
    assert sender.sent[0][0].output_tensors()[0].as_numpy().tolist() == [5]


# -- logger -------------------------------------------------------------------------------


def test_logger_records_and_logs(caplog):
    caplog.set_level(logging.DEBUG, logger="tritonpy.fake_pb_utils")
    pb.Logger.log_info("i")
    pb.Logger.log_warn("w")
    pb.Logger.log_error("e")
    pb.Logger.log_verbose("v")
    pb.Logger.log("x", pb.Logger.WARNING)
    pb.Logger.log("y", pb.LogLevel.ERROR)
    assert [(r.level.name, r.message) for r in pb.log_records] == [
        ("INFO", "i"),
        ("WARNING", "w"),
        ("ERROR", "e"),
        ("VERBOSE", "v"),
        ("WARNING", "x"),
        ("ERROR", "y"),
    ]
    assert [r.levelno for r in caplog.records] == [
        logging.INFO,
        logging.WARNING,
        logging.ERROR,
        logging.DEBUG,
        logging.WARNING,
        logging.ERROR,
    ]
    pb.clear_logs()
    assert pb.log_records == []


# -- metrics ------------------------------------------------------------------------------


def test_counter():
    family = pb.MetricFamily("req_total", "requests", pb.MetricFamily.COUNTER)
    m = family.Metric({"a": "b"})
    m.increment(2)
    assert m.value() == 2.0


# The server refuses these; 24.10 sometimes raises its message in the model and sometimes
# aborts the whole server (measured): the fake raises ServerAbort, quoting the message.
REFUSED = [
    ("COUNTER", "increment", -1, "can only be incremented monotonically"),
    ("COUNTER", "set", 5, "COUNTER does not support Set"),
    ("COUNTER", "observe", 5, "COUNTER does not support Observe"),
    ("GAUGE", "observe", 1, "GAUGE does not support Observe"),
    ("HISTOGRAM", "increment", 1, "HISTOGRAM does not support Increment"),
    ("HISTOGRAM", "set", 1, "HISTOGRAM does not support Set"),
]


@pytest.mark.parametrize("kind, op, value, server_says", REFUSED)
def test_metric_operations_the_server_refuses(kind, op, value, server_says):
    family = pb.MetricFamily(f"refused_{kind.lower()}", "d", getattr(pb.MetricFamily, kind))
    metric = family.Metric(buckets=[1.0]) if kind == "HISTOGRAM" else family.Metric()
    with pytest.raises(pb._errors.ServerAbort) as aborted:
        getattr(metric, op)(value)
    assert server_says in str(aborted.value)
    assert "may abort instead, ending the whole server process" in str(aborted.value)


def test_gauge_and_histogram():
    gauges = pb.MetricFamily("temp", "t", pb.MetricFamily.GAUGE)
    g = gauges.Metric()
    g.increment(2)
    g.increment(-5)
    assert g.value() == -3.0
    g.set(7.5)
    assert g.value() == 7.5
    fam = pb.MetricFamily("lat", "l", pb.MetricFamily.HISTOGRAM)
    with pytest.raises(pb.TritonModelException, match="Missing required buckets"):
        fam.Metric(labels={"a": "b"})
    h = fam.Metric(labels={"a": "b"}, buckets=[1.0, 2.0])
    h.observe(1.5)
    assert h.observations == [1.5]
    with pytest.raises(pb._errors.ServerAbort, match="HISTOGRAM does not support Value"):
        h.value()
    with pytest.raises(pb.TritonModelException, match="Unexpected buckets found"):
        pb.MetricFamily("c2", "c", pb.MetricFamily.COUNTER).Metric(buckets=[1.0])


def test_metric_family_rules():
    first = pb.MetricFamily("fam", "d", pb.MetricFamily.COUNTER)
    with pytest.raises(pb.TritonModelException, match="already exists with different type"):
        pb.MetricFamily("fam", "d", pb.MetricFamily.GAUGE)
    with pytest.raises(pb.TritonModelException, match="Invalid metric name"):
        pb.MetricFamily("bad name", "d", pb.MetricFamily.GAUGE)
    # two live families of one name share their metrics
    second = pb.MetricFamily("fam", "d", pb.MetricFamily.COUNTER)
    a, b = first.Metric({"k": "v"}), second.Metric({"k": "v"})
    a.increment(1)
    assert b.value() == 1.0


def test_a_deleted_family_clears_its_metrics_as_in_the_stub():
    # measured on tritonserver 24.10: a Metric whose MetricFamily object was deleted refuses
    # every operation; a family made again later starts from zero
    orphan = pb.MetricFamily("gone_total", "d", pb.MetricFamily.COUNTER).Metric({"k": "v"})
    with pytest.raises(pb.TritonModelException) as cleared:
        orphan.value()
    assert str(cleared.value) == (
        "Failed to get metric value: Invalid metric operation as the corresponding "
        "'MetricFamily' has been deleted. The 'MetricFamily' object should be deleted AFTER "
        "its corresponding 'Metric' objects have been deleted."
    )
    with pytest.raises(pb.TritonModelException, match=r"^Failed to increment metric value: Inv"):
        orphan.increment(1)
    family = pb.MetricFamily("gone_total", "d", pb.MetricFamily.COUNTER)
    counter = family.Metric({"k": "v"})
    counter.increment(2)
    del family
    assert "gone_total" not in pb._families
    again = pb.MetricFamily("gone_total", "d", pb.MetricFamily.GAUGE)  # another kind: allowed
    assert again.Metric({"k": "v"}).value() == 0.0


# -- ModelConfig (auto-complete) ----------------------------------------------------------


def _mc(**extra):
    cfg = {"name": "m", "max_batch_size": 0, "input": [], "output": []}
    cfg.update(extra)
    return pb.ModelConfig(json.dumps(cfg))


def test_model_config_happy_path():
    mc = _mc()
    mc.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [4], "optional": True})
    mc.add_output({"name": "B", "data_type": "TYPE_FP32", "dims": [4]})
    mc.set_max_batch_size(8)
    mc.set_dynamic_batching()
    mc.set_model_transaction_policy({"decoupled": False})
    d = mc.as_dict()
    assert d["max_batch_size"] == 8 and d["dynamic_batching"] == {}
    assert d["input"][0]["optional"] is True and d["output"][0]["name"] == "B"
    assert d["model_transaction_policy"] == {"decoupled": False}


def test_model_config_merges_with_existing_entries():
    mc = _mc(input=[{"name": "A", "data_type": "TYPE_INVALID", "dims": []}])
    mc.add_input({"name": "A", "data_type": "TYPE_INT32", "dims": [2]})
    assert mc.as_dict()["input"] == [{"name": "A", "data_type": "TYPE_INT32", "dims": [2]}]


def test_model_config_errors_carry_the_real_messages():
    with pytest.raises(ValueError) as e:
        _mc(max_batch_size=8).set_max_batch_size(4)
    assert str(e.value) == (
        "configuration specified max_batch_size 8, but in auto-complete-config function for "
        "model 'm' specified max_batch_size 4"
    )
    with pytest.raises(ValueError) as e:
        _mc(sequence_batching={}).set_dynamic_batching()
    assert str(e.value) == (
        "Configuration specified scheduling_choice as 'sequence_batching', but "
        "auto-complete-config function for model 'm' tries to set scheduling_choice as "
        "'dynamic_batching'"
    )
    with pytest.raises(ValueError) as e:
        _mc().add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [1], "x": 1})
    assert str(e.value) == (
        "input 'A' in auto-complete-config function for model 'm' contains property other "
        "than 'name', 'data_type', 'dims' and 'optional'."
    )
    with pytest.raises(ValueError) as e:
        _mc().add_output({"name": "B", "data_type": "TYPE_FP32", "dims": [1], "optional": 1})
    assert str(e.value) == (
        "output 'B' in auto-complete-config function for model 'm' contains property other "
        "than 'name', 'data_type' and 'dims'."
    )
    with pytest.raises(
        ValueError,
        match=(
            r"^input in auto-complete-config function for model 'm' is missing "
            r"'name' property\.$"
        ),
    ):
        _mc().add_input({"data_type": "TYPE_FP32", "dims": [1]})
    with pytest.raises(ValueError, match="is missing 'dims' property"):
        _mc().add_input({"name": "A", "data_type": "TYPE_FP32"})
    existing = _mc(input=[{"name": "A", "data_type": "TYPE_FP32", "dims": [4]}])
    with pytest.raises(ValueError) as e:
        existing.add_input({"name": "A", "data_type": "TYPE_INT32", "dims": [4]})
    assert str(e.value) == (
        "unable to load model 'm', configuration expects datatype TYPE_FP32 for input 'A', "
        "model provides TYPE_INT32"
    )
    with pytest.raises(ValueError) as e:
        existing.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [5]})
    assert str(e.value) == (
        "model 'm', tensor 'A': the model expects dims [5] but the model configuration "
        "specifies dims [4]"
    )
    with pytest.raises(ValueError, match="contains property other than 'decoupled'"):
        _mc().set_model_transaction_policy({"x": True})
    dec = _mc(model_transaction_policy={"decoupled": True})
    with pytest.raises(ValueError) as e:
        dec.set_model_transaction_policy({"decoupled": False})
    assert str(e.value) == (
        "trying to change decoupled property in auto-complete-config for model 'm', which is "
        "already set to 'True'."
    )


@pytest.mark.pytriton
def test_model_config_messages_equal_the_real_module():
    """Run the same misuse on the real module's ModelConfig and compare messages."""
    import importlib.util

    _real_module_source()
    spec = importlib.util.spec_from_file_location("_real_pb_utils_py", REAL_MODULE)
    real = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real)
    base = {
        "name": "m",
        "max_batch_size": 2,
        "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [4], "optional": False}],
        "output": [{"name": "B", "data_type": "TYPE_FP32", "dims": [4]}],
        "ensemble_scheduling": {},
    }
    calls = [
        ("set_max_batch_size", 1),
        ("set_dynamic_batching",),
        ("add_input", {"name": "A", "data_type": "TYPE_INT8", "dims": [4]}),
        ("add_input", {"name": "A", "data_type": "TYPE_FP32", "dims": [3]}),
        ("add_input", {"name": "A", "data_type": "TYPE_FP32", "dims": [4], "optional": True}),
        ("add_input", {"name": "A", "dims": [4]}),
        ("add_output", {"name": "B", "data_type": "TYPE_INT8", "dims": [4]}),
        ("add_output", {"name": "B", "data_type": "TYPE_FP32", "dims": [2]}),
        ("add_output", {"name": "B", "data_type": "TYPE_FP32"}),
        ("set_model_transaction_policy", {"other": 1}),
    ]
    for name, *args in calls:
        messages = []
        for module in (real, pb):
            with pytest.raises(ValueError) as e:
                getattr(module.ModelConfig(json.dumps(base)), name)(*args)
            messages.append(str(e.value))
        assert messages[0] == messages[1], name
