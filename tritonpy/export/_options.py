"""How :func:`~tritonpy.export.export_repository` exports: :class:`ExportOptions`, each option
declared once with the flag and help of ``tritonpy export``.

Example::

    options = ExportOptions(triton_version="24.10", env_layout="shared", replicas=2)
    export_repository("model_repository", "deploy", options)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .._tooling.options import option
from ..envs import Builder
from ._models import DEFAULT_ENV_ROOT, EnvLayout


@dataclass(frozen=True)
class ExportOptions:
    """What to export for: the release (required), the deployment's Dockerfile and manifests,
    how missing environments are made and laid out, what the final check accepts."""

    triton_version: str = option(
        metavar="YY.MM",
        help="the release of the target Triton (the tag of nvcr.io/nvidia/tritonserver)",
    )
    base_image: Optional[str] = option(
        None,
        metavar="IMAGE",
        help="the Dockerfile's FROM (default nvcr.io/nvidia/tritonserver:YY.MM-py3)",
    )
    name: str = option(
        "tritonpy-models", help="the Kubernetes Deployment/Service name (default {default})"
    )
    image: Optional[str] = option(None, help="the image the manifests run (default NAME:YY.MM)")
    replicas: int = option(1, help="Deployment replicas (default {default})")
    cpu: str = option("1", help="CPU request per pod (default {default})")
    memory: str = option("2Gi", help="memory request per pod (default {default})")
    cpu_limit: Optional[str] = option(None, help="CPU limit per pod (default: the --cpu request)")
    memory_limit: Optional[str] = option(
        None,
        help="memory limit per pod: at least --memory plus the /dev/shm size, which a "
        "memory-backed emptyDir counts against the limit (default: exactly that)",
    )
    shm_size: Optional[str] = option(
        None,
        metavar="QUANTITY",
        help="the pod's /dev/shm (e.g. 512Mi; default: sized from the models' tensors and "
        "instances, see docs/deploy.md)",
    )
    exit_timeout: int = option(
        30,
        metavar="SECONDS",
        help="tritonserver --exit-timeout-secs; the pod's grace period is 15 s longer "
        "(default {default}, the server's own)",
    )
    max_replicas: Optional[int] = option(
        None, help="the autoscaler's maximum replicas (default twice --replicas, at least 3)"
    )
    queue_time_us: int = option(
        50,
        metavar="MICROSECONDS",
        help="the autoscaler's target average queue time per request (default {default}, as "
        "Triton's k8s-onprem chart)",
    )
    to: Optional[str] = option(
        None,
        metavar="URL",
        help="publish OUT/model_repository to this s3:// URL after the export, and make the "
        "manifests serve it from there (credentials from the AWS_* variables; the per-model "
        "or image environment layout)",
    )
    pack: bool = option(
        True,
        flags=["--no-pack"],
        help="never build environments: a tritonpy model without a fitting one is an error",
    )
    builder: Builder = option(
        "auto", help="how missing environments are built (as tritonpy pack-env --builder)"
    )
    env_layout: EnvLayout = option(
        "per-model",
        help="per-model (default): every model directory gets its own copy of its environment "
        "(works everywhere, object storage and KServe included); shared: one archive per "
        "environment in OUT/envs/, beside the repository, unpacked once by Triton (a "
        "repository served where it lies, or the image; not object storage); image: those "
        "archives unpacked by the Dockerfile into --env-root, used in place, never extracted "
        "at a load (the image only; with --to the bucket holds the models, the image the "
        "environments)",
    )
    env_root: str = option(
        DEFAULT_ENV_ROOT,
        metavar="DIR",
        help="with --env-layout image: the folder of the image the environments are unpacked "
        "into (default {default})",
    )
    allow_warnings: bool = option(
        False, help="accept check warnings in the exported repository (errors still fail)"
    )
    force: bool = option(False, help="replace a previous export in OUT")
