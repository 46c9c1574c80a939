"""A KServe ``InferenceService`` on KServe's Triton runtime (``kserve-tritonserver``).

Example::

    kserve_manifest(DeploySettings(name="digits", image="digits:24.10", release="24.10"),
                    "s3://models/digits/model_repository")
"""

from __future__ import annotations

from typing import Any, Dict

from ._pod import DeploySettings
from ._scaling import max_replicas


def kserve_manifest(settings: DeploySettings, storage_uri: str) -> Dict[str, Any]:
    """An ``InferenceService`` serving the model repository at ``storage_uri`` (an ``s3://``,
    ``gs://`` or ``pvc://`` copy of ``model_repository/``: KServe's storage initializer
    downloads it into the pod) in the release's container (``runtimeVersion: YY.MM-py3``),
    with the Deployment's requests and limits."""
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": settings.name, "labels": settings.labels},
        "spec": {
            "predictor": {
                "minReplicas": settings.replicas,
                "maxReplicas": max_replicas(settings),
                "model": {
                    "modelFormat": {"name": "triton", "version": "2"},
                    "runtimeVersion": f"{settings.release}-py3",
                    "storageUri": storage_uri,
                    "resources": {"requests": settings.requests, "limits": settings.limits},
                },
            }
        },
    }
