"""A boto3 S3 client for a repository URL, with the credentials tritonserver would use.

tritonserver's S3 filesystem (core@r24.10:src/filesystem/implementations/s3.h,
``S3Credential``) reads ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``
and ``AWS_DEFAULT_REGION``, else the profile of ``AWS_PROFILE``, else the SDK's default chain;
it addresses buckets by path (``useVirtualAdressing`` false) and, for an endpoint URL, talks
HTTP unless the URL says ``https://``. The client made here reads the same variables (from
``env`` when given, else the process environment), so what works here works for the server.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional

from .._runtime._optional import optional_import
from ._errors import StorageError
from ._urls import RepositoryURL, parse_repository_url, require_s3

CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
#: the variables tritonserver reads for S3 (the Secret of a deployment carries them)
S3_VARIABLES = (*CREDENTIAL_VARIABLES, "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION")


def parse_s3_url(url: RepositoryURL | str) -> RepositoryURL:
    """``url`` parsed when it is a string, checked to be ``s3://`` (the only scheme tritonpy's
    own tools read and write; tritonserver also reads ``gs://`` and ``as://``).

    >>> parse_s3_url("s3://127.0.0.1:9000/models/repo").bucket
    'models'
    """
    return require_s3(url if isinstance(url, RepositoryURL) else parse_repository_url(url))


def _credentials(url: RepositoryURL, env: Mapping[str, str]) -> dict[str, Optional[str]]:
    key, secret = (env.get(name) or None for name in CREDENTIAL_VARIABLES)
    if (key is None) != (secret is None):
        have, lack = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")[:: 1 if key else -1]
        raise StorageError(
            f"{url}: {have} is set but {lack} is not; tritonserver ignores a half key pair: "
            f"set both (or neither, to use AWS_PROFILE / the instance's role)"
        )
    if key is None and url.endpoint is not None and not env.get("AWS_PROFILE"):
        raise StorageError(
            f"{url}: no credentials for the S3-compatible store at {url.endpoint}: set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_DEFAULT_REGION), the "
            "variables tritonserver reads, or AWS_PROFILE"
        )
    return {
        "aws_access_key_id": key,
        "aws_secret_access_key": secret,
        "aws_session_token": env.get("AWS_SESSION_TOKEN") or None,
    }


def s3_client(url: RepositoryURL | str, *, env: Optional[Mapping[str, str]] = None) -> Any:
    """A boto3 S3 client for ``url``'s endpoint (AWS itself when it has none), with the
    credentials and region of ``env`` (default: ``os.environ``), as tritonserver reads them.

    Needs the ``s3`` extra (``pip install 'tritonpy[s3]'``). :class:`StorageError` when the
    URL is not ``s3://`` or no usable credentials are set (naming the variables).

    Example::

        client = s3_client("s3://127.0.0.1:9000/models/repo", env=bucket_env)
        client.list_objects_v2(Bucket="models", Prefix="repo/")
    """
    parsed = parse_s3_url(url)
    variables = os.environ if env is None else env
    boto3 = optional_import("boto3", feature="object storage (s3://)", extra="s3")
    botocore_config = optional_import("botocore.config", feature="object storage", extra="s3")
    credentials = _credentials(parsed, variables)
    region = variables.get("AWS_DEFAULT_REGION") or ("us-east-1" if parsed.endpoint else None)
    profile = variables.get("AWS_PROFILE") if credentials["aws_access_key_id"] is None else None
    session = boto3.session.Session(profile_name=profile, region_name=region, **credentials)
    if session.get_credentials() is None:
        raise StorageError(
            f"{parsed}: no AWS credentials found: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (and AWS_DEFAULT_REGION), or AWS_PROFILE, as for tritonserver"
        )
    config = botocore_config.Config(
        s3={"addressing_style": "path"}, retries={"max_attempts": 3, "mode": "standard"}
    )
    return session.client("s3", endpoint_url=parsed.endpoint, config=config)
