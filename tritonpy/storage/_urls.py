"""Triton's object-storage URL forms, parsed and rendered exactly as tritonserver reads them.

tritonserver picks the filesystem from the prefix of ``--model-repository``
(core@r24.10:src/filesystem/api.cc ``GetFileSystemType``: ``gs://``, ``s3://``, ``as://``,
else a local path). For S3 (core@r24.10:src/filesystem/implementations/s3.h):

- ``CleanPath`` keeps ``s3://`` and an ``http://``/``https://`` right after it, then drops
  leading and trailing slashes and collapses repeated ones;
- the endpoint form is matched by the regex
  ``s3://(http://|https://|)([0-9a-zA-Z\\-.]+):([0-9]+)/([0-9a-z.\\-]+)(((/[0-9a-zA-Z.\\-_]+)*)?)``:
  a host *with a port*, then the bucket, then the object path; HTTP unless ``https://``;
- anything else is ``s3://bucket/object`` on AWS itself (the bucket ends at the first slash).

So an endpoint without a port (``s3://minio.local/bucket/x``) is read by Triton as the bucket
``minio.local``, and with an endpoint only the characters ``[0-9a-zA-Z.-_]`` may appear in the
path: Triton applies the same regex to every file it downloads (``LocalizePath`` ->
``ParsePath``), so a key with another character is read from the wrong bucket. Both are refused
here with a message instead of failing inside tritonserver.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

from ._errors import StorageError

REMOTE_SCHEMES = ("s3", "gs", "as")
# core@r24.10:src/filesystem/implementations/s3.h, S3FileSystem::S3FileSystem (s3_regex_)
_S3_ENDPOINT = re.compile(
    r"s3://(http://|https://|)([0-9a-zA-Z\-.]+):([0-9]+)/([0-9a-z.\-]+)(((/[0-9a-zA-Z.\-_]+)*)?)"
)
_BUCKET = re.compile(r"[0-9a-z.\-]+")
# the characters the endpoint regex lets through in an object path (each key Triton fetches)
ENDPOINT_KEY_CHARACTERS = re.compile(r"[0-9a-zA-Z.\-_/]*")


def is_remote(text: str) -> bool:
    """True when tritonserver would read ``text`` from object storage (``s3://``, ``gs://``,
    ``as://`` at its start, as core@r24.10:src/filesystem/api.cc decides), False for a path.

    >>> is_remote("s3://127.0.0.1:9000/models/repo"), is_remote("out/model_repository")
    (True, False)
    """
    return any(str(text).startswith(f"{scheme}://") for scheme in REMOTE_SCHEMES)


@dataclasses.dataclass(frozen=True)
class RepositoryURL:
    """A model repository (or a folder in it) in object storage.

    ``scheme`` is ``"s3"`` (or ``"gs"``/``"as"``, which tritonserver reads and tritonpy's own
    tools refuse), ``bucket`` the bucket (for ``as://``: ``account/container``), ``prefix`` the
    folder inside it without leading or trailing ``/`` (``""`` for the bucket's root), and
    ``endpoint`` ``None`` for AWS itself or ``"http://host:port"``/``"https://host:port"`` for
    an S3-compatible store. ``str(url)`` is what ``tritonserver --model-repository`` takes.

    Example::

        url = parse_repository_url("s3://127.0.0.1:9000/models/repo")
        url.endpoint, url.bucket, url.prefix    # ('http://127.0.0.1:9000', 'models', 'repo')
        str(url.child("preprocess"))            # 's3://127.0.0.1:9000/models/repo/preprocess'
    """

    scheme: str
    bucket: str
    prefix: str = ""
    endpoint: Optional[str] = None

    def __str__(self) -> str:
        path = "/".join(part for part in (self.bucket, self.prefix) if part)
        if self.endpoint is None:
            return f"{self.scheme}://{path}"
        if self.endpoint.startswith("https://"):
            return f"s3://{self.endpoint}/{path}"
        return f"s3://{self.endpoint[len('http://') :]}/{path}"

    def child(self, name: str) -> RepositoryURL:
        """The URL of ``name`` (a model, a version, a file; may hold ``/``) under this one."""
        parts = [p for p in name.split("/") if p]
        if not parts:
            raise StorageError(f"{self}: child name {name!r} is empty: give a model or file name")
        prefix = "/".join([self.prefix, *parts] if self.prefix else parts)
        return parse_repository_url(str(dataclasses.replace(self, prefix=prefix)))

    def key(self, name: str = "") -> str:
        """The object key of ``name`` under this URL (``prefix/name``; ``name`` may be empty)."""
        return "/".join(part for part in (self.prefix, name.strip("/")) if part)

    @property
    def display_endpoint(self) -> str:
        """The endpoint for messages: ``"http://host:port"`` or ``"AWS S3"``."""
        return self.endpoint or "AWS S3"


def _clean(text: str) -> str:
    # core s3.h CleanPath: keep the scheme and http(s):// after it, trim and collapse slashes
    rest = text[len("s3://") :]
    protocol = ""
    for candidate in ("https://", "http://"):
        if rest.startswith(candidate):
            protocol, rest = candidate, rest[len(candidate) :]
            break
    parts = [p for p in rest.split("/") if p]
    if not parts:
        raise StorageError(
            f"{text!r} names no bucket: expected s3://BUCKET/PREFIX (AWS) or "
            "s3://HOST:PORT/BUCKET/PREFIX (an S3-compatible store)"
        )
    return "s3://" + protocol + "/".join(parts)


def _parse_s3(text: str) -> RepositoryURL:
    clean = _clean(text)
    matched = _S3_ENDPOINT.fullmatch(clean)
    if matched is not None:
        protocol, host, port, bucket, path = matched.group(1, 2, 3, 4, 5)
        scheme = "https" if protocol == "https://" else "http"
        return RepositoryURL("s3", bucket, path.strip("/"), f"{scheme}://{host}:{port}")
    body = clean[len("s3://") :]
    bucket, _, prefix = body.partition("/")
    if body.startswith(("http://", "https://")) or ":" in bucket:
        raise StorageError(_endpoint_problem(text, body))
    if not _BUCKET.fullmatch(bucket):
        raise StorageError(
            f"{text!r}: bucket {bucket!r} is not a valid S3 bucket name: expected lower-case "
            "letters, digits, '.' and '-' (as tritonserver's S3 filesystem requires)"
        )
    return RepositoryURL("s3", bucket, prefix, None)


def _endpoint_problem(text: str, body: str) -> str:
    host, _, path = body.split("://")[-1].partition("/")
    if ":" not in host:
        return (
            f"{text!r}: the endpoint {host!r} has no port; tritonserver reads an endpoint only "
            f"as HOST:PORT (without a port it takes {host!r} for the bucket): write "
            f"s3://{host}:PORT/BUCKET/PREFIX (s3://https://{host}:443/... for HTTPS)"
        )
    bucket, _, prefix = path.partition("/")
    if not bucket:
        return f"{text!r} names an endpoint but no bucket: write s3://{host}/BUCKET/PREFIX"
    if not _BUCKET.fullmatch(bucket):
        return (
            f"{text!r}: bucket {bucket!r} is not a valid S3 bucket name: expected lower-case "
            "letters, digits, '.' and '-'"
        )
    return (
        f"{text!r}: the path {prefix!r} holds characters tritonserver's S3 endpoint form does "
        "not accept (only letters, digits, '.', '-', '_' and '/'); with an endpoint it would "
        "read the wrong bucket: rename the prefix"
    )


def _parse_other(text: str, scheme: str) -> RepositoryURL:
    parts = [p for p in text[len(scheme) + 3 :].split("/") if p]
    # as://ACCOUNT/CONTAINER/PATH (core@r24.10:src/filesystem/implementations/as.h)
    head = 2 if scheme == "as" else 1
    if len(parts) < head:
        form = "as://ACCOUNT/CONTAINER/PATH" if scheme == "as" else "gs://BUCKET/PATH"
        raise StorageError(f"{text!r} names no bucket: expected {form}")
    return RepositoryURL(scheme, "/".join(parts[:head]), "/".join(parts[head:]), None)


def parse_repository_url(text: str) -> RepositoryURL:
    """Parse an object-storage repository URL as tritonserver does (see the module's doc);
    :class:`StorageError` when ``text`` is not one or Triton would misread it.

    >>> parse_repository_url("s3://https://store.example:443/models/prod/")
    RepositoryURL(scheme='s3', bucket='models', prefix='prod', endpoint='https://store.example:443')
    >>> str(parse_repository_url("s3://models//prod"))
    's3://models/prod'
    """
    text = str(text).strip()
    if text.startswith("s3://"):
        return _parse_s3(text)
    for scheme in ("gs", "as"):
        if text.startswith(f"{scheme}://"):
            return _parse_other(text, scheme)
    raise StorageError(
        f"{text!r} is not an object-storage URL: expected s3://BUCKET/PREFIX, "
        "s3://HOST:PORT/BUCKET/PREFIX, s3://https://HOST:PORT/BUCKET/PREFIX, gs://BUCKET/PATH "
        "or as://ACCOUNT/CONTAINER/PATH"
    )


def require_s3(url: RepositoryURL) -> RepositoryURL:
    """``url`` when tritonpy's own tools can use it (``s3://``); else :class:`StorageError`
    (tritonserver reads ``gs://`` and ``as://`` itself, tritonpy has no client for them)."""
    if url.scheme != "s3":
        raise StorageError(
            f"{url}: tritonpy's tools support only s3:// repositories ({url.scheme}:// is read "
            "by tritonserver itself): copy the repository with the store's own tool "
            "(gsutil / az storage), or serve it with tritonserver --model-repository directly"
        )
    return url
