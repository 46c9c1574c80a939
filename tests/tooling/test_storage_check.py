"""``tritonpy check s3://...``: a repository in SeaweedFS's S3 gateway is checked through a
temporary copy, and the findings and the summary name the URL, never the copy."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.tooling.test_export import make_repo
from tritonpy.check import check_repository
from tritonpy.cli import main
from tritonpy.storage import StorageError, publish

OUTSIDE = 'parameters { key: "EXECUTION_ENV_PATH" value { string_value: "%s" } }\n'


@pytest.fixture
def published(tmp_path: Path, s3_bucket: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """make_repo's two models published, and a third synced by another tool: its environment
    lies outside its folder (publish refuses that; ``aws s3 sync`` does not)."""
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    url = s3_bucket.url("prod/models")
    publish(make_repo(tmp_path / "repo"), url)
    config = 'name: "synced"\nbackend: "python"\n' + OUTSIDE % (
        "$$TRITON_MODEL_DIRECTORY/../../envs/env.tar.gz"
    )
    for key, data in (("config.pbtxt", config), ("1/model.py", "x = 1\n")):
        s3_bucket.client.put_object(
            Bucket=s3_bucket.name, Key=f"prod/models/synced/{key}", Body=data.encode()
        )
    return url


def test_check_reads_the_bucket_and_names_the_url(published: str) -> None:
    report = check_repository(published, server_python="3.10")  # make_repo's env: 3.10
    assert report.repository == published
    errors = len(report.errors)
    assert report.summary() == f"{published}: {errors} errors, 0 warnings" and errors >= 1
    by_model = {f.file.split("/")[0] for f in report.errors}
    assert by_model == {"synced"}, report.render_text()
    (outside,) = [f for f in report.findings if "points outside the model directory" in f.message]
    assert f"(to {published}/../envs/env.tar.gz)" in outside.message
    text = report.render_text() + report.to_json()
    assert "tritonpy-s3-copy" not in text and tempfile.gettempdir() + "/" not in text
    assert json.loads(report.to_json())["repository"] == published


def test_the_cli_checks_a_url_and_exits_as_for_a_directory(
    published: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", published, "--server-python", "3.10"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith(f"{published}: ")
    assert f"(to {published}/../envs/env.tar.gz)" in out
    assert "tritonpy-s3-copy" not in out
    empty = published.rsplit("/", 1)[0] + "/nothing-here"
    assert main(["check", empty]) == 2
    assert capsys.readouterr().err == (
        f"tritonpy: error: cannot download {empty}: there is no object under 'prod/nothing-here' "
        f"in bucket '{published.split('/')[3]}' (http://{published.split('/')[2]}). Folders "
        f"there: prod/models. Publish the repository first (tritonpy publish REPO {empty}) or "
        "fix the prefix.\n"
    )


def test_without_credentials_the_check_says_which_variables(
    s3_bucket: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(StorageError, match="no credentials for the S3-compatible store"):
        check_repository(s3_bucket.url("repo"))


def test_an_ensembles_empty_version_folder_survives_the_bucket(
    tmp_path: Path, s3_bucket: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """publish keeps an ensemble's empty ``1/`` as a folder marker (tritonserver takes it for a
    folder); the copy check reads has the folder too, so no TP104 (no version folder)."""
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    repo = tmp_path / "repo"
    member = repo / "double"
    (member / "1").mkdir(parents=True)
    (member / "1" / "model.py").write_text(DOUBLE)
    (member / "config.pbtxt").write_text(DOUBLE_CONFIG)
    (repo / "pipeline" / "1").mkdir(parents=True)
    (repo / "pipeline" / "config.pbtxt").write_text(ENSEMBLE_CONFIG)
    assert check_repository(repo, server_python="3.11").errors == []
    url = s3_bucket.url("ens")
    publish(repo, url)
    assert "ens/pipeline/1/" in s3_bucket.keys("ens/")
    report = check_repository(url, server_python="3.11")
    assert report.errors == [], report.render_text()


DOUBLE = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x * 2)]))
        return out
"""
DOUBLE_CONFIG = """name: "double"
backend: "python"
max_batch_size: 4
input [{ name: "X" data_type: TYPE_FP32 dims: [2] }]
output [{ name: "Y" data_type: TYPE_FP32 dims: [2] }]
"""
ENSEMBLE_CONFIG = """name: "pipeline"
platform: "ensemble"
max_batch_size: 4
input [{ name: "IN" data_type: TYPE_FP32 dims: [2] }]
output [{ name: "OUT" data_type: TYPE_FP32 dims: [2] }]
ensemble_scheduling { step [{
  model_name: "double" model_version: -1
  input_map { key: "X" value: "IN" } output_map { key: "Y" value: "OUT" }
}] }
"""
