"""The pod the export's manifests describe, sized from the exported repository: /dev/shm from
the Python backend's regions (one per instance, python_backend@r24.10:src/python_be.cc), /tmp
from the unpacked environments, the limits that must hold them, the startup budget, and the
refusals (a memory limit below request + /dev/shm, --to with a shared layout)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from tests.tooling.test_export import make_repo
from tritonpy.export import ExportError, export_repository
from tritonpy.export._manifests import DeploySettings, deployment_manifests
from tritonpy.export._resources import (
    MIB,
    REMOTE_LOADS,
    SHM_HEADROOM,
    TMP_HEADROOM,
    VARIABLE_DIM,
    memory_bytes,
    repository_footprint,
)

IMAGE_MODEL = """name: "resize"
backend: "python"
max_batch_size: 32
input { name: "IMAGE" data_type: TYPE_UINT8 dims: [ -1, -1, 3 ] }
output { name: "PIXELS" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] }
instance_group { count: 3 kind: KIND_CPU }
parameters {
  key: "EXECUTION_ENV_PATH" value { string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz" }
}
"""
ONNX_MODEL = """name: "net"
backend: "onnxruntime"
max_batch_size: 8
input { name: "X" data_type: TYPE_FP32 dims: [ 1000 ] }
output { name: "Y" data_type: TYPE_FP32 dims: [ 1000 ] }
"""


def archive(path: Path, sizes: Dict[str, int]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, size in sizes.items():
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BytesIO(b"\0" * size))


def write_repo(root: Path) -> Path:
    (root / "resize" / "1").mkdir(parents=True)
    (root / "resize" / "config.pbtxt").write_text(IMAGE_MODEL)
    archive(root / "resize" / "env.tar.gz", {"./bin/python": 3 * MIB, "./lib/x.so": 2 * MIB})
    (root / "net" / "1").mkdir(parents=True)
    (root / "net" / "config.pbtxt").write_text(ONNX_MODEL)
    return root


def test_shared_memory_and_tmp_are_sized_from_the_models(tmp_path: Path) -> None:
    footprint = repository_footprint(write_repo(tmp_path / "repo"))
    by_name = {m.name: m for m in footprint.models}
    # 32 rows of (256 x 256 x 3 uint8 in, 3 x 224 x 224 fp32 out): -1 taken as VARIABLE_DIM
    batch = 32 * (VARIABLE_DIM * VARIABLE_DIM * 3 + 3 * 224 * 224 * 4)
    assert by_name["resize"].tensor_bytes == batch
    assert by_name["resize"].instances == 3
    assert by_name["net"].instances == 0  # not the Python backend: no region
    region = -(-batch // MIB) * MIB
    assert footprint.shm_default_byte_size == region
    assert footprint.shm_bytes == 3 * region + SHM_HEADROOM
    assert footprint.env_bytes == 5 * MIB
    assert footprint.tmp_bytes == 5 * MIB + TMP_HEADROOM
    # served from a bucket, Triton also copies every model directory into /tmp, and each
    # load extracts the archive again into a new folder (measured on 24.10: a reload of a
    # model of a bucket adds one unpacked copy): room for one reload of every model
    remote = repository_footprint(tmp_path / "repo", remote=True)
    files = sum(m.files_bytes for m in remote.models)
    assert files > 0
    expected = -(-(REMOTE_LOADS * 5 * MIB + files) // MIB) * MIB + TMP_HEADROOM
    assert (REMOTE_LOADS, remote.tmp_bytes) == (2, expected)


def export_documents(tmp_path: Path, **options: Any) -> List[Dict[str, Any]]:
    out = tmp_path / "out"
    export_repository(make_repo(tmp_path / "repo"), out, triton_version="24.10", **options)
    return list(yaml.safe_load_all((out / "k8s" / "deployment.yaml").read_text()))


def test_the_pod_is_hardened_and_sized(tmp_path: Path) -> None:
    deployment = export_documents(tmp_path, memory="1Gi", exit_timeout=60)[0]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 1000,  # the NGC image's triton-server (server@r24.10:build.py)
        "runAsGroup": 1000,
        "fsGroup": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert container["securityContext"] == {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
    }
    volumes = {v["name"]: v["emptyDir"] for v in pod["volumes"]}
    # two Python models of one instance each: 2 regions of 1 MiB + 64 MiB headroom
    assert volumes["dshm"] == {"medium": "Memory", "sizeLimit": "66Mi"}
    assert volumes["tmp"]["sizeLimit"] == "513Mi"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts == {"/dev/shm": "dshm", "/tmp": "tmp"}
    assert "--backend-config=python,shm-default-byte-size=1048576" in container["args"]
    assert "--backend-config=python,shm-growth-byte-size=1048576" in container["args"]
    assert "--exit-timeout-secs=60" in container["args"]
    assert pod["terminationGracePeriodSeconds"] == 75
    assert container["resources"]["limits"] == {"cpu": "1", "memory": f"{1024 + 66}Mi"}
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300
    assert "envFrom" not in container  # the repository is in the image: no credentials


def test_limits_and_shm_size_options(tmp_path: Path) -> None:
    deployment = export_documents(
        tmp_path, memory="1Gi", memory_limit="2Gi", cpu_limit="3", shm_size="256Mi"
    )[0]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["volumes"][0]["emptyDir"]["sizeLimit"] == "256Mi"
    assert pod["containers"][0]["resources"]["limits"] == {"cpu": "3", "memory": "2Gi"}
    with pytest.raises(ExportError, match=r"--memory-limit 1100Mi: expected at least .* 1280Mi"):
        export_documents(tmp_path / "b", memory="1Gi", memory_limit="1100Mi", shm_size="256Mi")
    with pytest.raises(ExportError, match="--memory '2 GB' is not a Kubernetes memory quantity"):
        export_documents(tmp_path / "c", memory="2 GB")
    assert not (tmp_path / "b" / "out" / "k8s").exists()  # nothing written


def test_startup_budget_grows_with_the_environments() -> None:
    small = DeploySettings(name="a", image="a:1", release="24.10")
    large = DeploySettings(name="a", image="a:1", release="24.10", env_bytes=6 * 10**9)
    assert large.startup_seconds == small.startup_seconds + 300  # 20 MB/s unpacking
    probe = deployment_manifests(large)[0]["spec"]["template"]["spec"]["containers"][0]
    assert probe["startupProbe"]["failureThreshold"] * 10 >= large.startup_seconds


def test_to_refuses_a_shared_layout(tmp_path: Path) -> None:
    """A bucket copies each model folder alone: ../../envs is lost. (The image layout is
    served from a bucket: test_export_to_storage.)"""
    with pytest.raises(ExportError, match=r"TP502\). Export with --env-layout per-model"):
        export_repository(
            make_repo(tmp_path / "shared"),
            tmp_path / "out-shared",
            triton_version="24.10",
            env_layout="shared",
            to="s3://bucket/prefix",
        )


def test_memory_quantities() -> None:
    assert memory_bytes("2Gi", "--memory") == 2 << 30
    assert memory_bytes("1G", "--memory") == 10**9
    assert memory_bytes("1.5Mi", "--memory") == 3 << 19
    assert memory_bytes("1000", "--memory") == 1000


def test_a_bucket_holding_a_stub_is_loaded_one_model_at_a_time(tmp_path: Path) -> None:
    """A stub copied out of a bucket can be held open for writing by a stub another load
    thread forked meanwhile ("Text file busy", measured on 24.10): such a repository's pods
    load one model at a time; without a stub, or from the image, loads stay parallel."""
    from tritonpy.export._deploy import sized_settings

    repo = write_repo(tmp_path / "repo")
    base = DeploySettings(name="m", image="m:24.10", release="24.10")
    remote = DeploySettings(
        name="m", image="m:24.10", release="24.10", repository="s3://b/p", secret="m-storage"
    )
    assert (
        "--model-load-thread-count=1" not in sized_settings(remote, repo, shm_size=None).server_args
    )
    (repo / "resize" / "triton_python_backend_stub").write_bytes(b"\x7fELF")
    assert "--model-load-thread-count=1" in sized_settings(remote, repo, shm_size=None).server_args
    assert (
        "--model-load-thread-count=1" not in sized_settings(base, repo, shm_size=None).server_args
    )
