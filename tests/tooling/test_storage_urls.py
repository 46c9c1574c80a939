"""Triton's ``s3://`` URL forms as tritonserver reads them (core@r24.10:src/filesystem/
implementations/s3.h: ``CleanPath``, the endpoint regex, else ``s3://bucket/object``), and the
URLs refused because Triton would misread them."""

from __future__ import annotations

import pytest

from tritonpy.storage import (
    RepositoryURL,
    StorageError,
    is_remote,
    parse_repository_url,
    parse_s3_url,
)


@pytest.mark.parametrize(
    ("text", "bucket", "prefix", "endpoint", "shown"),
    [
        # AWS itself: the bucket ends at the first slash
        ("s3://models/prod/v2", "models", "prod/v2", None, "s3://models/prod/v2"),
        ("s3://models", "models", "", None, "s3://models"),
        # CleanPath: repeated slashes collapse, leading and trailing ones go
        ("s3://models//prod///v2/", "models", "prod/v2", None, "s3://models/prod/v2"),
        # an S3-compatible store: HOST:PORT, HTTP unless https:// follows s3://
        (
            "s3://127.0.0.1:9000/models/repo",
            "models",
            "repo",
            "http://127.0.0.1:9000",
            "s3://127.0.0.1:9000/models/repo",
        ),
        (
            "s3://http://minio.local:9000/models/repo",
            "models",
            "repo",
            "http://minio.local:9000",
            "s3://minio.local:9000/models/repo",
        ),
        (
            "s3://https://store.example:443/models/a_b/c-d.e/",
            "models",
            "a_b/c-d.e",
            "https://store.example:443",
            "s3://https://store.example:443/models/a_b/c-d.e",
        ),
        ("s3://host:9000/models", "models", "", "http://host:9000", "s3://host:9000/models"),
        # no port: Triton's regex does not match, so it is AWS with bucket "minio.local"
        ("s3://minio.local/models/repo", "minio.local", "models/repo", None, None),
    ],
)
def test_url_forms_are_read_as_tritonserver_reads_them(
    text: str, bucket: str, prefix: str, endpoint: str, shown: str
) -> None:
    url = parse_repository_url(text)
    assert (url.scheme, url.bucket, url.prefix, url.endpoint) == ("s3", bucket, prefix, endpoint)
    assert str(url) == (shown or text)
    assert parse_repository_url(str(url)) == url  # what --model-repository gets reads back


def test_children_keys_and_other_schemes() -> None:
    url = parse_s3_url("s3://127.0.0.1:9000/models/repo")
    assert url.key("add_sub/1/model.py") == "repo/add_sub/1/model.py"
    assert url.key() == "repo"
    assert str(url.child("add_sub/1")) == "s3://127.0.0.1:9000/models/repo/add_sub/1"
    assert parse_s3_url("s3://models").key("m/config.pbtxt") == "m/config.pbtxt"
    assert url.display_endpoint == "http://127.0.0.1:9000"
    assert parse_s3_url("s3://models/x").display_endpoint == "AWS S3"
    gs = parse_repository_url("gs://bucket/path/to")
    assert (gs.scheme, gs.bucket, gs.prefix) == ("gs", "bucket", "path/to")
    azure = parse_repository_url("as://account/container/path")
    assert (azure.bucket, azure.prefix) == ("account/container", "path")
    assert is_remote("s3://x/y") and is_remote("gs://x") and is_remote("as://a/b")
    assert not is_remote("model_repository") and not is_remote("/srv/s3://x")
    assert isinstance(url, RepositoryURL)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "s3://",
            "'s3://' names no bucket: expected s3://BUCKET/PREFIX (AWS) or "
            "s3://HOST:PORT/BUCKET/PREFIX (an S3-compatible store)",
        ),
        (
            "s3://http://minio.local/models/repo",
            "'s3://http://minio.local/models/repo': the endpoint 'minio.local' has no port; "
            "tritonserver reads an endpoint only as HOST:PORT (without a port it takes "
            "'minio.local' for the bucket): write s3://minio.local:PORT/BUCKET/PREFIX "
            "(s3://https://minio.local:443/... for HTTPS)",
        ),
        (
            "s3://127.0.0.1:9000/Models/repo",
            "'s3://127.0.0.1:9000/Models/repo': bucket 'Models' is not a valid S3 bucket name: "
            "expected lower-case letters, digits, '.' and '-'",
        ),
        (
            "s3://127.0.0.1:9000/models/my repo",
            "'s3://127.0.0.1:9000/models/my repo': the path 'my repo' holds characters "
            "tritonserver's S3 endpoint form does not accept (only letters, digits, '.', '-', "
            "'_' and '/'); with an endpoint it would read the wrong bucket: rename the prefix",
        ),
        (
            "s3://Models/repo",
            "'s3://Models/repo': bucket 'Models' is not a valid S3 bucket name: expected "
            "lower-case letters, digits, '.' and '-' (as tritonserver's S3 filesystem requires)",
        ),
        (
            "/srv/models",
            "'/srv/models' is not an object-storage URL: expected s3://BUCKET/PREFIX, "
            "s3://HOST:PORT/BUCKET/PREFIX, s3://https://HOST:PORT/BUCKET/PREFIX, "
            "gs://BUCKET/PATH or as://ACCOUNT/CONTAINER/PATH",
        ),
        ("as://account", "'as://account' names no bucket: expected as://ACCOUNT/CONTAINER/PATH"),
    ],
)
def test_urls_triton_would_misread_are_refused(text: str, message: str) -> None:
    with pytest.raises(StorageError) as refused:
        parse_repository_url(text)
    assert str(refused.value) == message


def test_tritonpys_tools_refuse_gs_and_as() -> None:
    with pytest.raises(StorageError) as refused:
        parse_s3_url("gs://bucket/models")
    assert str(refused.value).startswith(
        "gs://bucket/models: tritonpy's tools support only s3:// repositories (gs:// is read "
        "by tritonserver itself)"
    )
