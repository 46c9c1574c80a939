"""Model repositories in object storage (``s3://``): Triton's URL forms, publishing an exported
repository to a bucket, and local copies for the tools that read files.

Example::

    from tritonpy.storage import parse_repository_url, publish, s3_client

    url = parse_repository_url("s3://127.0.0.1:9000/models/repo")
    client = s3_client(url)          # AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY from the env
    publish("out/model_repository", url, new_version=True).summary
"""

from .._runtime._public_names import publish as _publish_names
from ._client import S3_VARIABLES, parse_s3_url, s3_client
from ._download import (
    DownloadedRepository,
    TemporaryDownload,
    describe_empty_prefix,
    download_repository,
    list_objects,
)
from ._errors import StorageError
from ._local import PublishError
from ._publish import publish
from ._result import PublishResult
from ._urls import RepositoryURL, is_remote, parse_repository_url

__all__ = [
    "S3_VARIABLES",
    "DownloadedRepository",
    "PublishError",
    "PublishResult",
    "RepositoryURL",
    "StorageError",
    "TemporaryDownload",
    "describe_empty_prefix",
    "download_repository",
    "is_remote",
    "list_objects",
    "parse_repository_url",
    "parse_s3_url",
    "publish",
    "s3_client",
]

_publish_names(__name__, globals())
