"""``tritonpy export ... --to s3://...``: the export is published to a real S3-compatible
server (SeaweedFS, the ``s3_bucket`` fixture) and its manifests, Dockerfile and README name the
bucket. tritonserver serving such a bucket is tested by the storage and serve tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tooling.test_export import make_repo
from tritonpy.cli import main
from tritonpy.export import export_repository


def test_export_to_a_bucket(
    tmp_path: Path, s3_bucket: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    url = s3_bucket.url("fleet/models")
    out = tmp_path / "out"
    result = export_repository(make_repo(tmp_path / "repo"), out, triton_version="24.10", to=url)
    assert result.url == url
    keys = s3_bucket.keys("fleet/models/")
    assert {
        "fleet/models/double/config.pbtxt",
        "fleet/models/double/env.tar.gz",
        "fleet/models/double/1/model.py",
        "fleet/models/plain/config.pbtxt",
        "fleet/models/plain/1/model.py",
    } <= set(keys), keys
    local = (out / "model_repository" / "double" / "config.pbtxt").read_bytes()
    body = s3_bucket.client.get_object(
        Bucket=s3_bucket.name, Key="fleet/models/double/config.pbtxt"
    )
    assert body["Body"].read() == local

    deployment, *_ = yaml.safe_load_all((out / "k8s" / "deployment.yaml").read_text())
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][1:4] == [
        f"--model-repository={url}",
        "--model-control-mode=explicit",  # tritonpy rollout loads new versions
        "--load-model=*",
    ]
    assert container["envFrom"] == [{"secretRef": {"name": "tritonpy-models-storage"}}]
    (secret,) = yaml.safe_load_all((out / "k8s" / "secret-template.yaml").read_text())
    assert secret["metadata"]["name"] == "tritonpy-models-storage"
    assert set(secret["stringData"].values()) == {""}  # a template: no credentials written
    (isvc,) = yaml.safe_load_all((out / "k8s" / "inferenceservice.yaml").read_text())
    assert isvc["spec"]["predictor"]["model"]["storageUri"] == f"s3://{s3_bucket.name}/fleet/models"
    dockerfile = (out / "Dockerfile").read_text()
    assert "COPY model_repository/" not in dockerfile  # the image holds no repository
    # the image, run by hand, serves the bucket as the Deployment does
    assert f"CMD {json.dumps(container['args'])}\n" in dockerfile
    readme = (out / "README.md").read_text()
    assert "kubectl create secret generic tritonpy-models-storage" in readme
    assert f"tritonpy publish model_repository {url}" in readme


def test_cli_export_to(
    tmp_path: Path, s3_bucket: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    url = s3_bucket.url("cli")
    argv = ["export", str(make_repo(tmp_path / "repo")), str(tmp_path / "out")]
    assert main([*argv, "--triton-version", "24.10", "--to", url]) == 0
    assert f"published {tmp_path / 'out' / 'model_repository'} to {url}" in capsys.readouterr().out
    assert "cli/plain/config.pbtxt" in s3_bucket.keys("cli/")
