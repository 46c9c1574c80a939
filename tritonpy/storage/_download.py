"""A local copy of a repository in object storage, for the tools that read files (``check``,
the preflight check of ``serve``): every object under the URL's prefix, laid out as tritonserver
lays out its own copy of each model directory (core@r24.10:src/filesystem/implementations/s3.h
``LocalizePath``: one local file per object, the key's path below the prefix).

Example::

    copy = download_repository("s3://127.0.0.1:9000/models/repo", "/tmp/repo-copy")
    copy.models          # ['add_sub', 'preprocess']
    copy.bytes           # 48211
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ._client import parse_s3_url, s3_client
from ._errors import StorageError
from ._urls import RepositoryURL

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class DownloadedRepository:
    """What :func:`download_repository` wrote: the local ``path``, the ``models`` found (model
    folders, sorted), the number of ``files`` and their ``bytes``."""

    url: RepositoryURL
    path: Path
    models: List[str] = field(default_factory=list)
    files: int = 0
    bytes: int = 0


def list_objects(
    client: Any, url: RepositoryURL, *, markers: bool = False
) -> Iterator[Tuple[str, str, int]]:
    """``(key below the URL's prefix, ETag, size)`` of every object under ``url``; folder
    markers (keys ending in ``/``: how ``publish`` keeps an empty version folder, which
    tritonserver takes for a folder) only with ``markers``. :class:`StorageError` names what
    the store answered (no such bucket, refused credentials, nobody listening)."""
    prefix = f"{url.prefix}/" if url.prefix else ""
    try:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=url.bucket, Prefix=prefix)
        for page in pages:
            for item in page.get("Contents", []):
                key = str(item["Key"])[len(prefix) :]
                if key and (markers or not key.endswith("/")):
                    yield key, str(item.get("ETag", "")).strip('"'), int(item.get("Size", 0))
    except StorageError:
        raise
    except Exception as exc:  # botocore's errors: the code is read from the exception
        raise StorageError(store_failure(url, exc, "list")) from exc


def error_code(exc: BaseException) -> str:
    """botocore's error code of ``exc`` (``NoSuchBucket``, ``AccessDenied``...), or ``""``."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def store_failure(url: RepositoryURL, exc: BaseException, doing: str) -> str:
    """What a failed ``doing`` (``list``, ``read``, ``write``) on ``url`` means, and the fix."""
    code = error_code(exc)
    where = url.display_endpoint
    if code == "NoSuchBucket":
        return (
            f"cannot {doing} {url}: bucket {url.bucket!r} does not exist at {where}. Create it "
            "first (aws s3 mb), or fix the bucket's name in the URL."
        )
    if code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403"):
        return (
            f"cannot {doing} {url}: {where} refused the credentials ({code}). Set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_DEFAULT_REGION) of a key "
            f"allowed to {doing} the bucket."
        )
    if "Could not connect" in str(exc) or "EndpointConnectionError" in type(exc).__name__:
        return (
            f"cannot {doing} {url}: no S3 store answers at {where} ({exc}). Check the host and "
            "port in the URL (s3://HOST:PORT/BUCKET/PREFIX; s3://https://HOST:PORT/... for "
            "HTTPS) and that the store is running."
        )
    return f"cannot {doing} {url} at {where}: {type(exc).__name__}: {exc}"


def download_repository(
    url: Union[RepositoryURL, str],
    dest: PathLike,
    *,
    env: Optional[Mapping[str, str]] = None,
    models: Optional[Sequence[str]] = None,
) -> DownloadedRepository:
    """Copy every object under ``url`` (or only the folders of ``models``) into the empty or
    missing directory ``dest``, as tritonserver copies a model directory out of the bucket.

    Credentials come from ``env`` (default ``os.environ``), read as tritonserver reads them.
    Raises :class:`StorageError` when the store cannot be listed or read, when ``dest`` is not
    empty, or when nothing lies under the URL (naming the folders that do).

    Example::

        copy = download_repository("s3://models/prod", "checkout", models=["preprocess"])
    """
    parsed = parse_s3_url(url)
    target = Path(dest)
    if target.exists() and any(target.iterdir()):
        raise StorageError(
            f"cannot download {parsed} into {target}: the directory is not empty. Give a new "
            "or empty directory."
        )
    client = s3_client(parsed, env=env)
    wanted = None if models is None else set(models)
    entries = [
        (key, size)
        for key, _, size in list_objects(client, parsed, markers=True)
        if wanted is None or key.split("/", 1)[0] in wanted
    ]
    if not entries:
        raise StorageError(f"cannot download {parsed}: {describe_empty_prefix(client, parsed)}")
    result = DownloadedRepository(parsed, target)
    target.mkdir(parents=True, exist_ok=True)
    for key, size in entries:
        local = target.joinpath(*key.split("/"))
        if key.endswith("/"):  # a folder marker: an empty folder, as tritonserver sees it
            local.mkdir(parents=True, exist_ok=True)
            continue
        local.parent.mkdir(parents=True, exist_ok=True)
        try:
            client.download_file(parsed.bucket, parsed.key(key), str(local))
        except Exception as exc:  # botocore's errors
            raise StorageError(store_failure(parsed.child(key), exc, "read")) from exc
        result.files += 1
        result.bytes += size
    result.models = sorted({key.split("/", 1)[0] for key, _ in entries if "/" in key.strip("/")})
    return result


def describe_empty_prefix(client: Any, url: RepositoryURL) -> str:
    """Why the listing of ``url`` was empty, naming the folders beside its prefix."""
    parent, _, _ = url.prefix.rpartition("/")
    prefix = f"{parent}/" if parent else ""
    try:
        answer = client.list_objects_v2(Bucket=url.bucket, Prefix=prefix, Delimiter="/", MaxKeys=50)
        near = sorted(p["Prefix"].rstrip("/") for p in answer.get("CommonPrefixes", []))
    except Exception:  # only a suggestion
        near = []
    listed = f" Folders there: {', '.join(near[:10])}." if near else ""
    return (
        f"there is no object under {url.prefix or 'the bucket'!r} in bucket {url.bucket!r} "
        f"({url.display_endpoint}).{listed} Publish the repository first (tritonpy publish "
        f"REPO {url}) or fix the prefix."
    )


class TemporaryDownload:
    """:func:`download_repository` into a new temporary directory, removed on exit.

    Example::

        with TemporaryDownload("s3://models/prod") as copy:
            check_repository(copy.path)
    """

    def __init__(
        self,
        url: Union[RepositoryURL, str],
        *,
        env: Optional[Mapping[str, str]] = None,
        models: Optional[Sequence[str]] = None,
    ) -> None:
        self.url, self.env, self.models = url, env, models
        self._base: Optional[Path] = None

    def __enter__(self) -> DownloadedRepository:
        self._base = Path(tempfile.mkdtemp(prefix="tritonpy-s3-copy-"))
        parsed = parse_s3_url(self.url)
        leaf = (parsed.prefix.rsplit("/", 1)[-1] if parsed.prefix else parsed.bucket) or "repo"
        try:
            return download_repository(parsed, self._base / leaf, env=self.env, models=self.models)
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc: object) -> None:
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None
