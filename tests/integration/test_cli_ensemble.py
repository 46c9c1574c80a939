"""The CLI journey on a real tritonserver: ``tritonpy new --template ensemble_classifier``
renders a repository that serves and answers an image through ``tritonpy infer``, and
``tritonpy infer`` sends JSON to a ``tp.JSON`` input (the conformance model cf_strings).

One server for the module: the rendered ensemble and its members, plus cf_strings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import cv2
import numpy as np
import pytest

from tritonpy.cli import main
from tritonpy.server import TritonServer

pytestmark = [pytest.mark.integration, pytest.mark.torch]

CONFORMANCE_MODELS = Path(__file__).parent / "conformance_models"


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = repository_builder(
        tmp_path_factory.mktemp("cli") / "repo", "cf_strings", source=CONFORMANCE_MODELS
    )
    assert main(["new", "clf", "--template", "ensemble_classifier", "--repo", str(repo)]) == 0
    return triton_server_factory(repo)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    status = main(list(argv))
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return captured.out


def test_the_rendered_ensemble_serves_and_answers_an_image(
    server: TritonServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert server.models_ready() == [
        "cf_strings",
        "clf",
        "clf_classifier",
        "clf_postprocess",
        "clf_preprocess",
    ]
    image = tmp_path / "digit.png"
    image.write_bytes(cv2.imencode(".png", np.eye(8, dtype=np.uint8) * 255)[1].tobytes())
    out = run(capsys, "infer", "clf", "--url", server.grpc_url, "--input", f"IMAGE=@{image}")
    lines = {line.split(" (")[0]: line for line in out.splitlines()}
    assert sorted(lines) == ["CLASS_IDS", "LABELS", "SCORES"]
    assert lines["LABELS"].startswith("LABELS (BYTES, shape [1, 3]): [['")
    assert lines["SCORES"].startswith("SCORES (FP32, shape [1, 3]): [[")

    document = json.loads(
        run(capsys, "infer", "clf", "--url", server.http_url, "-i", f"IMAGE=@{image}", "--json")
    )
    outputs = {o["name"]: o for o in document["outputs"]}
    labels, ids = outputs["LABELS"]["data"][0], outputs["CLASS_IDS"]["data"][0]
    assert labels == [str(i) for i in ids]  # labels.txt names the digits 0..9
    scores = outputs["SCORES"]["data"][0]
    assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1.0 + 1e-6


@pytest.mark.parametrize(
    ("value", "parsed"),
    [('{"a": [1, 2]}', {"a": [1, 2]}), ("[1, 2]", [1, 2]), ('"text"', "text")],
)
def test_infer_sends_a_json_value_to_a_json_input_as_one_document(
    server: TritonServer, capsys: pytest.CaptureFixture[str], value: str, parsed: Any
) -> None:
    inputs = ["-i", "TEXT=héllo", "-i", "RAW=abc", "-i", f"DOC={value}"]
    out = run(capsys, "infer", "cf_strings", "--url", server.grpc_url, *inputs, "--json")
    outputs = {o["name"]: o for o in json.loads(out)["outputs"]}
    assert outputs["UPPER"]["data"] == [["HÉLLO"]]
    assert outputs["SUMMARY"]["shape"] == [1, 1]
    summary = json.loads(outputs["SUMMARY"]["data"][0][0])
    assert summary == {"text": "héllo", "chars": 5, "doc": parsed}

    shown = run(capsys, "infer", "cf_strings", "--url", server.http_url, *inputs, "-o", "SUMMARY")
    assert shown.startswith("SUMMARY (BYTES, shape [1, 1]): [['{")
