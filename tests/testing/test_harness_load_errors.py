"""ModelHarness refuses to load what tritonserver refuses, with the server's words: a model.py
that does not parse or import, a backend other than "python", an EXECUTION_ENV_PATH naming a
missing file. The same broken models on the real server: tests/integration/
test_load_errors_agree.py."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Optional

import pytest

import tritonpy as tp
from tritonpy.testing import ModelHarness, ModelLoadError
from tritonpy.testing._load_checks import execution_env_path

PLAIN = textwrap.dedent(
    """\
    import triton_python_backend_utils as pb_utils


    class TritonPythonModel:
        def execute(self, requests):
            return [pb_utils.InferenceResponse([]) for _ in requests]
    """
)
IO = (
    'input [ { name: "X", data_type: TYPE_FP32, dims: [ 1 ] } ]\n'
    'output [ { name: "Y", data_type: TYPE_FP32, dims: [ 1 ] } ]\n'
)


def model_dir(root: Path, source: str = PLAIN, extra: str = "", name: str = "m") -> Path:
    directory = root / name
    (directory / "1").mkdir(parents=True)
    (directory / "1" / "model.py").write_text(source)
    (directory / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n{IO}{extra}')
    return directory


def load_error(model: Path) -> ModelLoadError:
    with pytest.raises(ModelLoadError) as caught:
        ModelHarness(model)
    return caught.value


def model_packages() -> set:
    return {name for name in sys.modules if name.startswith("_tritonpy_model_m_")}


# -- model.py that does not parse or import --------------------------------------------------


def test_a_syntax_error_names_file_and_line_and_chains_the_original(tmp_path: Path) -> None:
    broken = PLAIN.replace("def execute(self, requests):", "def execute(self, requests)")
    model = model_dir(tmp_path, broken)
    before = model_packages()
    error = load_error(model)
    model_py = model / "1" / "model.py"
    assert isinstance(error.__cause__, SyntaxError)
    server_text = f"SyntaxError: {error.__cause__}"  # "expected ':' (model.py, line 5)"
    assert error.failures == {"m": server_text}
    assert str(error) == (
        f"model 'm' failed to load: importing {model_py} raised {server_text} at {model_py}, "
        f"line 5; fix the syntax at that line (tritonserver refuses the model the same way)"
    )
    assert model_packages() == before  # nothing of the failed import stays imported


def test_a_syntax_error_in_a_sibling_module_names_the_sibling(tmp_path: Path) -> None:
    model = model_dir(tmp_path, "from .helpers import f\n" + PLAIN)
    (model / "1" / "helpers.py").write_text("def f(:\n    pass\n")
    error = load_error(model)
    assert f"at {model / '1' / 'helpers.py'}, line 1;" in str(error)
    assert error.failures["m"].startswith("SyntaxError: ")


def test_a_missing_package_names_the_import_line_and_how_to_install_it(tmp_path: Path) -> None:
    model = model_dir(tmp_path, '"""doc"""\n\nimport tritonpy_no_such_package_xyz\n' + PLAIN)
    before = model_packages()
    error = load_error(model)
    assert isinstance(error.__cause__, ModuleNotFoundError)
    text = "ModuleNotFoundError: No module named 'tritonpy_no_such_package_xyz'"
    assert error.failures == {"m": text}
    message = str(error)
    assert f"raised {text} at {model / '1' / 'model.py'}, line 3;" in message
    assert "install 'tritonpy_no_such_package_xyz' where the model runs" in message
    assert "tritonpy pack-env" in message and "or remove the import" in message
    assert model_packages() == before  # nothing of the failed import stays imported


@pytest.mark.parametrize(
    ("line", "kind", "fix"),
    [
        ("from os import no_such_name_xyz", "ImportError", "fix the import at that line"),
        ("RATE = 1 / 0", "ZeroDivisionError", "fix the error at that line"),
    ],
)
def test_other_import_failures_are_load_errors_too(
    tmp_path: Path, line: str, kind: str, fix: str
) -> None:
    error = load_error(model_dir(tmp_path, PLAIN + line + "\n"))
    assert type(error.__cause__).__name__ == kind
    assert error.failures["m"].startswith(f"{kind}: ")
    assert ", line 7;" in str(error) and fix in str(error)


def test_a_declaration_error_at_import_is_a_load_error_with_it_chained(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """\
        import tritonpy as tp


        class Bad(tp.Model):
            inputs = {"X": "not a codec"}
            outputs = {"Y": tp.Tensor("FP32", [1])}

            def infer(self, X):
                return {"Y": X}


        TritonPythonModel = Bad
        """
    )
    error = load_error(model_dir(tmp_path, source))
    assert isinstance(error.__cause__, tp.DeclarationError)
    assert error.failures["m"].startswith("DeclarationError: ")


# -- backend -----------------------------------------------------------------------------------

#: tritonserver's message (backend_model.cc, r24.10) for a backend it has no library for
NO_BACKEND = (
    "unable to find backend library for backend '{}', try specifying runtime on the model "
    "configuration."
)


def test_a_misspelt_backend_is_refused_with_the_server_message_and_a_did_you_mean(
    tmp_path: Path,
) -> None:
    model = model_dir(tmp_path, "open('imported', 'w').close()\n" + PLAIN)
    config = model / "config.pbtxt"
    config.write_text(config.read_text().replace('"python"', '"pyhton"'))
    error = load_error(model)
    assert error.failures == {"m": NO_BACKEND.format("pyhton")}
    assert str(error) == (
        f"model 'm' failed to load: {NO_BACKEND.format('pyhton')} (what tritonserver says); "
        f'did you mean backend: "python"? Correct it in config.pbtxt'
    )
    assert not (tmp_path / "imported").exists()  # model.py never ran, as in the server


def test_another_backend_is_refused_with_what_the_harness_runs(tmp_path: Path) -> None:
    class Plain:
        def execute(self, requests: list) -> list:
            return []

    with pytest.raises(ModelLoadError) as caught:
        ModelHarness(Plain, config={"backend": "onnxruntime"})
    assert caught.value.failures == {"Plain": NO_BACKEND.format("onnxruntime")}
    assert "the harness runs Python-backend models only" in str(caught.value)
    assert "needs a server with that backend" in str(caught.value)


# -- EXECUTION_ENV_PATH ------------------------------------------------------------------------


def env_param(value: str) -> str:
    return f'parameters {{ key: "EXECUTION_ENV_PATH" value {{ string_value: "{value}" }} }}\n'


def test_a_missing_execution_environment_is_refused_with_the_server_message(
    tmp_path: Path,
) -> None:
    model = model_dir(tmp_path, extra=env_param("$$TRITON_MODEL_DIRECTORY/env.tar.gz"))
    error = load_error(model)
    expected = f"Failed to get the canonical path for {model.resolve()}/env.tar.gz."
    assert error.failures == {"m": expected}
    message = str(error)
    assert message.startswith(f"model 'm' failed to load: {expected} (what tritonserver says)")
    assert "parameter EXECUTION_ENV_PATH is '$$TRITON_MODEL_DIRECTORY/env.tar.gz'" in message
    assert f"tritonpy pack-env {model.resolve()} --python X.Y" in message


def test_an_execution_environment_that_exists_loads(tmp_path: Path) -> None:
    model = model_dir(tmp_path, extra=env_param("$$TRITON_MODEL_DIRECTORY/env.tar.gz"))
    (model / "env.tar.gz").write_bytes(b"")  # the harness runs in the test's own Python
    with ModelHarness(model) as harness:
        assert harness.name == "m"


def test_an_absolute_missing_environment_path_is_named_as_written(tmp_path: Path) -> None:
    missing = tmp_path / "envs" / "py310.tar.gz"
    error = load_error(model_dir(tmp_path, extra=env_param(str(missing))))
    assert error.failures == {"m": f"Failed to get the canonical path for {missing}."}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("$$TRITON_MODEL_DIRECTORY/env.tar.gz", "/models/m/env.tar.gz"),
        ("/opt/env.tar.gz", "/opt/env.tar.gz"),
        # r24.10 replaces index + len(keyword) characters: after a prefix it eats more
        ("/x/$$TRITON_MODEL_DIRECTORY/env.tar.gz", "/x//models/mv.tar.gz"),
        ("", ""),
    ],
)
def test_execution_env_path_is_substituted_as_the_python_backend_does(
    value: str, expected: Optional[str]
) -> None:
    assert execution_env_path(value, Path("/models/m")) == expected
