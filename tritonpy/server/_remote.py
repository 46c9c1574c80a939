"""A model repository in object storage (``s3://``), as a :class:`~tritonpy.server.TritonServer`
serves it: tritonserver reads the bucket itself (``--model-repository=s3://...``); tritonpy
lists the bucket for the models to wait for and to watch, and keeps a small local *mirror* of
each model's ``config.pbtxt`` (and empty version folders) for what reads configurations: the
console's model names, ensembles followed by the watcher, the fix of a failed load.

Nothing else is copied to serve: tritonserver copies a model directory out of the bucket at
each load (core@r24.10:src/filesystem/implementations/s3.h ``LocalizePath``), so a reload
through the repository API reads the bucket again. The preflight check (``check=True``) runs
on a temporary full copy, removed once checked.

Example::

    remote = RemoteRepository(parse_repository_url("s3://127.0.0.1:9000/models/repo"), env)
    remote.models()          # ['add_sub', 'preprocess']
    remote.snapshot()        # {'add_sub': (('1/model.py', '9e10...', 412), ...), ...}
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from .._tooling.errors import ServerError
from .._tooling.installation import Installation
from .._tooling.model_dirs import SERIAL_LOADS_ARG, STUB_NAME
from .._tooling.options import OptionNames
from ..storage import (
    RepositoryURL,
    StorageError,
    TemporaryDownload,
    describe_empty_prefix,
    is_remote,
    list_objects,
    parse_s3_url,
    s3_client,
)

if TYPE_CHECKING:
    from ..check import Report

#: a model's objects: (key under the model's folder, ETag, size), sorted
RemoteFingerprint = Tuple[Tuple[str, str, int], ...]

_CONFIG = "config.pbtxt"


class RemoteRepository:
    """The bucket folder ``url`` read with the credentials of ``env`` (the server's
    environment: the AWS_* variables tritonserver reads).

    ``models()`` and ``snapshot()`` list the folder (one paginated ``ListObjectsV2``);
    ``mirror`` is the local directory of configurations (made by :meth:`refresh_mirror`,
    removed by :meth:`remove_mirror`). Errors are :class:`ServerError` whose message names
    the URL, what the store answered and the fix.
    """

    def __init__(self, url: RepositoryURL, env: Mapping[str, str]) -> None:
        self.url = url
        self.env = dict(env)
        self._client: Any = None
        self._mirror_base: Optional[Path] = None
        #: the models whose folder holds a triton_python_backend_stub (at the last check)
        self.stub_models: List[str] = []
        self.mirror = Path(tempfile.gettempdir()) / "tritonpy-s3-unmirrored" / _leaf(url)

    # ------------------------------------------------------------------ listing
    def client(self) -> Any:
        """The boto3 client (made on first use, with the server's credentials)."""
        if self._client is None:
            try:
                self._client = s3_client(self.url, env=self.env)
            except StorageError as exc:
                raise ServerError(f"cannot serve {self.url}: {exc}") from exc
        return self._client

    def snapshot(self) -> Dict[str, RemoteFingerprint]:
        """Each model folder's objects with their ETags and sizes (hidden folders and
        objects beside the models left out, as for a local repository)."""
        shot: Dict[str, List[Tuple[str, str, int]]] = {}
        try:
            objects = list(list_objects(self.client(), self.url, markers=True))
        except StorageError as exc:  # its message names the URL and the fix
            raise ServerError(str(exc)) from exc
        for key, etag, size in objects:
            model, slash, rest = key.partition("/")
            if not slash or not model or model.startswith(".") or not rest:
                continue  # an object beside the models (a README)
            shot.setdefault(model, []).append((rest, etag, size))
        return {name: tuple(sorted(entries)) for name, entries in sorted(shot.items())}

    def models(self) -> List[str]:
        """The model folders under the URL, sorted."""
        return sorted(self.snapshot())

    def check_reachable(self) -> List[str]:
        """The models, or :class:`ServerError` saying why the folder cannot be served: the
        store unreachable, credentials refused, no such bucket, nothing under the prefix."""
        shot = self.snapshot()
        if not shot:
            raise ServerError(
                f"cannot serve {self.url}: {describe_empty_prefix(self.client(), self.url)}"
            )
        self.stub_models = [
            m for m, objects in shot.items() if any(k == STUB_NAME for k, _, _ in objects)
        ]
        return sorted(shot)

    # ------------------------------------------------------------------ mirror
    def start_mirror(self) -> Path:
        """Check that the folder can be served, then make the mirror; returns its path."""
        self.check_reachable()
        return self.refresh_mirror()

    def refresh_mirror(self, models: Optional[List[str]] = None) -> Path:
        """Download the ``config.pbtxt`` of ``models`` (default: all) into the mirror and
        make each version folder there; drop mirrored models that are gone. Returns it."""
        if self._mirror_base is None:
            self._mirror_base = Path(tempfile.mkdtemp(prefix="tritonpy-s3-"))
            self.mirror = self._mirror_base / _leaf(self.url)
            self.mirror.mkdir()
        shot = self.snapshot()
        for name in [p.name for p in self.mirror.iterdir()]:
            if name not in shot:
                shutil.rmtree(self.mirror / name, ignore_errors=True)
        for name in models if models is not None else sorted(shot):
            self._mirror_model(name, shot.get(name, ()))
        return self.mirror

    def _mirror_model(self, name: str, entries: RemoteFingerprint) -> None:
        target = self.mirror / name
        if not entries:
            shutil.rmtree(target, ignore_errors=True)
            return
        target.mkdir(exist_ok=True)
        for key, _, _ in entries:
            first = key.split("/")[0]
            if first.isdigit() and "/" in key:
                (target / first).mkdir(exist_ok=True)
        if any(key == _CONFIG for key, _, _ in entries):
            try:
                self.client().download_file(
                    self.url.bucket, self.url.key(f"{name}/{_CONFIG}"), str(target / _CONFIG)
                )
            except Exception as exc:  # botocore's errors, named in the message
                raise ServerError(
                    f"cannot read {self.url.child(name)}/{_CONFIG}: {exc}. Check the "
                    "credentials' read permission on the bucket."
                ) from exc

    def remove_mirror(self) -> None:
        """Remove the mirror (when the server stops)."""
        if self._mirror_base is not None:
            shutil.rmtree(self._mirror_base, ignore_errors=True)
            self._mirror_base = None


def _leaf(url: RepositoryURL) -> str:
    return (url.prefix.rsplit("/", 1)[-1] if url.prefix else url.bucket) or "repository"


def open_remote(repository: object, env: Mapping[str, str]) -> Optional[RemoteRepository]:
    """A :class:`RemoteRepository` for an ``s3://`` ``repository`` (credentials: ``env`` over
    ``os.environ``, what the server's process gets), ``None`` for a local path.

    :class:`ServerError` for a URL tritonserver would misread, and for ``gs://``/``as://``,
    which tritonpy cannot list (tritonserver reads them; run it directly for those).
    """
    text = os.fspath(repository) if isinstance(repository, os.PathLike) else str(repository)
    if not is_remote(text):
        return None
    try:
        url = parse_s3_url(text)
    except StorageError as exc:
        raise ServerError(f"cannot serve {text}: {exc}") from exc
    return RemoteRepository(url, {**os.environ, **env})


def prepare_remote(
    remote: RemoteRepository,
    installation: Installation,
    check: bool,
    names: OptionNames,
) -> Optional[Report]:
    """What ``start()`` does before launching on a bucket: the folder is listed (a store that
    cannot be reached, refused credentials or an empty prefix fail here, in a second, rather
    than as a server that never becomes ready), and with ``check`` the preflight check runs on
    a temporary full copy against the serving Python. No stub is provided from the wheel here
    (``env_stubs``): nothing is written into the bucket, so a model whose environment has
    another Python than the server's needs its stub published beside its config.pbtxt
    (``tritonpy export`` places it), which the check reports (TP507) before the server
    starts."""
    from ._preflight import preflight

    remote.check_reachable()
    if not check:
        return None
    try:
        with TemporaryDownload(remote.url, env=remote.env) as copy:
            return preflight(
                copy.path,
                server_python=installation.python_xy,
                names=names,
                shown_as=str(remote.url),
            )
    except StorageError as exc:
        raise ServerError(f"cannot check {remote.url} before serving it: {exc}") from exc


def load_args(remote: Optional[RemoteRepository], extra_args: List[str]) -> List[str]:
    """The extra arguments a server on ``remote`` needs: ``SERIAL_LOADS_ARG`` (one load at a
    time, see tritonpy._tooling.model_dirs) when a model of
    the bucket publishes a stub and ``extra_args`` set no load thread count of their own."""
    if remote is None or not remote.stub_models:
        return []
    if any(a.startswith("--model-load-thread-count") for a in extra_args):
        return []
    return [SERIAL_LOADS_ARG]
