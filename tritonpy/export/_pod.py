"""The Deployment's pod: tritonserver hardened (non-root, no privilege escalation, no
capabilities, RuntimeDefault seccomp, read-only root file system), ``/dev/shm`` and ``/tmp``
as sized emptyDirs, requests and limits, startup/readiness/liveness probes, a grace period
longer than tritonserver's exit timeout, and object-store credentials from a Secret.

Example::

    settings = DeploySettings(name="digits", image="digits:24.10", release="24.10")
    pod_template(settings)["spec"]["securityContext"]["runAsUser"]   # 1000
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .._tooling.model_dirs import SERIAL_LOADS_ARG
from ._resources import (
    SHM_DEFAULT_BYTES,
    SHM_GROWTH_BYTES,
    SHM_HEADROOM,
    TMP_HEADROOM,
    mebibytes,
    memory_bytes,
)

#: Triton's ports: name -> container port
PORTS: Dict[str, int] = {"http": 8000, "grpc": 8001, "metrics": 8002}
READY_PATH = "/v2/health/ready"
#: the liveness check inside the container (the image installs tritonpy for it). Over gRPC:
#: only gRPC reaches every kind of model (a decoupled model's stream with a sequence's
#: correlation id, binary BYTES, BF16), which HTTP generate_stream cannot all carry
_PROBE_URL = f"grpc://localhost:{PORTS['grpc']}"
PROBE_COMMAND = ("tritonpy", "probe", "--url", _PROBE_URL, "--timeout", "5")
#: a repository in a bucket is served in explicit model control, every model loaded at the
#: start: a pod that starts loads the bucket's newest versions, and a version published later
#: is loaded only by ``tritonpy rollout`` (the repository API), replica by replica; in the
#: default mode (none) it would need a restart, in poll mode every replica would load it on
#: its own, half-uploaded files included
ROLLOUT_ARGS = ("--model-control-mode=explicit", "--load-model=*")
#: the NGC image's non-root user triton-server, uid and gid 1000 (server@r24.10:build.py:
#: "Make sure that this user to given ID 1000")
TRITON_UID = 1000
#: tritonserver's own default --exit-timeout-secs (server@r24.10:src/command_line_parser.h)
EXIT_TIMEOUT_SECS = 30
#: the pod's grace period beyond the exit timeout: SIGKILL must not cut the server's own wait
GRACE_MARGIN_SECS = 15
#: the startup budget: the server's start plus unpacking environments at this rate
_START_SECS = 300
_UNPACK_BYTES_PER_SEC = 20 * 1000 * 1000
_PERIOD = 10


@dataclass(frozen=True)
class DeploySettings:
    """What the manifests need: the app ``name`` (a DNS-1123 label), the container ``image``,
    the Triton ``release`` (YY.MM), ``replicas``, requests (``cpu``, ``memory``) and limits
    (``cpu_limit``: default the request; ``memory_limit``: default the request plus
    ``/dev/shm``, which counts against it), the volumes' sizes, the ``repository`` tritonserver
    serves (``/models`` in the image, or an ``s3://`` URL with ``secret`` naming the Secret of
    its credentials) and the autoscaler's bounds."""

    name: str
    image: str
    release: str
    replicas: int = 1
    cpu: str = "1"
    memory: str = "2Gi"
    cpu_limit: Optional[str] = None
    memory_limit: Optional[str] = None
    shm_bytes: int = SHM_HEADROOM + SHM_DEFAULT_BYTES
    shm_default_byte_size: int = SHM_DEFAULT_BYTES
    shm_growth_byte_size: int = SHM_GROWTH_BYTES
    tmp_bytes: int = TMP_HEADROOM
    env_bytes: int = 0
    exit_timeout: int = EXIT_TIMEOUT_SECS
    repository: str = "/models"
    secret: Optional[str] = None
    #: load the models one at a time: a bucket holding a stub (SERIAL_LOADS_ARG's reason)
    serial_loads: bool = False
    max_replicas: Optional[int] = None
    queue_time_us: int = 50

    @property
    def labels(self) -> Dict[str, str]:
        return {"app.kubernetes.io/name": self.name, "app.kubernetes.io/part-of": "tritonpy"}

    @property
    def requests(self) -> Dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory}

    @property
    def limits(self) -> Dict[str, str]:
        """CPU: the request unless given. Memory: at least the request plus ``/dev/shm``,
        because a memory-backed emptyDir counts against the container's memory."""
        needed = memory_bytes(self.memory, "--memory") + self.shm_bytes
        if self.memory_limit is None:
            return {"cpu": self.cpu_limit or self.cpu, "memory": mebibytes(needed)}
        given = memory_bytes(self.memory_limit, "--memory-limit")
        if given < needed:
            from ._models import ExportError  # _models imports _files, which imports this

            raise ExportError(
                f"--memory-limit {self.memory_limit}: expected at least the request "
                f"{self.memory} plus /dev/shm {mebibytes(self.shm_bytes)} (a memory-backed "
                f"emptyDir counts against the limit), i.e. {mebibytes(needed)}; raise it, or "
                "lower --shm-size"
            )
        return {"cpu": self.cpu_limit or self.cpu, "memory": self.memory_limit}

    @property
    def startup_seconds(self) -> int:
        """The startup probe's budget: the start plus unpacking every environment."""
        return _START_SECS + math.ceil(self.env_bytes / _UNPACK_BYTES_PER_SEC)

    @property
    def server_args(self) -> List[str]:
        """tritonserver's command line: the repository, the exit timeout, and the Python
        backend's shared memory sized as ``/dev/shm`` is; from a bucket, explicit model
        control with every model loaded at the start (see :data:`ROLLOUT_ARGS`)."""
        return [
            "tritonserver",
            f"--model-repository={self.repository}",
            *(ROLLOUT_ARGS if self.secret is not None else ()),
            *((SERIAL_LOADS_ARG,) if self.serial_loads else ()),
            f"--exit-timeout-secs={self.exit_timeout}",
            f"--backend-config=python,shm-default-byte-size={self.shm_default_byte_size}",
            f"--backend-config=python,shm-growth-byte-size={self.shm_growth_byte_size}",
        ]


def _http_probe(failures: int) -> Dict[str, Any]:
    return {
        "httpGet": {"path": READY_PATH, "port": "http"},
        "periodSeconds": _PERIOD,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def _liveness_probe() -> Dict[str, Any]:
    # each model gets up to --timeout for its configuration and again for its request; a dead
    # stub answers within about a second, so 30 s covers a repository of several models
    return {
        "exec": {"command": list(PROBE_COMMAND)},
        "periodSeconds": 30,
        "timeoutSeconds": 30,
        "failureThreshold": 3,
    }


def _container(settings: DeploySettings) -> Dict[str, Any]:
    container: Dict[str, Any] = {
        "name": "tritonserver",
        "image": settings.image,
        "args": settings.server_args,
        "ports": [{"name": n, "containerPort": p} for n, p in PORTS.items()],
        # HOME: the image's triton-server user has none, and the root file system is read-only
        "env": [{"name": "HOME", "value": "/tmp"}],
        "resources": {
            "requests": {**settings.requests, "ephemeral-storage": mebibytes(settings.tmp_bytes)},
            "limits": settings.limits,
        },
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
        "securityContext": {
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            # the server writes only /tmp (environments unpacked, model directories copied
            # from object storage) and /dev/shm: both are volumes
            "readOnlyRootFilesystem": True,
        },
        "startupProbe": _http_probe(math.ceil(settings.startup_seconds / _PERIOD)),
        "readinessProbe": _http_probe(3),
        # a dead stub leaves its model READY: only a real request shows it
        "livenessProbe": _liveness_probe(),
    }
    if settings.secret is not None:
        container["envFrom"] = [{"secretRef": {"name": settings.secret}}]
    return container


def pod_template(settings: DeploySettings) -> Dict[str, Any]:
    """The Deployment's pod template."""
    return {
        "metadata": {"labels": settings.labels},
        "spec": {
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": TRITON_UID,
                "runAsGroup": TRITON_UID,
                "fsGroup": TRITON_UID,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": settings.exit_timeout + GRACE_MARGIN_SECS,
            "containers": [_container(settings)],
            "volumes": [
                {
                    "name": "dshm",
                    "emptyDir": {"medium": "Memory", "sizeLimit": mebibytes(settings.shm_bytes)},
                },
                {"name": "tmp", "emptyDir": {"sizeLimit": mebibytes(settings.tmp_bytes)}},
            ],
        },
    }
