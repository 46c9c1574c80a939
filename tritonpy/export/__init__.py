"""``tritonpy export``: a model repository made deployable on the user's own Triton (the NGC
container, Kubernetes, KServe).

The server's Python has no tritonpy, so every tritonpy model travels with its environment
archive (``EXECUTION_ENV_PATH``) and, where that environment's Python is not the container's,
a stub built for it. Every model is validated first, imported inside the environment it will
run in (all problems at once, before anything is built); built environments stay in tritonpy's
build cache, one per distinct spec; ``env_layout="shared"`` writes each once to ``OUT/envs/``.
The export writes::

    OUT/model_repository/          every model: full config.pbtxt, environment, stub
    OUT/wheels/tritonpy-*.whl      the running tritonpy, installed in the image for the probe
    OUT/Dockerfile                 FROM nvcr.io/nvidia/tritonserver:YY.MM-py3, models in /models,
                                   HEALTHCHECK tritonpy probe
    OUT/.dockerignore
    OUT/k8s/deployment.yaml        a hardened Deployment (non-root, /dev/shm and /tmp sized from
                                   the models, requests and limits; readiness /v2/health/ready,
                                   liveness: tritonpy probe, one real request per model), its
                                   Service, a PodDisruptionBudget, an HPA on Triton's queue time
    OUT/k8s/secret-template.yaml   with ``to="s3://..."``: the credentials' keys (no values)
    OUT/k8s/inferenceservice.yaml  KServe InferenceService on the Triton runtime
    OUT/README.md                  build, push, run, apply

Example::

    from tritonpy.export import export_repository

    result = export_repository("model_repository", "deploy", triton_version="24.10")
    for model in result.models:
        print(model.name, model.config, model.environment, model.parameter)
"""

from __future__ import annotations

from .._runtime._public_names import publish as _publish
from ._exporter import OUTPUTS, ExportResult, export_repository
from ._models import ExportError, ModelExport
from ._options import ExportOptions

__all__ = [
    "OUTPUTS",
    "ExportError",
    "ExportOptions",
    "ExportResult",
    "ModelExport",
    "export_repository",
]

_publish(__name__, globals())
