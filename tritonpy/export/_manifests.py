"""Kubernetes manifests for an exported model repository: a hardened Deployment and its
Service, a PodDisruptionBudget, a HorizontalPodAutoscaler on Triton's queue time, a Secret
template for object-store credentials, and a KServe ``InferenceService``.

Readiness and liveness are different questions: ``/v2/health/ready`` says every model is
loaded (keep traffic away until then: the readinessProbe and the startupProbe); the
livenessProbe runs ``tritonpy probe`` in the container, one real request to each READY model,
because a model whose Python stub process died stays READY (``/v2/health/live`` and
``/v2/health/ready`` keep answering 200 on 24.10) while it fails every request: only a request
shows it, and a restart heals it.

Example::

    settings = DeploySettings(name="classifier", image="classifier:24.10", release="24.10")
    text = to_yaml_documents(deployment_manifests(settings))
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from .._runtime._optional import optional_import
from ._kserve import kserve_manifest as kserve_manifest
from ._pod import PORTS as PORTS
from ._pod import PROBE_COMMAND as PROBE_COMMAND
from ._pod import READY_PATH as READY_PATH
from ._pod import DeploySettings as DeploySettings
from ._pod import pod_template
from ._scaling import autoscaler, disruption_budget

#: the keys of the credentials Secret: the variables tritonserver's S3 filesystem reads
#: (core@r24.10:src/filesystem/implementations/s3.h); AWS_SESSION_TOKEN only for temporary ones
SECRET_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")


def deployment_manifests(settings: DeploySettings) -> List[Dict[str, Any]]:
    """The ``Deployment`` (see :func:`~tritonpy.export._pod.pod_template`), its ``Service``
    exposing the three ports inside the cluster, a ``PodDisruptionBudget`` (one pod down at a
    time) and a ``HorizontalPodAutoscaler`` on Triton's queue time."""
    selector = {"app.kubernetes.io/name": settings.name}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": settings.name, "labels": settings.labels},
        "spec": {
            "replicas": settings.replicas,
            "selector": {"matchLabels": selector},
            # a new pod is ready before an old one goes: capacity never drops in a rollout
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": pod_template(settings),
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
    return [deployment, service, disruption_budget(settings), autoscaler(settings)]


def secret_template(settings: DeploySettings) -> Optional[Dict[str, Any]]:
    """The Secret the pod reads its object-store credentials from, without values (None when
    the repository is in the image). Create it with ``kubectl create secret generic``
    rather than filling this in: a file of credentials does not belong in version control."""
    if settings.secret is None:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": settings.secret, "labels": settings.labels},
        "type": "Opaque",
        "stringData": {key: "" for key in SECRET_KEYS},
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
