"""A model that exits or ends its own process under the harness: a clear error, as Triton's
answers (measured on the real server by tests/integration/test_process_exit_real.py), never a
vanished or hung test run."""

from __future__ import annotations

import os
import signal
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tritonpy._runtime.errors import TritonRequestError
from tritonpy.testing import ModelHarness, ModelProcessDiedError

CONFIG = """name: "{name}"
backend: "python"
max_batch_size: 0
input {{ name: "X" data_type: TYPE_FP32 dims: [1] }}
output {{ name: "Y" data_type: TYPE_FP32 dims: [1] }}
"""


def _model(root: Path, name: str, body: str, *, where: str = "execute") -> Path:
    directory = root / name
    (directory / "1").mkdir(parents=True)
    (directory / "config.pbtxt").write_text(CONFIG.format(name=name))
    hook = "def initialize(self, args):" if where == "initialize" else "def initialize(self, a):"
    code = f"""
        import os, signal, sys
        import numpy as np
        import triton_python_backend_utils as pb_utils


        class TritonPythonModel:
            {hook}
                {body if where == "initialize" else "pass"}

            def execute(self, requests):
                {body if where == "execute" else "pass"}
                return [
                    pb_utils.InferenceResponse(
                        [pb_utils.Tensor("Y", np.ones(1, np.float32))]
                    )
                    for _ in requests
                ]
        """
    (directory / "1" / "model.py").write_text(textwrap.dedent(code))
    return directory


X = {"X": np.ones(1, np.float32)}


def test_sys_exit_in_execute_is_an_error_response_and_the_model_lives_on(tmp_path: Path) -> None:
    with ModelHarness(_model(tmp_path, "sysexit", "sys.exit(3)")) as model:
        for _ in range(2):
            with pytest.raises(TritonRequestError) as caught:
                model.infer(X)
            assert caught.value.code == "INTERNAL"
            assert caught.value.message.startswith(
                "Failed to process the request(s) for model 'sysexit_0', message: SystemExit: 3"
            )
            assert "model.py(12): execute" in caught.value.message


@pytest.mark.parametrize(
    ("body", "call"),
    [
        ("os._exit(3)", "os._exit(3)"),
        ("os.abort()", "os.abort()"),
        ("os.kill(os.getpid(), signal.SIGKILL)", "os.kill(os.getpid(), SIGKILL)"),
        ("signal.raise_signal(signal.SIGSEGV)", "signal.raise_signal(SIGSEGV)"),
    ],
)
def test_ending_the_process_in_execute_is_a_clear_harness_error(
    tmp_path: Path, body: str, call: str
) -> None:
    pid = os.getpid()
    with ModelHarness(_model(tmp_path, "gone", body)) as model:
        with pytest.raises(ModelProcessDiedError) as caught:
            model.infer(X)
        message = str(caught.value)
        assert f"model 'gone' ended its own process: {call} at model.py:12" in message
        assert "\"Stub process 'gone_0' is not healthy.\"" in message
        # as in Triton, the model answers nothing any more
        with pytest.raises(ModelProcessDiedError):
            model.infer(X)
    assert os.getpid() == pid  # still the same, living test process
    assert os._exit.__module__ == "posix" and os.kill.__module__ == "posix"  # restored


def test_ending_the_process_in_initialize_fails_the_load(tmp_path: Path) -> None:
    model = _model(tmp_path, "early", "os._exit(1)", where="initialize")
    with pytest.raises(ModelProcessDiedError, match=r"os._exit\(1\) at model.py:9"):
        ModelHarness(model)


def test_signals_to_other_processes_pass_through(tmp_path: Path) -> None:
    body = "os.kill(os.getppid(), 0)"  # signal 0: only checks the process exists
    with ModelHarness(_model(tmp_path, "probe", body)) as model:
        assert model.infer(X)["Y"].tolist() == [1.0]
    assert signal.SIGKILL  # the module is used by the parametrised bodies
