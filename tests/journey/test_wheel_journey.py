"""The user's journey, from the wheel, outside the checkout.

The wheel is built from a clean copy of this checkout and installed into a fresh virtualenv in
a temporary folder; every command then runs there with that virtualenv's ``tritonpy`` and the
files the wheel carries, never this repository's:

``new`` (every template) -> a user's model tested with ``ModelHarness`` under pytest ->
``config --check`` -> ``check`` -> ``pack-env --python 3.10`` (an image model, empty spec) ->
``serve`` (the model answers from Python 3.10 and decodes an image) -> ``infer`` ->
``export --triton-version 24.10`` -> the exported repository copied elsewhere and served.

Each step's time is written to ``build/journey-timings.json`` (the closing notes quote it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import numpy as np
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = [
    "bls_router",
    "classification_postprocess",
    "detection_postprocess",
    "ensemble_classifier",
    "image_preprocess",
    "minimal",
    "online_normalizer",
    "text_stream",
    "torch_model",
]
# what pip should not look at when installing the wheel: nothing of this checkout
_COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "*.tar.gz"
)

USER_MODEL = '''
import sys

import numpy as np

import tritonpy as tp


class Thumbnail(tp.Model):
    """Decodes an image; reports its size, its mean colour and the Python that served it."""

    inputs = {"IMAGE": tp.Image(color="RGB")}
    outputs = {
        "SIZE": tp.Tensor("INT32", [2]),
        "MEAN": tp.Tensor("FP32", [3]),
        "PYTHON": tp.Text(),
    }
    max_batch_size = 8

    def infer(self, IMAGE):
        return {
            "SIZE": np.array([im.shape[:2] for im in IMAGE], np.int32),
            "MEAN": np.array([im.reshape(-1, 3).mean(axis=0) for im in IMAGE], np.float32),
            "PYTHON": [sys.version.split()[0]] * len(IMAGE),
        }


TritonPythonModel = Thumbnail
'''

USER_TEST = """
import cv2
import numpy as np

from tritonpy.testing import ModelHarness


def test_thumbnail_reads_size_and_colour():
    rgb = np.zeros((30, 40, 3), np.uint8)
    rgb[...] = (10, 20, 30)
    png = cv2.imencode(".png", rgb[:, :, ::-1])[1].tobytes()
    with ModelHarness("model_repository/thumb") as model:
        out = model.infer({"IMAGE": np.array([[png]], dtype=object)})
    assert out["SIZE"].tolist() == [[30, 40]]
    assert out["MEAN"].tolist() == [[10.0, 20.0, 30.0]]
"""


class Journey:
    """Runs commands in the fresh virtualenv from a folder outside the checkout, timing each
    step."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.work = home / "project"
        self.work.mkdir(parents=True)
        self.venv = home / "venv"
        self.timings: Dict[str, float] = {}
        self.env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "TRITONPY_TEMPLATES")
        }
        self.env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{self.env.get('PATH', '')}"
        self.env["PYTHONDONTWRITEBYTECODE"] = "1"

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        yield
        self.timings[name] = round(time.monotonic() - began, 1)

    def run(
        self, *argv: str, check: bool = True, timeout: float = 900, cwd: Optional[Path] = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            list(argv),
            cwd=cwd or self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{' '.join(argv)} exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}"
                f"\n--- stderr\n{done.stderr[-4000:]}"
            )
        return done

    def tritonpy(self, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return self.run(str(self.venv / "bin" / "tritonpy"), *args, **kwargs)  # type: ignore[arg-type]


def _free_ports(count: int) -> List[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@contextmanager
def _serving(journey: Journey, repository: Path) -> Iterator[int]:
    """``tritonpy serve REPOSITORY`` in the background until it prints that it serves; yields
    the gRPC port; Ctrl-C (SIGINT) at the end, as a user stops it."""
    http, grpc, metrics = _free_ports(3)
    argv = [
        str(journey.venv / "bin" / "tritonpy"),
        "serve",
        str(repository),
        "--http-port",
        str(http),
        "--grpc-port",
        str(grpc),
        "--metrics-port",
        str(metrics),
    ]
    log = journey.home / f"serve-{repository.parent.name}-{grpc}.out"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            argv,
            cwd=journey.work,
            env=journey.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 180
        while "serving; press Ctrl-C" not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"tritonpy serve {repository} did not start:\n{log.read_text()}"
                )
            time.sleep(0.2)
        yield grpc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, log.read_text()


def _png(rgb: np.ndarray) -> bytes:
    cv2 = pytest.importorskip("cv2", reason="the test makes its image with OpenCV")
    return bytes(cv2.imencode(".png", rgb[:, :, ::-1])[1].tobytes())


def _ask_thumbnail(grpc_port: int, png: bytes) -> Dict[str, np.ndarray]:
    import tritonclient.grpc as grpcclient

    with grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}") as client:
        data = grpcclient.InferInput("IMAGE", [1, 1], "BYTES")
        data.set_data_from_numpy(np.array([[png]], dtype=object))
        result = client.infer("thumb", [data])
        return {name: result.as_numpy(name) for name in ("SIZE", "MEAN", "PYTHON")}


_PIP_WHEEL = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]


def _build_wheel(destination: Path) -> Path:
    source = destination / "src"
    shutil.copytree(ROOT, source, ignore=_COPY_IGNORE)
    subprocess.run(
        [*_PIP_WHEEL, "-w", str(destination), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = destination.glob("tritonpy-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_carries_every_shipped_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for template in TEMPLATES:
        assert f"tritonpy/_data/model_templates/{template}/config.pbtxt" in names, template
    for shipped in ("envs/opencv.yml", "scripts/build_stub.sh", "Dockerfile.stub", "LICENSE"):
        assert f"tritonpy/_data/{shipped}" in names, shipped
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".tar.gz"))]
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "License-Expression: Apache-2.0" in text
    assert "Provides-Extra: testing" in text


def test_the_sdist_builds_the_same_wheel(wheel: Path, tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=_COPY_IGNORE)
    build = "from setuptools import build_meta; print(build_meta.build_sdist(%r))"
    made = subprocess.run(
        [sys.executable, "-c", build % str(tmp_path / "sdist")],
        cwd=source,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[-1]
    sdist = tmp_path / "sdist" / made
    with tarfile.open(sdist) as archive:
        members = {m.split("/", 1)[1] for m in archive.getnames() if "/" in m}
    for shipped in ("model_templates/torch_model/1/model.py", "envs/opencv.yml", "LICENSE"):
        assert shipped in members, shipped
    assert "scripts/build_stub.sh" in members and "Dockerfile.stub" in members
    subprocess.run(
        [*_PIP_WHEEL, "-w", str(tmp_path / "from-sdist"), str(sdist)],
        check=True,
        capture_output=True,
        text=True,
    )
    (rebuilt,) = (tmp_path / "from-sdist").glob("tritonpy-*.whl")
    assert sorted(zipfile.ZipFile(rebuilt).namelist()) == sorted(zipfile.ZipFile(wheel).namelist())


def _python_xy(text: str) -> str:
    return ".".join(text.split(".")[:2])


def test_journey_from_the_wheel(wheel: Path, tmp_path: Path) -> None:
    journey = Journey(tmp_path)
    timings_file = ROOT / "build" / "journey-timings.json"

    with journey.step("install the wheel into a fresh virtualenv"):
        journey.run(sys.executable, "-m", "venv", str(journey.venv), cwd=tmp_path)
        journey.run(
            str(journey.venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "-q",
            f"tritonpy[image,testing,server,torch] @ {wheel.as_uri()}",
            # the CPU build (a bare torch requirement resolves to a multi-GB CUDA build)
            "torch==2.13.0",
        )
        where = journey.run(
            str(journey.venv / "bin" / "python"), "-c", "import tritonpy; print(tritonpy.__file__)"
        ).stdout.strip()
        assert Path(where).is_relative_to(journey.venv), where

    with journey.step("new: every template"):
        listed = journey.tritonpy("new", "--list").stdout
        for template in TEMPLATES:
            assert template in listed
            journey.tritonpy("new", f"my_{template}", "--template", template, "--repo", "templates")
        for template in TEMPLATES:
            assert (journey.work / "templates" / f"my_{template}" / "config.pbtxt").is_file()
        # the ensemble came with its members: the rendered repository checks clean
        rendered = journey.tritonpy("check", "templates")
        assert " 0 errors" in rendered.stdout, rendered.stdout

    with journey.step("new NAME without --template: the minimal model passes its own test"):
        journey.tritonpy("new", "hello", "--repo", "starters")
        python = str(journey.venv / "bin" / "python")
        tested = journey.run(python, "-m", "pytest", "-q", str(journey.work / "starters" / "hello"))
        assert " passed" in tested.stdout and "failed" not in tested.stdout, tested.stdout

    repo = journey.work / "model_repository"
    model = repo / "thumb"
    with journey.step("a user's model tested with ModelHarness under pytest"):
        (model / "1").mkdir(parents=True)
        (model / "1" / "model.py").write_text(USER_MODEL)
        (model / "config.pbtxt").write_text('name: "thumb"\nbackend: "python"\n')
        (journey.work / "tests").mkdir()
        (journey.work / "tests" / "test_thumb.py").write_text(USER_TEST)
        tested = journey.run(str(journey.venv / "bin" / "python"), "-m", "pytest", "-q", "tests")
        assert "1 passed" in tested.stdout

    with journey.step("config --check and check"):
        journey.tritonpy("config", str(model), "--check")
        checked = journey.tritonpy("check", str(repo))
        assert "0 errors" in checked.stdout, checked.stdout

    with journey.step("pack-env --python 3.10 (image model, empty spec)"):
        packed = journey.tritonpy("pack-env", str(model), "--python", "3.10")
        archives = sorted(model.glob("*_py3.10.tar.gz"))
        assert archives, packed.stdout + packed.stderr
        assert "opencv-python-headless" in packed.stdout + packed.stderr

    rgb = np.zeros((30, 40, 3), np.uint8)
    rgb[...] = (10, 20, 30)
    png = _png(rgb)
    image_file = journey.work / "pixel.png"
    image_file.write_bytes(png)
    before = sorted(p.relative_to(model) for p in model.rglob("*") if "__pycache__" not in p.parts)

    with journey.step("serve + infer (Python 3.10 environment under the venv's server)"):
        with _serving(journey, repo) as grpc_port:
            answer = _ask_thumbnail(grpc_port, png)
            assert answer["SIZE"].tolist() == [[30, 40]]
            assert answer["MEAN"].tolist() == [[10.0, 20.0, 30.0]]
            assert _python_xy(answer["PYTHON"][0][0].decode()) == "3.10"
            shown = journey.tritonpy(
                "infer",
                "thumb",
                "--url",
                f"localhost:{grpc_port}",
                "--input",
                f"IMAGE=@{image_file}",
            ).stdout
            assert "SIZE" in shown and "30" in shown and "3.10" in shown, shown
    after = sorted(p.relative_to(model) for p in model.rglob("*") if "__pycache__" not in p.parts)
    assert after == before, "serve wrote into the user's model directory"

    with journey.step("export --triton-version 24.10"):
        journey.tritonpy("export", str(repo), "deploy", "--triton-version", "24.10")
        exported = journey.work / "deploy" / "model_repository"
        assert (exported / "thumb" / "config.pbtxt").is_file()
        assert "tritonserver:24.10-py3" in (journey.work / "deploy" / "Dockerfile").read_text()
        journey.tritonpy("check", str(exported), "--triton-version", "24.10")

    with journey.step("the exported repository, copied elsewhere, served"):
        elsewhere = tmp_path / "elsewhere" / "models"
        shutil.copytree(exported, elsewhere)
        shutil.rmtree(journey.work / "deploy")
        with _serving(journey, elsewhere) as grpc_port:
            again = _ask_thumbnail(grpc_port, png)
            assert again["SIZE"].tolist() == [[30, 40]]
            assert _python_xy(again["PYTHON"][0][0].decode()) == "3.10"

    timings_file.parent.mkdir(exist_ok=True)
    timings_file.write_text(json.dumps(journey.timings, indent=2) + "\n")
