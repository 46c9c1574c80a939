"""The text files ``tritonpy export`` writes beside ``model_repository/``: the Dockerfile, its
``.dockerignore`` and the README that says how to build, push, run and apply.

Example::

    dockerfile("nvcr.io/nvidia/tritonserver:24.10-py3", "tritonpy-0.1.0-py3-none-any.whl")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ._manifests import PORTS, PROBE_COMMAND, READY_PATH, DeploySettings

#: the model repository's folder inside the export directory
REPOSITORY_DIR = "model_repository"
#: the folder of the tritonpy wheel the image installs for its liveness check
WHEELS_DIR = "wheels"
#: the shared layout's environments, beside the repository (also in _models.ENVS_DIR)
ENVS_DIR = "envs"


def default_base_image(release: str) -> str:
    """The NGC Triton container of ``release`` (``YY.MM``)."""
    return f"nvcr.io/nvidia/tritonserver:{release}-py3"


@dataclass(frozen=True)
class EnvsInImage:
    """How the image gets the environments of ``envs/``: ``layout`` ``"shared"`` (the archives
    copied to /envs, beside /models) or ``"image"`` (unpacked into ``root``, one folder
    each)."""

    layout: str
    root: str


#: the Dockerfile's step of the image layout: every archive of ``root`` unpacked beside it
UNPACK_STEP = (
    'cd "{root}" && for a in *.tar.gz; do d="${{a%.tar.gz}}"; mkdir -p "$d" && '
    'tar -xzf "$a" -C "$d" && rm "$a"; done'
)


def _envs_lines(envs: Optional[EnvsInImage]) -> str:
    if envs is None:
        return ""
    if envs.layout == "image":
        return (
            f"\n# the environments, unpacked once here: each model's EXECUTION_ENV_PATH names "
            f"a folder of\n# {envs.root}, which Triton uses in place (no extraction at load)\n"
            f"COPY {ENVS_DIR}/ {envs.root}/\nRUN {UNPACK_STEP.format(root=envs.root)}\n"
        )
    return (
        f"\n# the environments the models share (EXECUTION_ENV_PATH "
        f"$$TRITON_MODEL_DIRECTORY/../../{ENVS_DIR}/...):\n# Triton unpacks each once, "
        f"for all the models that name it\nCOPY {ENVS_DIR}/ /{ENVS_DIR}/\n"
    )


def dockerfile(
    base_image: str,
    wheel: str,
    *,
    numpy_pin: str = "numpy<2",
    pin_reason: str = "",
    envs: Optional[EnvsInImage] = None,
) -> str:
    """A Dockerfile that installs tritonpy (the wheel ``wheel`` of ``wheels/``) for the
    liveness check into the container's own Python, keeping that Python's ``numpy_pin`` (the
    release's ``facts.numpy_pin``: ``numpy<2`` on every release, so that the install does not
    upgrade the numpy the container's stub runs with; ``pin_reason`` says why, cited),
    copies the repository to /models and serves it; ``envs`` brings ``envs/`` in (the shared
    layout: to /envs, beside /models; the image layout: unpacked into its root)."""
    ports = " ".join(str(port) for port in PORTS.values())
    envs_lines = _envs_lines(envs)
    probe = " ".join(PROBE_COMMAND)
    pin = f" '{numpy_pin}'" if numpy_pin else ""
    why = f"\n# {numpy_pin}: {pin_reason}." if numpy_pin and pin_reason else ""
    return f"""\
# Written by 'tritonpy export': the model repository inside the Triton container.
# Build: docker build -t IMAGE .
FROM {base_image}

# tritonpy itself (the one that wrote this export) for the liveness check below: 'tritonpy
# probe' sends each model one real request, which sees a model whose stub process died while
# Triton still says READY, over gRPC (the one protocol that reaches every kind of model:
# streams, sequences). tritonclient[grpc] comes from your package index at build time.
# (The models do not use this install: each brings tritonpy in its own environment.)
# PIP_BREAK_SYSTEM_PACKAGES: newer containers mark the system Python as externally managed.{why}
COPY {WHEELS_DIR}/{wheel} /tmp/{wheel}
RUN PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir /tmp/{wheel} \\
        'tritonclient[grpc]'{pin} && rm /tmp/{wheel}

# every model with its config.pbtxt, environment archive (EXECUTION_ENV_PATH) and, where the
# environment's Python differs from the container's, its triton_python_backend_stub
COPY {REPOSITORY_DIR}/ /models/
{envs_lines}
EXPOSE {ports}

# healthy = every READY model answers a real request (unpacking environment archives takes a
# while at start: the start period)
HEALTHCHECK --interval=30s --timeout=30s --start-period=300s --retries=3 \\
    CMD {probe} || exit 1

CMD ["tritonserver", "--model-repository=/models"]
"""


def dockerignore(*, shared_envs: bool = False) -> str:
    """Only the model repository, the shared environments and the tritonpy wheel go into the
    build context."""
    envs = f"!{ENVS_DIR}/\n" if shared_envs else ""
    return f"""\
# Written by 'tritonpy export': send only the model repository to the Docker build
*
!{REPOSITORY_DIR}/
{envs}!{WHEELS_DIR}/
**/__pycache__
"""


def readme(
    settings: DeploySettings,
    base_image: str,
    models: Sequence[str],
    *,
    envs: Optional[EnvsInImage] = None,
) -> str:
    """How to build, push, run and apply the export."""
    parts = [
        _readme_contents(settings, base_image, models),
        _readme_envs(envs),
        _readme_docker(settings, base_image),
        _readme_kubernetes(settings),
        _readme_object_storage(settings),
    ]
    return "\n".join(part for part in parts if part)


def _readme_contents(settings: DeploySettings, base_image: str, models: Sequence[str]) -> str:
    listed = "\n".join(f"- `{name}`" for name in models) or "- (none)"
    return f"""\
# Triton deployment of {len(models)} model{"s" * (len(models) != 1)}

Written by `tritonpy export` for Triton release {settings.release} (`{base_image}`).

{listed}

`{REPOSITORY_DIR}/` is a complete Triton model repository: full `config.pbtxt` files (no
auto-complete needed), each tritonpy model's environment archive (`EXECUTION_ENV_PATH`, with
numpy and tritonpy inside: the container's Python has no tritonpy) and, where an environment's
Python differs from the container's, a `triton_python_backend_stub` beside its `config.pbtxt`.
"""


def _readme_envs(envs: Optional[EnvsInImage]) -> str:
    if envs is None:
        return ""
    if envs.layout == "image":
        return f"""\
Environment layout `image`: the models of one spec share one environment. Their archives are in
`{ENVS_DIR}/`; the Dockerfile unpacks each into a folder of `{envs.root}`, which the models'
`EXECUTION_ENV_PATH` names (Triton uses a folder in place: nothing is extracted when a model
loads). The repository works only inside that image: for object storage or KServe export again
with `--env-layout per-model`.
"""
    return f"""\
Environment layout `shared`: the models of one spec share one archive in `{ENVS_DIR}/`, beside
`{REPOSITORY_DIR}/` (their `EXECUTION_ENV_PATH` is
`$$TRITON_MODEL_DIRECTORY/../../{ENVS_DIR}/<archive>`; Triton unpacks each archive once). Serve
the repository where it lies, or build the image (it copies `{ENVS_DIR}/` to `/{ENVS_DIR}`). It
does not travel to object storage or KServe, which copy each model directory alone: export
again with `--env-layout per-model` for those.
"""


def _readme_docker(settings: DeploySettings, base_image: str) -> str:
    return f"""\
## Run it in the Triton container

```
docker build -t {settings.image} .
docker run --rm -p 8000:8000 -p 8001:8001 -p 8002:8002 {settings.image}
curl -fsS localhost:{PORTS["http"]}{READY_PATH} && echo ready
```

Or without building an image, mount the repository into the stock container:

```
docker run --rm -p 8000:8000 -p 8001:8001 -p 8002:8002 \\
    -v "$PWD/{REPOSITORY_DIR}:/models" {base_image} \\
    tritonserver --model-repository=/models
```

Add `--gpus all` for models that use a GPU.

## Push it

```
docker tag {settings.image} REGISTRY/PROJECT/{settings.image}
docker push REGISTRY/PROJECT/{settings.image}
```

and set that name as the `image:` of `k8s/deployment.yaml`.
"""


def _readme_kubernetes(settings: DeploySettings) -> str:
    http = PORTS["http"]
    return f"""\
## Kubernetes

```
kubectl apply -f k8s/deployment.yaml
kubectl get pods -l app.kubernetes.io/name={settings.name}
kubectl port-forward service/{settings.name} {http}:{http}
```

The Deployment runs {settings.replicas} replica{"s" * (settings.replicas != 1)} with requests of
{settings.cpu} CPU and {settings.memory} memory (edit them for your models; add
`nvidia.com/gpu` limits for GPU models). Its readinessProbe is `{READY_PATH}` (all models
loaded: traffic waits until then) and its livenessProbe runs `{" ".join(PROBE_COMMAND)}` in
the container: one real request to each READY model, so a model whose stub process died (it
stays READY in Triton and fails every request) gets the pod restarted. The Service exposes
HTTP {PORTS["http"]}, gRPC {PORTS["grpc"]} and metrics {PORTS["metrics"]}.
"""


def _readme_object_storage(settings: DeploySettings) -> str:
    return f"""\
## KServe

`k8s/inferenceservice.yaml` serves the same repository with KServe's Triton runtime
(`kserve-tritonserver`, release {settings.release}). Copy `{REPOSITORY_DIR}/` to object storage
first and set `storageUri` to it:

```
aws s3 sync {REPOSITORY_DIR} s3://BUCKET/{settings.name}/{REPOSITORY_DIR}
kubectl apply -f k8s/inferenceservice.yaml
```

KServe's runtime serves HTTP on port 8080 and gRPC on 9000.

## Object storage without KServe

Triton reads a model repository from S3 directly:
`tritonserver --model-repository=s3://BUCKET/{settings.name}/{REPOSITORY_DIR}` (credentials
from the usual AWS environment variables), so many replicas share one copy.
"""
