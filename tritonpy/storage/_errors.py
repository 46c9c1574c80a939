"""The error of tritonpy.storage."""

from __future__ import annotations

from .._runtime.errors import ToolError


class StorageError(ToolError):
    """An object-storage repository could not be parsed, reached, read or written.

    The message says what failed, the URL (or key) involved, what was expected and how to fix
    it, e.g. ``bucket 'models' does not exist at http://127.0.0.1:9000 (s3://127.0.0.1:9000/
    models/repo): create it first (aws s3 mb s3://models --endpoint-url http://127.0.0.1:9000)``.
    """
