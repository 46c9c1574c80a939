"""File digests and block reads shared by the tooling (environment records, stub origins).

Example::

    file_sha256(Path("model/triton_python_backend_stub"))   # '251c532e...'
    for block in read_blocks(Path("big.bin")): ...
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator

#: large files are read this many bytes at a time, never whole
BLOCK_SIZE = 1 << 20


def read_blocks(path: Path, size: int = BLOCK_SIZE) -> Iterator[bytes]:
    """The bytes of ``path`` in blocks of ``size`` (the last one shorter); ``OSError``
    propagates when the file cannot be read."""
    with open(path, "rb") as stream:
        yield from iter(lambda: stream.read(size), b"")


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file as hex, read in :data:`BLOCK_SIZE` blocks.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile(delete=False) as f:
    ...     _ = f.write(b"abc")
    >>> file_sha256(Path(f.name))[:16]
    'ba7816bf8f01cfea'
    >>> os.unlink(f.name)
    """
    digest = hashlib.sha256()
    for block in read_blocks(path):
        digest.update(block)
    return digest.hexdigest()
