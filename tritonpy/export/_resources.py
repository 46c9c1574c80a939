"""What a pod needs for an exported repository, read from its files: the shared memory of the
Python backend (``/dev/shm``), the writable ``/tmp`` (environments unpacked there, and the model
directories Triton copies there from object storage), and Kubernetes memory quantities.

The Python backend gives every model instance one shared-memory region in ``/dev/shm``, made
``shm-default-byte-size`` large and grown by ``shm-growth-byte-size`` whenever a request's or a
response's tensors need more (both 1 MiB by default: python_backend@r24.10:src/python_be.cc,
``shm_default_byte_size = 1 * 1024 * 1024``; README.md "Managing Shared Memory"). A container's
default ``/dev/shm`` is 64 MB, which a batch of images overflows (server issues 6195, 4869).

Example::

    footprint = repository_footprint(Path("deploy/model_repository"))
    footprint.shm_bytes, footprint.tmp_bytes, footprint.shm_default_byte_size
"""

from __future__ import annotations

import math
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .._tooling.model_dirs import model_directories
from .._tooling.pbtxt import ConfigError, data_type_name, load_config

MIB = 1024 * 1024
#: the Python backend's defaults (python_backend@r24.10:src/python_be.cc)
SHM_DEFAULT_BYTES = MIB
SHM_GROWTH_BYTES = MIB
#: assumption: a variable (-1) dimension holds this many elements when sizing shared memory
VARIABLE_DIM = 256
#: assumption: one TYPE_STRING (BYTES) element of this many bytes
BYTES_ELEMENT = 1024
#: beyond the regions: growth steps, the stub's message queues, other users of /dev/shm
SHM_HEADROOM = 64 * MIB
#: beyond the unpacked environments in /tmp: logs, the stubs' own temporary files
TMP_HEADROOM = 512 * MIB
_DTYPE_BYTES: Dict[str, int] = {
    "TYPE_BOOL": 1, "TYPE_UINT8": 1, "TYPE_INT8": 1, "TYPE_UINT16": 2, "TYPE_INT16": 2,
    "TYPE_FP16": 2, "TYPE_BF16": 2, "TYPE_UINT32": 4, "TYPE_INT32": 4, "TYPE_FP32": 4,
    "TYPE_UINT64": 8, "TYPE_INT64": 8, "TYPE_FP64": 8, "TYPE_STRING": BYTES_ELEMENT,
}  # fmt: skip
_ENV_PREFIX = "$$TRITON_MODEL_DIRECTORY/"


@dataclass(frozen=True)
class ModelFootprint:
    """One model: its Python-backend ``instances`` (0 for other backends), the bytes of one
    request's inputs plus its outputs at ``max_batch_size`` (``tensor_bytes``), the unpacked
    size of its environment archive and the size of its directory."""

    name: str
    instances: int
    tensor_bytes: int
    env_bytes: int
    files_bytes: int

    @property
    def region_bytes(self) -> int:
        """One instance's shared-memory region: the default, or what one batch needs."""
        return max(SHM_DEFAULT_BYTES, _round_mib(self.tensor_bytes))


@dataclass(frozen=True)
class Footprint:
    """The models of a repository, and what their pod needs."""

    models: Tuple[ModelFootprint, ...]
    remote: bool = False

    @property
    def python_instances(self) -> int:
        return sum(m.instances for m in self.models)

    @property
    def shm_default_byte_size(self) -> int:
        """``--backend-config=python,shm-default-byte-size``: the largest region one
        instance needs, so that a batch needs no growth step."""
        return max([m.region_bytes for m in self.models if m.instances] or [SHM_DEFAULT_BYTES])

    @property
    def shm_bytes(self) -> int:
        """``/dev/shm``: every Python instance's region plus :data:`SHM_HEADROOM`."""
        regions = sum(m.instances * self.shm_default_byte_size for m in self.models)
        return regions + SHM_HEADROOM

    @property
    def tmp_bytes(self) -> int:
        """``/tmp``: the unpacked environments (``/tmp/python_env_*``), the model directories
        when Triton copies them from object storage, plus :data:`TMP_HEADROOM`. From object
        storage, every load of a model extracts its archive again into a new folder (the
        Python backend keys extractions by the archive's path, pb_env.cc, and each load's copy
        has a new one) and keeps the old one until the server exits: room for one reload of
        every model (a rollout) beside the first load."""
        envs = sum(m.env_bytes for m in self.models)
        files = sum(m.files_bytes for m in self.models) if self.remote else 0
        loads = REMOTE_LOADS if self.remote else 1
        return _round_mib(envs * loads + files) + TMP_HEADROOM

    @property
    def env_bytes(self) -> int:
        return sum(m.env_bytes for m in self.models)


#: the loads of each model a pod's /tmp holds the unpacked environments of, from a bucket
REMOTE_LOADS = 2


def _round_mib(size: int) -> int:
    return math.ceil(size / MIB) * MIB


def _tensor_bytes(tensor: Any, batch: int) -> int:
    elements = batch
    for dim in tensor.dims:
        elements *= VARIABLE_DIM if dim < 0 else int(dim)
    return elements * _DTYPE_BYTES.get(data_type_name(tensor.data_type), 8)


def _instances(config: Any) -> int:
    # no instance_group: one instance for the Python backend (core@r24.10:
    # src/model_config_utils.cc SetDefaultInstanceCount); a GPU group: count per GPU listed
    groups = list(config.instance_group)
    if not groups:
        return 1
    return sum(max(1, g.count or 1) * max(1, len(g.gpus)) for g in groups)


def _archive(model: Path, config: Any, seen: Dict[Path, int]) -> int:
    """The unpacked size of the model's ``EXECUTION_ENV_PATH`` archive, counted once per
    real path (the Python backend extracts each real path once: pb_env.cc)."""
    parameter = config.parameters.get("EXECUTION_ENV_PATH")
    value: str = parameter.string_value if parameter is not None else ""
    if not value.startswith(_ENV_PREFIX) or not value.endswith((".tar.gz", ".tgz")):
        return 0  # none, or a folder used in place (the image layout): nothing unpacked
    path = (model / value[len(_ENV_PREFIX) :]).resolve()
    if path in seen or not path.is_file():
        return 0
    try:
        with tarfile.open(path) as archive:
            seen[path] = sum(member.size for member in archive.getmembers())
    except (tarfile.TarError, OSError) as error:
        from ._models import ExportError  # _models imports _files, which imports _pod, this

        raise ExportError(
            f"model {model.name!r}: its environment archive {path} cannot be read ({error}); "
            "the pod's /tmp is sized from it. Rebuild it with 'tritonpy pack-env'"
        ) from error
    return seen[path]


def model_footprint(model: Path, seen: Optional[Dict[Path, int]] = None) -> ModelFootprint:
    """What ``model`` (a directory with its ``config.pbtxt``) needs; ``seen`` shares the
    archives already counted between models."""
    files = sum(p.stat().st_size for p in model.rglob("*") if p.is_file())
    try:
        config = load_config(model / "config.pbtxt")
    except (ConfigError, OSError):
        return ModelFootprint(model.name, 0, 0, 0, files)
    if config.backend != "python":
        return ModelFootprint(model.name, 0, 0, 0, files)
    batch = max(1, int(config.max_batch_size))
    tensors = list(config.input) + list(config.output)
    size = sum(_tensor_bytes(tensor, batch) for tensor in tensors)
    env = _archive(model, config, {} if seen is None else seen)
    return ModelFootprint(model.name, _instances(config), size, env, files)


def repository_footprint(repository: Path, *, remote: bool = False) -> Footprint:
    """The footprint of every model of ``repository``; ``remote``: served from object storage
    (Triton copies each model directory to ``/tmp`` at each load)."""
    seen: Dict[Path, int] = {}
    models: List[ModelFootprint] = [model_footprint(m, seen) for m in model_directories(repository)]
    return Footprint(tuple(models), remote)


_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_FACTORS = {
    None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip


def memory_bytes(quantity: str, option: str) -> int:
    """The bytes of a Kubernetes memory quantity (``2Gi``, ``512Mi``, ``1G``, ``1000000``);
    :class:`ExportError` naming ``option`` for anything else."""
    found = _QUANTITY.match(quantity.strip())
    if not found:
        from ._models import ExportError

        raise ExportError(
            f"{option} {quantity!r} is not a Kubernetes memory quantity: expected a number "
            "with an optional suffix Ki, Mi, Gi, Ti (or k, M, G, T), e.g. 2Gi or 512Mi"
        )
    return math.ceil(float(found.group(1)) * _FACTORS[found.group(2)])


def mebibytes(size: int) -> str:
    """``size`` bytes as a quantity in Mi, rounded up (``mebibytes(3 * MIB + 1) == "4Mi"``)."""
    return f"{math.ceil(size / MIB)}Mi"
