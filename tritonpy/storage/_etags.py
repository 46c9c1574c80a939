"""The ETag an object store gives a local file once uploaded, so that an unchanged file is not
uploaded again.

S3 (and the S3-compatible stores that copy it) gives an object written in one PUT the MD5 of
its bytes, and an object written by a multipart upload the MD5 of the concatenated binary
MD5s of its parts followed by ``-N`` (N parts). So the local ETag depends on how the file is
uploaded: :data:`MULTIPART_BYTES` is both the threshold and the part size of the boto3
``TransferConfig`` that :func:`transfer_config` gives publish (boto3's own defaults, the ones
``aws s3 sync`` uses), and :func:`local_etag` computes the ETag for exactly that split. An
object written with another part size (or encrypted with SSE-KMS, whose ETag is no MD5) does
not match and is uploaded again, once.

Example::

    local_etag(Path("model_repository/big/1/weights.bin"), parts=3)   # '9b2c...-3'
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Optional

from .._runtime._optional import optional_import

#: the multipart threshold and part size publish uploads with (8 MiB, boto3's defaults)
MULTIPART_BYTES = 8 * 1024 * 1024
#: S3 allows at most this many parts: boto3 grows the part size of bigger files to fit
_MAX_PARTS = 10_000
_BLOCK = 1024 * 1024


def transfer_config() -> Any:
    """The boto3 ``TransferConfig`` of publish's uploads (see the module's doc)."""
    transfer = optional_import("boto3.s3.transfer", feature="object storage", extra="s3")
    return transfer.TransferConfig(
        multipart_threshold=MULTIPART_BYTES, multipart_chunksize=MULTIPART_BYTES
    )


def part_size(size: int) -> int:
    """The part size boto3 uses for a file of ``size`` bytes with :func:`transfer_config`
    (s3transfer's ``ChunksizeAdjuster``: 8 MiB, doubled until the parts fit S3's 10 000).

    >>> part_size(20 * 1024 * 1024) == MULTIPART_BYTES
    True
    """
    chunk = MULTIPART_BYTES
    while -(-size // chunk) > _MAX_PARTS:
        chunk *= 2
    return chunk


def _md5_of(path: Path, start: int, length: int) -> bytes:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as stream:
        stream.seek(start)
        left = length
        while left > 0:
            block = stream.read(min(_BLOCK, left))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    return digest.digest()


def local_etag(path: Path, size: int) -> str:
    """The ETag S3 gives ``path`` (``size`` bytes) uploaded with :func:`transfer_config`:
    the hex MD5 below :data:`MULTIPART_BYTES`, else the multipart form ``MD5-N``."""
    if size < MULTIPART_BYTES:
        return _md5_of(path, 0, size).hex()
    chunk = part_size(size)
    digests = [_md5_of(path, start, chunk) for start in range(0, size, chunk)]
    combined = hashlib.md5(b"".join(digests), usedforsecurity=False).hexdigest()
    return f"{combined}-{len(digests)}"


def unchanged(path: Path, size: int, remote_etag: Optional[str], remote_size: int) -> bool:
    """Whether the object (``remote_etag``, ``remote_size``) already holds ``path``'s bytes:
    same size and the ETag this upload would give it (sizes first: no hashing when they
    differ)."""
    if remote_etag is None or remote_size != size:
        return False
    return local_etag(path, size) == remote_etag.strip('"')
