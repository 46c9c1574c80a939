"""Kubernetes manifests for an exported model repository: a Deployment and a Service running the
image ``tritonpy export`` describes, and a KServe ``InferenceService`` on KServe's Triton runtime.

Readiness and liveness are different questions: ``/v2/health/ready`` says every model is
loaded (keep traffic away until then: the readinessProbe and the startupProbe); the
livenessProbe runs ``tritonpy probe`` in the container, one real request to each READY model,
because a model whose Python stub process died stays READY (``/v2/health/live`` and
``/v2/health/ready`` keep answering 200) while it fails every request: only a request shows
it, and a restart heals it. Loading a model with an environment archive unpacks it first, so
the startup probe allows a generous start.

Example::

    settings = DeploySettings(name="classifier", image="classifier:24.10", release="24.10")
    text = to_yaml_documents(deployment_manifests(settings))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence

from .._runtime._optional import optional_import

#: Triton's ports: name -> container port
PORTS: Dict[str, int] = {"http": 8000, "grpc": 8001, "metrics": 8002}
READY_PATH = "/v2/health/ready"
#: the liveness check inside the container (the image installs tritonpy for it). Over gRPC:
#: only gRPC reaches every kind of model (a decoupled model's stream with a sequence's
#: correlation id, binary BYTES, BF16), which HTTP generate_stream cannot all carry
_PROBE_URL = f"grpc://localhost:{PORTS['grpc']}"
PROBE_COMMAND = ("tritonpy", "probe", "--url", _PROBE_URL, "--timeout", "5")


@dataclass(frozen=True)
class DeploySettings:
    """What the manifests need: the app ``name`` (a DNS-1123 label), the container ``image``,
    the Triton ``release`` (YY.MM), ``replicas`` and per-pod resource requests."""

    name: str
    image: str
    release: str
    replicas: int = 1
    cpu: str = "1"
    memory: str = "2Gi"

    @property
    def labels(self) -> Dict[str, str]:
        return {"app.kubernetes.io/name": self.name, "app.kubernetes.io/part-of": "tritonpy"}

    @property
    def requests(self) -> Dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory}


def _probe(path: str, *, initial: int, failures: int) -> Dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "http"},
        "initialDelaySeconds": initial,
        "periodSeconds": 10,
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


def deployment_manifests(settings: DeploySettings) -> List[Dict[str, Any]]:
    """A ``Deployment`` (``tritonserver --model-repository=/models`` from the image, the three
    ports, resource requests, startup and readiness on ``/v2/health/ready``, liveness by
    ``tritonpy probe``) and a ``Service`` exposing the ports inside the cluster."""
    selector = {"app.kubernetes.io/name": settings.name}
    container = {
        "name": "tritonserver",
        "image": settings.image,
        "args": ["tritonserver", "--model-repository=/models"],
        "ports": [{"name": n, "containerPort": p} for n, p in PORTS.items()],
        "resources": {"requests": settings.requests},
        # a startup budget of 30 x 10 s: unpacking environment archives takes a while
        "startupProbe": _probe(READY_PATH, initial=5, failures=30),
        "readinessProbe": _probe(READY_PATH, initial=5, failures=3),
        # a dead stub leaves its model READY: only a real request shows it
        "livenessProbe": _liveness_probe(),
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": settings.name, "labels": settings.labels},
        "spec": {
            "replicas": settings.replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": settings.labels},
                "spec": {"containers": [container]},
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": settings.name, "labels": settings.labels},
        "spec": {
            "selector": selector,
            "ports": [{"name": n, "port": p, "targetPort": n} for n, p in PORTS.items()],
        },
    }
    return [deployment, service]


def kserve_manifest(settings: DeploySettings, storage_uri: str) -> Dict[str, Any]:
    """A KServe ``InferenceService`` serving the model repository at ``storage_uri`` (an
    ``s3://``, ``gs://`` or ``pvc://`` copy of ``model_repository/``) with KServe's Triton
    runtime, in the release's container (``runtimeVersion: YY.MM-py3``)."""
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": settings.name, "labels": settings.labels},
        "spec": {
            "predictor": {
                "minReplicas": settings.replicas,
                "model": {
                    "modelFormat": {"name": "triton", "version": "2"},
                    "runtimeVersion": f"{settings.release}-py3",
                    "storageUri": storage_uri,
                    "resources": {"requests": settings.requests},
                },
            }
        },
    }


def to_yaml_documents(documents: Sequence[Mapping[str, Any]], header: str = "") -> str:
    """The manifests as YAML documents (block style, separated by ``---``) after ``header``,
    each of its lines a ``# ...`` comment. PyYAML quotes a string that YAML would read as
    another type (``"8000"``, ``"yes"``), so every value keeps its type."""
    yaml = optional_import("yaml", feature="tritonpy export", extra="tools")
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    # no line wrapping: a long command or URL stays on one line
    text: str = yaml.safe_dump_all([dict(d) for d in documents], sort_keys=False, width=1 << 16)
    return comment + text
