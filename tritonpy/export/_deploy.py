"""The deployment files of an export (Dockerfile, manifests, README), sized from the exported
repository, and the ``--to`` publication of that repository to object storage.

Example::

    settings = sized_settings(settings, staging / "model_repository", shm_size=None)
    publish_export(out / "model_repository", "s3://bucket/prefix", reporter)
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

from .._tooling.model_dirs import STUB_NAME
from .._tooling.progress import Reporter, step
from .._tooling.releases import TritonRelease
from ..envs import container_numpy_pin, container_numpy_reason, running_tritonpy, self_wheel
from ._files import REPOSITORY_DIR, WHEELS_DIR, EnvsInImage, dockerfile, dockerignore, readme
from ._manifests import (
    DeploySettings,
    deployment_manifests,
    kserve_manifest,
    secret_template,
    to_yaml_documents,
)
from ._models import ExportError
from ._resources import memory_bytes, repository_footprint

if TYPE_CHECKING:  # the storage package is imported only when an export uses it
    from ..storage import PublishResult


def storage_settings(settings: DeploySettings, to: Optional[str]) -> DeploySettings:
    """With ``to`` (an ``s3://`` URL), tritonserver serves the bucket, with the credentials
    from the Secret ``NAME-storage``; without, the image's ``/models``."""
    if to is None:
        return settings
    from ..storage import parse_repository_url

    url = parse_repository_url(to)
    if url.scheme != "s3":
        raise ExportError(
            f"--to {to}: tritonpy publishes to s3:// only (an S3-compatible store: "
            "s3://host:port/bucket/prefix); copy to another store with its own tools"
        )
    return dataclasses.replace(settings, repository=str(url), secret=f"{settings.name}-storage")


def kserve_storage_uri(settings: DeploySettings) -> str:
    """KServe's ``storageUri``: ``s3://bucket/prefix`` (KServe names an S3-compatible
    endpoint in the Secret's annotations, not in the URI), or a placeholder."""
    if settings.secret is None:
        return f"s3://BUCKET/{settings.name}/{REPOSITORY_DIR}"
    from ..storage import parse_repository_url

    url = parse_repository_url(settings.repository)
    return f"s3://{url.bucket}/{url.prefix}".rstrip("/")


def sized_settings(
    settings: DeploySettings, repository: Path, *, shm_size: Optional[str]
) -> DeploySettings:
    """``settings`` with ``/dev/shm``, ``/tmp``, the Python backend's region size and the
    startup budget read from the exported ``repository`` (``shm_size`` overrides
    ``/dev/shm``); :class:`ExportError` for limits that cannot hold them."""
    footprint = repository_footprint(repository, remote=settings.secret is not None)
    shm = footprint.shm_bytes
    if shm_size is not None:
        shm = memory_bytes(shm_size, "--shm-size")
        if shm < footprint.shm_default_byte_size:
            raise ExportError(
                f"--shm-size {shm_size}: expected at least one Python-backend region "
                f"({footprint.shm_default_byte_size} bytes, shm-default-byte-size); raise it"
            )
    sized = dataclasses.replace(
        settings,
        shm_bytes=shm,
        shm_default_byte_size=footprint.shm_default_byte_size,
        tmp_bytes=footprint.tmp_bytes,
        env_bytes=footprint.env_bytes,
        serial_loads=settings.secret is not None
        and any((repository / m.name / STUB_NAME).is_file() for m in footprint.models),
    )
    sized.limits  # noqa: B018 - refuses a --memory-limit below request + /dev/shm now
    return sized


def _write(path: Path, text: str, files: List[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    files.append(path)


def _write_wheel(staging: Path, reporter: Reporter, files: List[Path]) -> str:
    # the running tritonpy, for the image's liveness check (tritonpy probe)
    runtime = running_tritonpy()
    wheel = staging / WHEELS_DIR / runtime.wheel_name
    wheel.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(self_wheel(reporter, runtime=runtime), wheel)
    files.append(wheel)
    return runtime.wheel_name


_DEPLOYMENT_HEADER = (
    "Written by 'tritonpy export'. Build and push the image first (see README.md), set\n"
    "its name as image: below, then: kubectl apply -f k8s/deployment.yaml\n"
    "(the HorizontalPodAutoscaler's queue-time metric needs the prometheus adapter: README.md)"
)
_SECRET_HEADER = (
    "Written by 'tritonpy export': the keys the pod reads its object-store credentials from.\n"
    "Create the Secret with kubectl instead of filling this in (README.md, 'Credentials'):\n"
    "kubectl create secret generic {name} --from-literal=AWS_ACCESS_KEY_ID=... ..."
)


def write_deployment_files(
    staging: Path,
    settings: DeploySettings,
    release: TritonRelease,
    base_image: str,
    models: List[str],
    reporter: Reporter,
    *,
    envs: Optional[EnvsInImage] = None,
) -> List[Path]:
    """Write the wheel, Dockerfile, .dockerignore, k8s/*.yaml and README.md into ``staging``."""
    files: List[Path] = []
    wheel = _write_wheel(staging, reporter, files)
    remote = settings.repository if settings.secret is not None else None
    text = dockerfile(
        base_image,
        wheel,
        numpy_pin=container_numpy_pin(release),
        pin_reason=container_numpy_reason(release),
        envs=envs,
        repository_url=remote,
        server_args=settings.server_args,
    )
    _write(staging / "Dockerfile", text, files)
    ignore = dockerignore(shared_envs=envs is not None, repository=remote is None)
    _write(staging / ".dockerignore", ignore, files)
    k8s = staging / "k8s"
    documents = deployment_manifests(settings)
    _write(k8s / "deployment.yaml", to_yaml_documents(documents, _DEPLOYMENT_HEADER), files)
    secret = secret_template(settings)
    if secret is not None:
        header = _SECRET_HEADER.format(name=settings.secret)
        _write(k8s / "secret-template.yaml", to_yaml_documents([secret], header), files)
    where = "the bucket below" if remote else f"object storage (copy {REPOSITORY_DIR}/ there)"
    header = (
        f"Written by 'tritonpy export': KServe's Triton runtime serving the model repository\n"
        f"from {where}; check storageUri, then: kubectl apply -f k8s/inferenceservice.yaml"
    )
    isvc = kserve_manifest(settings, kserve_storage_uri(settings))
    _write(k8s / "inferenceservice.yaml", to_yaml_documents([isvc], header), files)
    _write(staging / "README.md", readme(settings, base_image, models, envs=envs), files)
    return files


def publish_export(repository: Path, to: str, reporter: Reporter) -> PublishResult:
    """Upload the exported ``repository`` to ``to`` (:func:`tritonpy.storage.publish`)."""
    from ..storage import publish

    with step(reporter, f"publishing {repository} to {to}"):
        return publish(repository, to, reporter=reporter)
