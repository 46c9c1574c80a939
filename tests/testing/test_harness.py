"""ModelHarness: loading, initialize args, request validation, batching, streams, teardown."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tritonpy._runtime.errors import TritonPyError, TritonRequestError
from tritonpy.testing import (
    HarnessError,
    ModelBugError,
    ModelHarness,
    ModelLoadError,
    fake_pb_utils,
    fake_pb_utils_installed,
    install_fake_pb_utils,
    uninstall_fake_pb_utils,
)

pytest_plugins = ["pytester"]

EXAMPLES = Path(__file__).parents[1] / "runtime" / "nvidia_examples"
PB = "triton_python_backend_utils"

pb = fake_pb_utils


class Doubler:
    """A plain TritonPythonModel-style class, using the fake module directly."""

    execute_sizes: list

    def initialize(self, args):
        self.args = args
        self.execute_sizes = []
        self.finalized = 0

    def execute(self, requests):
        self.execute_sizes.append(len(requests))
        responses = []
        for r in requests:
            x = pb.get_input_tensor_by_name(r, "X").as_numpy()
            if r.is_cancelled():
                responses.append(
                    pb.InferenceResponse(
                        error=pb.TritonError("cancelled", pb.TritonError.CANCELLED)
                    )
                )
                continue
            if (x < 0).any():
                responses.append(
                    pb.InferenceResponse(
                        error=pb.TritonError("negative", pb.TritonError.INVALID_ARG)
                    )
                )
                continue
            responses.append(pb.InferenceResponse([pb.Tensor("Y", x * 2)]))
        return responses

    def finalize(self):
        self.finalized += 1


DOUBLER_CONFIG = {
    "max_batch_size": 8,
    "dynamic_batching": {},
    "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": [-1]}],
    "output": [{"name": "Y", "data_type": "TYPE_FP32", "dims": [-1]}],
}


@pytest.fixture
def doubler():
    with ModelHarness(Doubler, config=DOUBLER_CONFIG) as h:
        yield h


# -- construction -------------------------------------------------------------------------


def test_from_directory_args_are_what_triton_passes():
    with ModelHarness(EXAMPLES / "add_sub") as h:
        args = h.model.initialized_with
        assert set(args) == {
            "model_config",
            "model_instance_kind",
            "model_instance_name",
            "model_instance_device_id",
            "model_repository",
            "model_version",
            "model_name",
        }
        assert all(isinstance(v, str) for v in args.values())
        assert args["model_instance_kind"] == "CPU"
        # an explicit unnamed instance_group: <model>_<group index>_<instance index> (measured
        # on tritonserver 24.10; without instance_group it is <model>_0)
        assert args["model_instance_name"] == "add_sub_0_0"
        assert args["model_instance_device_id"] == "0"
        assert args["model_repository"] == str((EXAMPLES / "add_sub").resolve())
        assert args["model_version"] == "1" and args["model_name"] == "add_sub"
        cfg = json.loads(args["model_config"])
        assert cfg == h.config
        assert cfg["input"][0]["dims"] == [4]  # int64 dims come back as ints
        assert cfg["instance_group"][0]["kind"] == "KIND_CPU"
        assert cfg["default_model_filename"] == "model.py"


def test_from_class_with_dict_config(doubler):
    assert doubler.name == "Doubler"
    assert doubler.config["max_batch_size"] == 8
    assert doubler.model.args["model_name"] == "Doubler"
    assert Path(doubler.model.args["model_repository"]).name == "Doubler"
    assert Path(doubler.model.args["model_repository"]).is_dir()


def test_from_class_with_name_and_gpu_kind():
    with ModelHarness(
        Doubler, config=DOUBLER_CONFIG, name="dbl", instance_kind="KIND_GPU", device_id=1
    ) as h:
        assert h.model.args["model_name"] == "dbl"
        assert h.model.args["model_instance_kind"] == "GPU"
        assert h.model.args["model_instance_device_id"] == "1"
        assert h.config["instance_group"][0]["gpus"] == [1]


def test_highest_version_is_picked(tmp_path):
    model = tmp_path / "m"
    for version, value in ((1, 1), (3, 3), (2, 2)):
        (model / str(version)).mkdir(parents=True)
        (model / str(version) / "model.py").write_text(
            textwrap.dedent(f"""
            import numpy as np
            import triton_python_backend_utils as pb_utils
            class TritonPythonModel:
                def execute(self, requests):
                    return [pb_utils.InferenceResponse(
                        [pb_utils.Tensor("Y", np.array([{value}], np.int32))]) for _ in requests]
        """)
        )
    (model / "10").mkdir()  # no model.py: ignored
    cfg = {
        "output": [{"name": "Y", "data_type": "TYPE_INT32", "dims": [1]}],
        "input": [{"name": "X", "data_type": "TYPE_INT32", "dims": [1]}],
    }
    x = {"X": np.array([0], np.int32)}
    with ModelHarness(model, config=cfg) as h:
        assert h.version == 3 and h.infer(x)["Y"].tolist() == [3]
    with ModelHarness(model, config=cfg, version=2) as h:
        assert h.infer(x)["Y"].tolist() == [2]
    with pytest.raises(ModelLoadError):
        ModelHarness(model, config=cfg, version=7)


def test_load_errors(tmp_path):
    with pytest.raises(ModelLoadError, match="does not exist"):
        ModelHarness(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="no version directory"):
        ModelHarness(tmp_path / "empty")
    with pytest.raises(ModelLoadError, match="must specify 'data_type'"):
        ModelHarness(Doubler, config={"input": [{"name": "X", "dims": [1]}]})
    with pytest.raises(ModelLoadError, match="must specify 'dims'"):
        ModelHarness(Doubler, config={"input": [{"name": "X", "data_type": "TYPE_FP32"}]})
    with pytest.raises(ModelLoadError, match="dynamic batching needs 'max_batch_size' > 0"):
        ModelHarness(Doubler, config={"dynamic_batching": {}})
    with pytest.raises(ModelLoadError, match="more than once"):
        ModelHarness(
            Doubler,
            config={
                "output": [
                    {"name": "Y", "data_type": "TYPE_FP32", "dims": [1]},
                    {"name": "Y", "data_type": "TYPE_FP32", "dims": [1]},
                ]
            },
        )


def test_config_pbtxt_text_is_parsed():
    text = 'name: "t" max_batch_size: 2 input [{ name: "X" data_type: TYPE_FP32 dims: [ -1 ] }]'
    with ModelHarness(Doubler, config=text) as h:
        assert h.name == "t" and h.config["input"][0]["dims"] == [-1]


def test_auto_complete_is_called_on_the_class():
    calls = []

    class Auto(Doubler):
        @staticmethod
        def auto_complete_config(cfg):
            calls.append(cfg.as_dict()["name"])
            cfg.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [-1]})
            cfg.add_output({"name": "Y", "data_type": "TYPE_FP32", "dims": [-1]})
            cfg.set_max_batch_size(4)
            return cfg

    with ModelHarness(Auto) as h:
        assert calls == ["Auto"]
        assert h.config["max_batch_size"] == 4
        assert h.infer({"X": np.ones((1, 2), np.float32)})["Y"].tolist() == [[2, 2]]

    class BadAuto(Doubler):
        @staticmethod
        def auto_complete_config(cfg):
            return None

    with pytest.raises(ModelLoadError, match="must return"):
        ModelHarness(BadAuto)


# -- requests -----------------------------------------------------------------------------


def test_request_validation_errors_match_the_server():
    with ModelHarness(EXAMPLES / "add_sub") as h:
        ok = np.ones(4, np.float32)

        def err(inputs, **kw):
            with pytest.raises(TritonRequestError) as e:
                h.infer(inputs, **kw)
            assert e.value.code == "INVALID_ARG"
            return e.value.message

        assert err({"INPUT0": ok}) == (
            "[request id: <id_unknown>] expected 2 inputs but got 1 inputs for model 'add_sub'. "
            "Got input(s) ['INPUT0'], but missing required input(s) ['INPUT1']. Please provide "
            "all required input(s)."
        )
        assert err({"INPUT0": ok}, request_id="abc").startswith("[request id: abc] expected 2")
        assert err({"INPUT0": ok, "INPUT1": ok, "FOO": ok}) == (
            "[request id: <id_unknown>] expected 2 inputs but got 3 inputs for model 'add_sub'. "
            "Got input(s) ['FOO','INPUT1','INPUT0'], but missing required input(s) ]. Please "
            "provide all required input(s)."
        )
        # no request id here: core r24.10 src/model.cc (Model::GetInput) words it alone
        assert err({"INPUT0": ok, "FOO": ok}) == (
            "unexpected inference input 'FOO' for model 'add_sub'"
        )
        assert err({"INPUT0": ok.astype(np.int32), "INPUT1": ok}) == (
            "[request id: <id_unknown>] inference input 'INPUT0' data-type is 'INT32', but model "
            "'add_sub' expects 'FP32'"
        )
        assert err({"INPUT0": np.ones(3, np.float32), "INPUT1": ok}) == (
            "[request id: <id_unknown>] unexpected shape for input 'INPUT0' for model 'add_sub'. "
            "Expected [4], got [3]. "
        )
        assert err({"INPUT0": np.ones((1, 4), np.float32), "INPUT1": ok}).endswith(
            "Expected [4], got [1,4]. "
        )
        assert err({"INPUT0": ok, "INPUT1": ok}, requested_outputs=["NOPE"]) == (
            "unexpected inference output 'NOPE' for model 'add_sub'"
        )


def test_batched_validation(doubler):
    with pytest.raises(TritonRequestError, match=r"batch-size must be <= 8 for 'Doubler'"):
        doubler.infer({"X": np.ones((9, 2), np.float32)})
    with pytest.raises(TritonRequestError) as e:
        doubler.infer({"X": np.ones((2, 2, 2), np.float32)})
    assert "Expected [-1,-1], got [2,2,2]. NOTE: Setting a non-zero max_batch_size" in str(e.value)
    with pytest.raises(TritonRequestError, match="has no shape but model requires batch"):
        doubler.infer({"X": np.float32(1)})
    with pytest.raises(TritonRequestError, match="input byte size mismatch"):
        doubler.infer({"X": np.ones((0, 2), np.float32)})


def test_values_are_converted_like_a_client():
    seen = []

    class Echo:
        def execute(self, requests):
            out = []
            for r in requests:
                s = pb.get_input_tensor_by_name(r, "S").as_numpy()
                seen.append((s.dtype, s.tolist(), r.parameters(), r.request_id()))
                out.append(
                    pb.InferenceResponse(
                        [pb.Tensor("T", s), pb.Tensor("U", np.array(["é", 3], dtype=object))]
                    )
                )
            return out

    cfg = {
        "input": [{"name": "S", "data_type": "TYPE_STRING", "dims": [-1]}],
        "output": [
            {"name": "T", "data_type": "TYPE_STRING", "dims": [-1]},
            {"name": "U", "data_type": "TYPE_STRING", "dims": [-1]},
        ],
    }
    with ModelHarness(Echo, config=cfg) as h:
        out = h.infer({"S": ["a", b"b\x00"]}, parameters={"p": 1, "q": "x"}, request_id="r1")
        assert out["T"].dtype == object and out["T"].tolist() == [b"a", b"b\x00"]
        assert out["U"].tolist() == ["é".encode(), b"3"]
        assert seen[-1] == (np.dtype(object), [b"a", b"b\x00"], '{"p":1,"q":"x"}', "r1")
        h.infer({"S": "text"})
        assert seen[-1][1] == [b"text"]
        with pytest.raises(
            TritonRequestError, match="data-type is 'INT64', but model 'Echo' expects 'BYTES'"
        ):
            h.infer({"S": [1, 2]})


def test_python_values_are_cast_to_the_declared_dtype():
    import tritonpy as tp

    seen = []

    class Typed(tp.Model):
        inputs = {
            "X": tp.Tensor("FP32", [-1]),
            "N": tp.Tensor("INT32", [1]),
            "WORDS": tp.Tensor("BYTES", [-1]),
        }
        outputs = {"SUM": tp.Tensor("FP32", [1])}
        max_batch_size = 4

        def infer(self, X, N, WORDS):
            seen.append((X.dtype, N.dtype, WORDS.dtype, WORDS.tolist()))
            return {"SUM": X.sum(axis=1, keepdims=True) + N}

    with ModelHarness(Typed) as h:
        out = h.infer({"X": [[1, 2]], "N": [[3]], "WORDS": [["a", b"b\x00"]]})
        assert out["SUM"].dtype == np.float32 and out["SUM"].tolist() == [[6.0]]
        assert seen[-1] == (
            np.dtype(np.float32),
            np.dtype(np.int32),
            np.dtype(object),
            [[b"a", b"b\x00"]],
        )
        # floats that are whole numbers fit an integer input; a fraction does not
        h.infer({"X": [[0.5]], "N": [[2.0]], "WORDS": [[b"w"]]})
        assert seen[-1][:2] == (np.dtype(np.float32), np.dtype(np.int32))
        with pytest.raises(
            HarnessError,
            match=r"input 'N': the values \[2.5\] do not fit the "
            r"declared data type INT32",
        ):
            h.infer({"X": [[1]], "N": [[2.5]], "WORDS": [[b"w"]]})
        # a numpy array is sent as it is, and the server refuses the wrong dtype
        with pytest.raises(
            TritonRequestError, match="data-type is 'FP64', but model 'Typed' expects 'FP32'"
        ):
            h.infer({"X": np.ones((1, 2)), "N": [[1]], "WORDS": [[b"w"]]})


def test_outputs_are_snapshots():
    class Mutates:
        def execute(self, requests):
            arr = np.array([1, 2], np.int32)
            resp = pb.InferenceResponse([pb.Tensor("Y", arr)])
            arr[:] = 0
            return [resp for _ in requests]

    cfg = {
        "input": [{"name": "X", "data_type": "TYPE_INT32", "dims": [1]}],
        "output": [{"name": "Y", "data_type": "TYPE_INT32", "dims": [2]}],
    }
    with ModelHarness(Mutates, config=cfg) as h:
        assert h.infer({"X": np.array([1], np.int32)})["Y"].tolist() == [1, 2]


def test_error_response_raises(doubler):
    with pytest.raises(TritonRequestError) as e:
        doubler.infer({"X": np.array([[-1.0]], np.float32)})
    assert (e.value.code, e.value.message) == ("INVALID_ARG", "negative")


def test_infer_requests_runs_one_execute(doubler):
    reqs = [
        {"X": np.ones((1, 2), np.float32)},
        {"X": np.full((2, 2), 3, np.float32)},
        {"X": np.full((1, 2), -1, np.float32)},
        {"X": np.ones((1, 2), np.int32)},  # rejected by the server: never reaches execute
        {"X": np.ones((1, 2), np.float32)},
    ]
    results = doubler.infer_requests(reqs, cancelled=[4])
    assert doubler.model.execute_sizes == [4]
    assert doubler.execute_calls == 1
    assert results[0]["Y"].tolist() == [[2, 2]]
    assert results[1]["Y"].tolist() == [[6, 6], [6, 6]]
    assert isinstance(results[2], TritonRequestError) and results[2].message == "negative"
    assert isinstance(results[3], TritonRequestError) and "data-type is 'INT32'" in str(results[3])
    assert isinstance(results[4], TritonRequestError) and results[4].code == "CANCELLED"


def test_execute_exception_becomes_internal_error():
    class Raises:
        def execute(self, requests):
            raise ValueError("raised in execute")

    cfg = {"input": [{"name": "X", "data_type": "TYPE_INT32", "dims": [1]}]}
    with ModelHarness(Raises, config=cfg) as h:
        with pytest.raises(TritonRequestError) as e:
            h.infer({"X": np.array([1], np.int32)})
        assert e.value.code == "INTERNAL"
        assert e.value.message.startswith(
            "Failed to process the request(s) for model 'Raises_0', message: ValueError: raised "
            "in execute"
        )
        assert isinstance(e.value.__cause__, ValueError)
        results = h.infer_requests([{"X": np.array([1], np.int32)}] * 2)
        assert all(isinstance(r, TritonRequestError) and r.code == "INTERNAL" for r in results)


@pytest.mark.parametrize(
    ("returned", "stub_text"),
    [
        (
            "[]",
            "Number of InferenceResponse objects do not match the number of InferenceRequest "
            "objects. InferenceRequest(s) size is:1, and InferenceResponse(s) size is:0\n",
        ),
        ("'x'", "Expected a list in the execute return, found type '<class 'str'>'."),
        (
            "[1]",
            "Expected an 'InferenceResponse' object in the execute function return list, "
            "found type '<class 'int'>'.",
        ),
    ],
)
def test_contract_violations_are_the_servers_error_responses(returned, stub_text):
    # the stub's texts (pb_stub.cc r24.10, ProcessReturnedResponses); tritonpy's explanation
    # follows in str(), never in the message a client or a BLS caller receives
    ns = {}
    exec(f"def execute(self, requests):\n    return {returned}\n", ns)
    Bad = type("Bad", (), {"execute": ns["execute"]})
    cfg = {"input": [{"name": "X", "data_type": "TYPE_INT32", "dims": [1]}]}
    with ModelHarness(Bad, config=cfg) as h, pytest.raises(TritonRequestError) as error:
        h.infer({"X": np.array([1], np.int32)})
    assert (error.value.code, error.value.message) == (
        "INTERNAL",
        f"Failed to process the request(s) for model 'Bad_0', message: {stub_text}",
    )
    assert "(tritonpy: " in str(error.value) and error.value.explanation
    assert isinstance(error.value, ModelBugError) and issubclass(ModelBugError, TritonPyError)


def test_non_decoupled_model_may_use_the_response_sender():
    class Sender:
        def execute(self, requests):
            for r in requests:
                s = r.get_response_sender()
                s.send(
                    pb.InferenceResponse([pb.Tensor("Y", np.array([7], np.int32))]),
                    flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                )
            return None

    cfg = {"input": [{"name": "X", "data_type": "TYPE_INT32", "dims": [1]}]}
    with ModelHarness(Sender, config=cfg) as h:
        assert h.infer({"X": np.array([1], np.int32)})["Y"].tolist() == [7]


def test_decoupled_stream_from_a_thread_and_missing_final():
    import threading

    class Threaded:
        def execute(self, requests):
            for r in requests:
                sender = r.get_response_sender()

                def work(sender=sender):
                    for i in range(3):
                        sender.send(pb.InferenceResponse([pb.Tensor("Y", np.array([i], np.int32))]))
                    sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

                threading.Thread(target=work).start()
            return None

    class NoFinal:
        def execute(self, requests):
            requests[0].get_response_sender().send(pb.InferenceResponse([]))

    cfg = {
        "model_transaction_policy": {"decoupled": True},
        "input": [{"name": "X", "data_type": "TYPE_INT32", "dims": [1]}],
    }
    x = {"X": np.array([1], np.int32)}
    with ModelHarness(Threaded, config=cfg) as h:
        assert [o["Y"].tolist() for o in h.infer_stream(x)] == [[0], [1], [2]]
        # as the server's HTTP endpoint answers a non-streaming request (measured, 24.10)
        with pytest.raises(TritonRequestError) as refused:
            h.infer(x)
        assert (refused.value.code, refused.value.message) == (
            "UNSUPPORTED",
            "HTTP end point doesn't support models with decoupled transaction policy",
        )
    with ModelHarness(NoFinal, config=cfg, stream_timeout=0.05) as h:
        with pytest.raises(ModelBugError, match="TRITONSERVER_RESPONSE_COMPLETE_FINAL"):
            h.infer_stream(x)


def test_async_execute():
    class AsyncModel:
        async def execute(self, requests):
            await asyncio.sleep(0)
            return [
                pb.InferenceResponse([pb.Tensor("Y", np.array([len(requests)], np.int32))])
                for _ in requests
            ]

    cfg = {"max_batch_size": 4, "input": [{"name": "X", "data_type": "TYPE_INT32", "dims": [1]}]}
    with ModelHarness(AsyncModel, config=cfg) as h:
        assert h.infer({"X": np.array([[1]], np.int32)})["Y"].tolist() == [1]
        results = h.infer_requests([{"X": np.array([[1]], np.int32)}] * 3)
        assert [r["Y"].tolist() for r in results] == [[3]] * 3

        async def inside_a_loop():
            return h.infer({"X": np.array([[1]], np.int32)})

        assert asyncio.run(inside_a_loop())["Y"].tolist() == [1]


def test_bls_to_another_harness():
    class Caller:
        def execute(self, requests):
            out = []
            for r in requests:
                bls = pb.InferenceRequest(
                    model_name="add_sub", inputs=r.inputs(), requested_output_names=["OUTPUT0"]
                )
                resp = bls.exec()
                out.append(
                    pb.InferenceResponse(
                        [pb.Tensor("Y", pb.get_output_tensor_by_name(resp, "OUTPUT0").as_numpy())]
                    )
                )
            return out

    cfg = {
        "input": [
            {"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]},
            {"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4]},
        ]
    }
    with ModelHarness(EXAMPLES / "add_sub") as target, ModelHarness(Caller, config=cfg) as h:
        h.register_bls_model("add_sub", target)
        x = np.ones(4, np.float32)
        assert h.infer({"INPUT0": x, "INPUT1": x})["Y"].tolist() == [2, 2, 2, 2]
    assert not pb.is_model_ready("add_sub")


# -- teardown and sys.modules -------------------------------------------------------------


def test_close_calls_finalize_once(doubler):
    doubler.close()
    doubler.close()
    assert doubler.model.finalized == 1
    assert doubler.closed
    with pytest.raises(TritonPyError, match="closed"):
        doubler.infer({"X": np.ones((1, 1), np.float32)})


def test_sys_modules_is_restored():
    sentinel = object()
    sys.modules[PB] = sentinel
    try:
        with ModelHarness(EXAMPLES / "add_sub") as h:
            assert sys.modules[PB] is sentinel
            h.infer({"INPUT0": np.ones(4, np.float32), "INPUT1": np.ones(4, np.float32)})
            assert sys.modules[PB] is sentinel
            assert h.module.pb_utils is fake_pb_utils  # the model keeps its reference
    finally:
        del sys.modules[PB]
    with ModelHarness(EXAMPLES / "add_sub"):
        pass
    assert PB not in sys.modules


def test_install_helpers():
    assert PB not in sys.modules
    with fake_pb_utils_installed() as module:
        import triton_python_backend_utils

        assert triton_python_backend_utils is module is fake_pb_utils
    assert PB not in sys.modules
    assert install_fake_pb_utils() is fake_pb_utils
    uninstall_fake_pb_utils()
    assert PB not in sys.modules


def test_lazy_import_inside_execute_works(tmp_path):
    (tmp_path / "lazy" / "1").mkdir(parents=True)
    (tmp_path / "lazy" / "1" / "helper.py").write_text("FACTOR = 3\n")
    (tmp_path / "lazy" / "1" / "model.py").write_text(
        textwrap.dedent("""
        class TritonPythonModel:
            def execute(self, requests):
                import triton_python_backend_utils as pb_utils
                from helper import FACTOR
                return [pb_utils.InferenceResponse([pb_utils.Tensor(
                    "Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy() * FACTOR)])
                    for r in requests]
    """)
    )
    cfg = {"input": [{"name": "X", "data_type": "TYPE_INT32", "dims": [1]}]}
    with ModelHarness(tmp_path / "lazy", config=cfg) as h:
        assert h.infer({"X": np.array([2], np.int32)})["Y"].tolist() == [6]
    sys.modules.pop("helper", None)


# -- pytest plugin ------------------------------------------------------------------------


def test_plugin_triton_model_fixture(triton_model):
    h = triton_model(EXAMPLES / "add_sub")
    h2 = triton_model(Doubler, config=DOUBLER_CONFIG)
    assert h.infer({"INPUT0": np.ones(4, np.float32), "INPUT1": np.ones(4, np.float32)})
    assert not h.closed and not h2.closed


def test_plugin_fake_pb_utils_fixture(fake_pb_utils):
    import triton_python_backend_utils

    assert triton_python_backend_utils is fake_pb_utils
    fake_pb_utils.Logger.log_info("hello")
    assert fake_pb_utils.log_records[-1].message == "hello"


def test_plugin_closes_harnesses(pytester):
    pytester.makepyfile(f"""
        import numpy as np
        MADE = []
        def test_a(triton_model, model_harness):
            MADE.append(triton_model({str(EXAMPLES / "add_sub")!r}))
            MADE.append(model_harness({str(EXAMPLES / "square")!r}))
        def test_b():
            assert [h.closed for h in MADE] == [True, True]
            assert MADE[0].model.finalized is True
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_a_missing_testing_dependency_names_the_testing_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tritonpy._runtime.errors import MissingDependencyError

    model = tmp_path / "m"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text("import tritonpy\n")
    (model / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    monkeypatch.setitem(sys.modules, "tritonclient.grpc", None)  # as if not installed
    with pytest.raises(MissingDependencyError) as caught:
        ModelHarness(model)
    assert "pip install 'tritonpy[testing]'" in str(caught.value)
