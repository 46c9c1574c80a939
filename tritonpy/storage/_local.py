"""A local model repository as publish reads it: the files of each model folder (symbolic links
followed; hidden entries, ``__pycache__`` and ``*.pyc`` left out), its version folders, and
the checks that make a model servable straight from a bucket.

tritonserver copies each model directory alone out of the bucket at each load
(core@r24.10:src/filesystem/implementations/s3.h ``LocalizePath``), so an environment must be
named ``$$TRITON_MODEL_DIRECTORY/<archive>`` and lie inside the model's folder. A
``triton_python_backend_stub`` needs nothing: object stores keep no file modes, and the Python
backend runs the stub once and makes it executable when it does not run
(python_backend@r24.10:src/stub_launcher.cc, ``chmod(python_backend_stub, S_IXUSR)`` when the
bare stub's exit status is not 1; python_backend@r26.02:src/stub_launcher.cc does the same
when ``IsExecutableFile`` is false).

Example::

    models = read_repository(Path("out/model_repository"), None)
    models[0].name, models[0].versions        # ('preprocess', [1])
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .._runtime.errors import MissingDependencyError
from .._tooling.model_dirs import CONFIG_FILE, ENV_PARAMETER, MODEL_DIR_VARIABLE, model_directories
from .._tooling.pbtxt import ConfigError, parse_config
from ._errors import StorageError


class PublishError(StorageError):
    """The local repository (or the options) cannot be published as they are; nothing was
    uploaded. The message names the model, the file, what was expected and the fix."""


@dataclass(frozen=True)
class LocalFile:
    """One file to publish: ``rel`` its path below the model folder (``/``-separated),
    ``path`` where it is read from (a symbolic link's target is read), ``size`` in bytes."""

    rel: str
    path: Path
    size: int


@dataclass
class LocalModel:
    """A model folder: its ``files``, the ``empty_versions`` (version folders holding nothing
    to publish, such as an ensemble's ``1/``: published as folder markers) and the
    ``server_environment`` its config names on the servers' disk, if any."""

    name: str
    path: Path
    files: List[LocalFile] = field(default_factory=list)
    empty_versions: List[int] = field(default_factory=list)
    #: an EXECUTION_ENV_PATH folder the servers hold themselves (the image layout)
    server_environment: Optional[str] = None

    @property
    def versions(self) -> List[int]:
        """The version folders (numeric top-level folders), ascending."""
        found = {int(f.rel.split("/", 1)[0]) for f in self.files if _version_of(f.rel)}
        return sorted(found | set(self.empty_versions))


def _version_of(rel: str) -> bool:
    head, slash, _ = rel.partition("/")
    return bool(slash) and head.isdigit()


def _skipped(name: str) -> bool:
    return name.startswith(".") or name == "__pycache__" or name.endswith(".pyc")


def _walk(model: Path) -> LocalModel:
    found = LocalModel(model.name, model)
    for top, dirs, files in os.walk(model, followlinks=True):
        here = Path(top)
        real = here.resolve()
        for name in list(dirs):
            target = (here / name).resolve()
            if target == real or target in real.parents:
                raise PublishError(
                    f"model {model.name!r}: {here / name} is a symbolic link to {target}, a "
                    "folder it lies in (a loop); expected a link to a file or another folder: "
                    "remove the link"
                )
        dirs[:] = sorted(name for name in dirs if not _skipped(name))
        rel_top = here.relative_to(model).as_posix()
        for name in sorted(files):
            if _skipped(name):
                continue
            path = here / name
            try:
                size = path.stat().st_size
            except OSError as exc:
                raise PublishError(
                    f"model {model.name!r}: cannot read {path} ({exc.strerror or exc}); "
                    "expected a readable file (a broken symbolic link?): fix or remove it"
                ) from exc
            rel = name if rel_top == "." else f"{rel_top}/{name}"
            found.files.append(LocalFile(rel, path, size))
    filled = set(found.versions)
    found.empty_versions = sorted(
        int(path.name)
        for path in model.iterdir()
        if path.name.isdigit() and path.is_dir() and int(path.name) not in filled
    )
    return found


_ENV_VALUE = re.compile(
    r"key\s*:\s*[\"']" + ENV_PARAMETER + r"[\"']\s*value\s*:?\s*\{\s*string_value\s*:\s*"
    r"(?P<q>[\"'])(?P<value>.*?)(?P=q)",
    re.S,
)


def env_parameter(config: Path) -> Optional[str]:
    """The ``EXECUTION_ENV_PATH`` of ``config`` (``config.pbtxt``), or None: read with
    protobuf when the ``config`` extra is installed, else found in the text."""
    text = config.read_text(encoding="utf-8", errors="replace")
    if ENV_PARAMETER not in text:
        return None
    try:
        message = parse_config(text, str(config))
    except MissingDependencyError:  # the s3 extra alone (no protobuf): the text is enough
        text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
        matched = _ENV_VALUE.search(text)
        return matched.group("value") if matched else None
    except ConfigError as exc:
        raise PublishError(
            f"{exc}; tritonserver would refuse this model too: fix it (tritonpy check REPO "
            "names the field) before publishing"
        ) from exc
    if ENV_PARAMETER not in message.parameters:
        return None
    return str(message.parameters[ENV_PARAMETER].string_value) or None


def check_environment(model: LocalModel) -> Optional[str]:
    """:class:`PublishError` unless the model's environment (if any) is an archive inside its
    folder named through ``$$TRITON_MODEL_DIRECTORY`` and among the files published, or an
    absolute folder, which the servers themselves hold (``tritonpy export --env-layout image``
    unpacks the environments into the image): that folder is returned."""
    config = model.path / CONFIG_FILE
    if not config.is_file():
        return None
    value = env_parameter(config)
    if value is None:
        return None
    if os.path.isabs(value) and not value.endswith((".tar.gz", ".tgz")):
        return value  # on the server's own disk: not ours to see from here
    where = f"model {model.name!r}: {config} sets {ENV_PARAMETER} to {value!r}"
    fix = (
        "Fix: run tritonpy export REPO OUT (it puts each environment archive into its model "
        "folder and names it through $$TRITON_MODEL_DIRECTORY), then publish OUT/model_repository"
    )
    prefix = f"{MODEL_DIR_VARIABLE}/"
    rel = os.path.normpath(value[len(prefix) :]) if value.startswith(prefix) else ""
    if not rel or rel.startswith("..") or os.path.isabs(rel):
        raise PublishError(
            f"{where}; expected '{prefix}<archive>' inside the model's folder: tritonserver "
            f"copies each model folder alone out of the bucket, so no other path exists on "
            f"the server. {fix}."
        )
    target = model.path / rel
    if target.is_dir():
        raise PublishError(
            f"{where}, a folder; expected an archive (.tar.gz): a bucket keeps no file modes "
            f"or links, so an unpacked environment does not survive it. Pack it (tritonpy "
            f"pack-env {model.path}) or {fix[5:]}."
        )
    published = {f.rel for f in model.files}
    if Path(rel).as_posix() not in published:
        state = "is hidden (not published)" if target.exists() else "does not exist"
        raise PublishError(
            f"{where}, but {target} {state}; expected the environment archive there. Pack "
            f"it (tritonpy pack-env {model.path}) or {fix[5:]}."
        )
    return None


def read_repository(root: Path, models: Optional[Sequence[str]]) -> List[LocalModel]:
    """The model folders of ``root`` (only ``models`` when given), read and checked;
    :class:`PublishError` for a missing repository, no model folder, an unknown name or an
    environment tritonserver cannot find after copying the folder out of the bucket."""
    if not root.is_dir():
        raise PublishError(
            f"model repository {root} is not a directory; expected the folder holding one "
            "folder per model (an export's model_repository/)"
        )
    folders: Dict[str, Path] = {path.name: path for path in model_directories(root)}
    if (root / CONFIG_FILE).is_file():
        raise PublishError(
            f"{root} is a model folder (it holds {CONFIG_FILE}); expected the model repository "
            f"holding one folder per model: pass its parent ({root.parent}), with --model "
            f"{root.name} to publish this model alone"
        )
    if not folders:
        raise PublishError(
            f"model repository {root} holds no model folder; expected one folder per model "
            "(config.pbtxt, version folders): pass the repository folder (tritonpy export "
            "writes OUT/model_repository)"
        )
    chosen = list(dict.fromkeys(models)) if models else sorted(folders)
    unknown = [name for name in chosen if name not in folders]
    if unknown:
        raise PublishError(
            f"model(s) {', '.join(map(repr, unknown))} not in {root}; its models: "
            f"{', '.join(sorted(folders))}. Fix the --model name(s)."
        )
    read = [_walk(folders[name]) for name in chosen]
    for model in read:
        model.server_environment = check_environment(model)
    return read
