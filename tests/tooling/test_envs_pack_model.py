"""pack-env for real (local builder, pyenv's CPython 3.10): an environment holds what the model
needs. A tp.Image model with an EMPTY requirements.txt gets OpenCV, the running tritonpy and its
model.py imported during verification; a model importing a package nobody asked for fails the
pack, naming that package, and leaves the model directory as it was."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

import tritonpy
from tritonpy._tooling.archives import safe_extract
from tritonpy._tooling.env_archives import read_record
from tritonpy.config import load_config
from tritonpy.envs import ArchiveError, PackResult, Reporter, pack_env

IMAGE_MODEL = """
import numpy as np

import tritonpy as tp


class Shape(tp.Model):
    inputs = {"IMAGE": tp.Image(color="RGB")}
    outputs = {"SHAPE": tp.Tensor("INT64", [3])}
    max_batch_size = 4

    def infer(self, IMAGE):
        return {"SHAPE": np.array([image.shape for image in IMAGE], np.int64)}


TritonPythonModel = Shape
"""

PLAIN_MODEL = """
import sklearn  # nobody put scikit-learn into the spec

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([]) for _ in requests]
"""

# runs with the environment's python: one real request through the model, decoded by OpenCV
# (the harness gets the class: reading config.pbtxt would need tritonclient, not in the env)
RUN_IN_ENV = """
import importlib.util, json, sys
import numpy as np
import cv2
from tritonpy.testing import ModelHarness, fake_pb_utils_installed
with fake_pb_utils_installed():
    spec = importlib.util.spec_from_file_location("model", sys.argv[1] + "/1/model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
png = cv2.imencode(".png", np.zeros((5, 7, 3), np.uint8))[1].tobytes()
with ModelHarness(module.TritonPythonModel, config={"max_batch_size": 4}) as harness:
    out = harness.infer({"IMAGE": np.array([[png]], dtype=object)})
print(json.dumps({"shape": out["SHAPE"].tolist(), "cv2": cv2.__file__}))
"""


class Notes(Reporter):
    def __init__(self) -> None:
        self.notes: List[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)


def _model(root: Path, name: str, source: str) -> Path:
    model = root / name
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(source)
    (model / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n')
    (model / "requirements.txt").write_text("")  # empty: the model's codecs decide
    return model


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, PackResult, Notes]:
    model = _model(tmp_path_factory.mktemp("image"), "shape", IMAGE_MODEL)
    notes = Notes()
    result = pack_env(
        model, python="3.10", builder="local", stub="never", compress_level=1, reporter=notes
    )
    return model, result, notes


def test_image_model_gets_opencv(packed: Tuple[Path, PackResult, Notes]) -> None:
    model, result, notes = packed
    assert result.added == ["opencv-python-headless>=4.5"]
    assert "added opencv-python-headless>=4.5 for tp.Image (input 'IMAGE')" in notes.notes
    assert result.verify is not None
    assert "cv2" in result.verify.modules
    assert "/lib/python3.10/site-packages/cv2/" in result.verify.modules["cv2"]
    entry = read_record(model)["shape_py3.10.tar.gz"]
    assert entry["added"] == ["opencv-python-headless>=4.5"]


def test_model_was_imported_inside_the_environment(
    packed: Tuple[Path, PackResult, Notes],
) -> None:
    _, result, _ = packed
    assert result.verify is not None
    assert result.verify.model_imported
    assert result.verify.codecs_checked == ["Image"]


def test_environment_runs_the_running_tritonpy(packed: Tuple[Path, PackResult, Notes]) -> None:
    model, result, _ = packed
    assert result.verify is not None
    assert result.verify.tritonpy_version == tritonpy.__version__
    assert read_record(model)["shape_py3.10.tar.gz"]["tritonpy"] == tritonpy.__version__


def test_first_request_decodes_the_image_in_the_environment(
    packed: Tuple[Path, PackResult, Notes], tmp_path: Path
) -> None:
    model, result, _ = packed
    env = safe_extract(result.archive, tmp_path / "env")
    clean: Dict[str, str] = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    command = f'source "{env}/bin/activate" && python3 -I -c "$0" "$1"'
    done = subprocess.run(
        ["bash", "-c", command, RUN_IN_ENV, str(model)],
        capture_output=True,
        text=True,
        env=clean,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["shape"] == [[5, 7, 3]]
    assert answer["cv2"].startswith(str(env))


def test_missing_import_fails_the_pack_naming_the_package(tmp_path: Path) -> None:
    model = _model(tmp_path, "plain", PLAIN_MODEL)
    before = sorted(p.name for p in model.iterdir())
    with pytest.raises(ArchiveError) as caught:
        pack_env(model, python="3.10", builder="local", stub="never", compress_level=1)
    message = str(caught.value)
    assert "plain/1/model.py imports the module 'sklearn'" in message
    assert "(scikit-learn)" in message and "requirements.txt" in message
    assert sorted(p.name for p in model.iterdir()) == before
    assert "EXECUTION_ENV_PATH" not in load_config(model / "config.pbtxt").parameters


def test_an_ensemble_is_refused_naming_its_members(tmp_path: Path) -> None:
    """An ensemble runs no Python: pack-env builds nothing and names the members to pack."""
    ensemble = tmp_path / "repo" / "pipe"
    (ensemble / "1").mkdir(parents=True)
    (ensemble / "config.pbtxt").write_text(
        'name: "pipe"\nplatform: "ensemble"\nensemble_scheduling { step [ { model_name: "pre" '
        'model_version: -1 input_map { key: "X" value: "X" } output_map { key: "Y" value: "Y" '
        "} } ] }\n"
    )
    from tritonpy._tooling.errors import EnvError

    with pytest.raises(EnvError, match="is an ensemble") as refused:
        pack_env(ensemble, python="3.10", builder="local")
    assert f"tritonpy pack-env {tmp_path / 'repo' / 'pre'}" in str(refused.value)
    assert sorted(p.name for p in ensemble.iterdir()) == ["1", "config.pbtxt"]
