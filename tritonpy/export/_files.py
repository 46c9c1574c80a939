"""The text files ``tritonpy export`` writes beside ``model_repository/``: the Dockerfile, its
``.dockerignore`` and the README that says how to build, push, run and apply.

Example::

    dockerfile("nvcr.io/nvidia/tritonserver:24.10-py3", "tritonpy-0.1.0-py3-none-any.whl")
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional, Sequence

from ._pod import GRACE_MARGIN_SECS, PORTS, PROBE_COMMAND, READY_PATH, DeploySettings
from ._resources import mebibytes
from ._scaling import ADAPTER_RULE, CPU_UTILIZATION, max_replicas

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
    repository_url: Optional[str] = None,
    server_args: Sequence[str] = (),
) -> str:
    """A Dockerfile that installs tritonpy (the wheel ``wheel`` of ``wheels/``) for the
    liveness check into the container's own Python, keeping that Python's ``numpy_pin`` (the
    release's ``facts.numpy_pin``: ``numpy<2`` on every release, so that the install does not
    upgrade the numpy the container's stub runs with; ``pin_reason`` says why, cited),
    copies the repository to /models and serves it; ``envs`` brings ``envs/`` in (the shared
    layout: to /envs, beside /models; the image layout: unpacked into its root). From a bucket
    (``repository_url``) the CMD is ``server_args``, the Deployment's command line."""
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

{_repository_lines(repository_url)}{envs_lines}
EXPOSE {ports}

# healthy = every READY model answers a real request (unpacking environment archives takes a
# while at start: the start period)
HEALTHCHECK --interval=30s --timeout=30s --start-period=300s --retries=3 \\
    CMD {probe} || exit 1

{_command(repository_url, server_args)}
"""


def _command(url: Optional[str], server_args: Sequence[str]) -> str:
    if url is None or not server_args:
        return f'CMD ["tritonserver", "--model-repository={url or "/models"}"]'
    return f"CMD {json.dumps(list(server_args))}"


def _repository_lines(url: Optional[str]) -> str:
    if url is not None:
        return (
            f"# no model repository in the image: tritonserver serves {url}, with the\n"
            "# credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION\n"
        )
    return (
        "# every model with its config.pbtxt, environment archive (EXECUTION_ENV_PATH) and, "
        "where the\n# environment's Python differs from the container's, its "
        f"triton_python_backend_stub\nCOPY {REPOSITORY_DIR}/ /models/\n"
    )


def dockerignore(*, shared_envs: bool = False, repository: bool = True) -> str:
    """Only the model repository (unless it is served from object storage), the shared
    environments and the tritonpy wheel go into the build context."""
    envs = f"!{ENVS_DIR}/\n" if shared_envs else ""
    models = f"!{REPOSITORY_DIR}/\n" if repository else ""
    return f"""\
# Written by 'tritonpy export': send only the model repository to the Docker build
*
{models}{envs}!{WHEELS_DIR}/
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
    limits = settings.limits
    copied = ", and Triton copies each model directory there from the bucket"
    copied = copied if settings.secret is not None else ""
    return f"""\
## Kubernetes

{_readme_secret(settings)}```
kubectl apply -f k8s/deployment.yaml
kubectl get pods -l app.kubernetes.io/name={settings.name}
kubectl port-forward service/{settings.name} {http}:{http}
```

`k8s/deployment.yaml` holds the Deployment, its Service (HTTP {PORTS["http"]}, gRPC
{PORTS["grpc"]}, metrics {PORTS["metrics"]}), a PodDisruptionBudget (one pod down at a time) and
a HorizontalPodAutoscaler. The Deployment runs {settings.replicas}
replica{"s" * (settings.replicas != 1)} of `{" ".join(settings.server_args)}`:

- as the image's non-root user `triton-server` (uid 1000), no privilege escalation, no
  capabilities, seccomp RuntimeDefault, a read-only root file system;
- `/dev/shm` a memory-backed emptyDir of {mebibytes(settings.shm_bytes)} (the Python backend's
  shared-memory region of {settings.shm_default_byte_size} bytes per model instance, sized from
  the models' tensors at their max_batch_size; `--shm-size` overrides it) and `/tmp` an emptyDir
  of {mebibytes(settings.tmp_bytes)} (environment archives are unpacked there{copied});
- requests {settings.cpu} CPU / {settings.memory}, limits {limits["cpu"]} CPU /
  {limits["memory"]} (the memory limit holds the request plus `/dev/shm`, which counts against
  it); add `nvidia.com/gpu` limits for GPU models;
- a startupProbe on `{READY_PATH}` allowing {settings.startup_seconds} s (environments unpack at
  load), readiness on `{READY_PATH}` (traffic waits until every model is loaded), and liveness
  by `{" ".join(PROBE_COMMAND)}`: one real request to each READY model, so a model whose stub
  process died (it stays READY in Triton and fails every request) gets the pod restarted;
- `terminationGracePeriodSeconds` {settings.exit_timeout + GRACE_MARGIN_SECS}, longer than the
  server's `--exit-timeout-secs={settings.exit_timeout}`, so in-flight requests finish.

The autoscaler keeps {settings.replicas} to {max_replicas(settings)} replicas on Triton's average
queue time per request (`avg_time_queue_us`, target {settings.queue_time_us} µs, as Triton's
`deploy/k8s-onprem` chart) and CPU ({CPU_UTILIZATION} %). The queue-time metric needs Prometheus
scraping the pods' metrics port and the prometheus adapter serving this rule:

```
{ADAPTER_RULE}```
"""


def _readme_secret(settings: DeploySettings) -> str:
    if settings.secret is None:
        return ""
    return f"""\
The pods read the repository from `{settings.repository}` with the credentials of the Secret
`{settings.secret}` (its keys: `k8s/secret-template.yaml`). Create it first, with real values
(never commit them):

```
kubectl create secret generic {settings.secret} \\
    --from-literal=AWS_ACCESS_KEY_ID=... --from-literal=AWS_SECRET_ACCESS_KEY=... \\
    --from-literal=AWS_DEFAULT_REGION=...
```

"""


def _readme_object_storage(settings: DeploySettings) -> str:
    if settings.secret is not None:
        publish = f"""\
`tritonpy export --to {settings.repository}` published `{REPOSITORY_DIR}/` there. To publish it
again, run `tritonpy publish {REPOSITORY_DIR} {settings.repository}`; for a new `model.py` of a
model, `tritonpy publish {REPOSITORY_DIR} {settings.repository} --new-version --model NAME`, then
load it pod by pod (the pods run explicit model control, every model loaded at the start):
`tritonpy rollout --replica POD_IP:8001 [--replica ...] --model NAME`."""
    else:
        publish = f"""\
Publish `{REPOSITORY_DIR}/` first: `tritonpy publish {REPOSITORY_DIR} s3://BUCKET/PREFIX`
(or export again with `--to s3://BUCKET/PREFIX`, which also points the manifests at it)."""
    return f"""\
## Object storage

{publish} Triton reads the repository from the bucket directly
(`tritonserver --model-repository=s3://BUCKET/PREFIX`, or `s3://host:port/BUCKET/PREFIX` for an
S3-compatible store; credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_DEFAULT_REGION`), so many replicas share one copy. Every environment stays inside its
model directory (`$$TRITON_MODEL_DIRECTORY/...`): Triton copies each model directory alone.

## KServe

`k8s/inferenceservice.yaml` serves the same repository with KServe's Triton runtime
(`kserve-tritonserver`, release {settings.release}); its `storageUri` is the bucket's
`s3://BUCKET/PREFIX` (for an S3-compatible store, KServe takes the endpoint from its S3 Secret's
`serving.kserve.io/s3-endpoint` annotation). Then:

```
kubectl apply -f k8s/inferenceservice.yaml
```

KServe's runtime serves HTTP on port 8080 and gRPC on 9000.
"""
