"""``publish``: upload a local model repository to an ``s3://`` URL so that tritonserver serves
it straight from the bucket, skipping what is already there, optionally as a new version of
each model, and keeping the bucket tidy.

The order is chosen for servers that load while a publish runs: per model, every other file
first (the environment archive, a stub, the version folders), ``config.pbtxt`` last, so that a
server sees a model's configuration only once the files it names are there; deletions (old
versions, pruned files) come after every upload.

Example::

    from tritonpy.storage import publish

    result = publish("out/model_repository", "s3://127.0.0.1:9000/models/prod",
                     new_version=True, keep_versions=2)
    print(result.summary)
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .._tooling.progress import Reporter, step
from ._client import parse_s3_url, s3_client
from ._download import error_code, list_objects, store_failure
from ._errors import StorageError
from ._etags import transfer_config
from ._local import LocalModel, PublishError, read_repository
from ._plan import ModelPlan, PlanOptions, RemoteObject, Upload, plan_model
from ._result import PublishResult, human_size
from ._urls import ENDPOINT_KEY_CHARACTERS, RepositoryURL

PathLike = Union[str, "os.PathLike[str]"]
#: parallel uploads of one model's files (boto3's clients are thread-safe)
_WORKERS = 8


def _bucket_objects(client: Any, url: RepositoryURL) -> Dict[str, RemoteObject]:
    """Every object under ``url`` (key below it -> (ETag, size)), folder markers included."""
    return {key: (etag, size) for key, etag, size in list_objects(client, url, markers=True)}


def _check_keys(url: RepositoryURL, models: Sequence[LocalModel]) -> None:
    """With an endpoint, tritonserver fetches only keys of [0-9a-zA-Z.-_/] (see _urls)."""
    if url.endpoint is None:
        return
    bad = [
        f"model {model.name!r}: {item.path}"
        for model in models
        for item in model.files
        if not ENDPOINT_KEY_CHARACTERS.fullmatch(url.key(f"{model.name}/{item.rel}"))
    ]
    if bad:
        listed = "\n  ".join(bad[:20]) + ("\n  ..." if len(bad) > 20 else "")
        raise PublishError(
            f"cannot publish to {url}: {len(bad)} file name(s) hold characters tritonserver's "
            f"S3 endpoint form cannot fetch (expected only letters, digits, '.', '-', '_' and "
            f"'/'; it would read such a key from the wrong bucket, core@r24.10 s3.h):\n  "
            f"{listed}\nRename them (or their model folder)."
        )


def _write(client: Any, url: RepositoryURL, key: str, upload: Upload) -> None:
    try:
        if upload.source is None:  # an empty version folder: a folder marker
            client.put_object(Bucket=url.bucket, Key=url.key(key) + "/", Body=b"")
        else:
            client.upload_file(
                str(upload.source.path), url.bucket, url.key(key), Config=transfer_config()
            )
    except Exception as exc:  # botocore's errors, named by store_failure
        # boto3's upload_file wraps the store's ClientError in S3UploadFailedError
        answered = exc.__cause__ or exc.__context__
        named = exc if error_code(exc) or answered is None else answered
        raise StorageError(store_failure(url.child(key), named, "write")) from exc


def _upload_model(client: Any, url: RepositoryURL, plan: ModelPlan, reporter: Reporter) -> None:
    """Every other file of the model in parallel, then its config.pbtxt."""
    with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
        futures = [
            (u, pool.submit(_write, client, url, f"{plan.name}/{u.rel}", u)) for u in plan.first
        ]
        try:
            for upload, future in futures:
                future.result()
                reporter.update(f"{plan.name}/{upload.rel}")
        except BaseException:
            for _, future in futures:
                future.cancel()
            raise
    if plan.config is not None:
        _write(client, url, f"{plan.name}/{plan.config.rel}", plan.config)


def _delete(client: Any, url: RepositoryURL, keys: List[str]) -> None:
    for start in range(0, len(keys), 1000):  # DeleteObjects takes at most 1000 keys
        chunk = keys[start : start + 1000]
        try:
            answer = client.delete_objects(
                Bucket=url.bucket,
                Delete={"Objects": [{"Key": url.key(k) + "/" * k.endswith("/")} for k in chunk]},
            )
        except Exception as exc:  # botocore's errors
            raise StorageError(store_failure(url, exc, "delete objects of")) from exc
        errors = answer.get("Errors", [])
        if errors:
            first = errors[0]
            raise StorageError(
                f"cannot delete {first.get('Key')} from {url}: {first.get('Code')} "
                f"{first.get('Message')} ({len(errors)} key(s) refused). Check that the "
                "credentials may delete objects (s3:DeleteObject)."
            )


def _plans(
    client: Any, url: RepositoryURL, models: List[LocalModel], options: PlanOptions
) -> List[ModelPlan]:
    remote = _bucket_objects(client, url)
    plans = []
    for model in models:
        below = f"{model.name}/"
        mine = {k[len(below) :]: v for k, v in remote.items() if k.startswith(below)}
        plans.append(plan_model(model, mine, options))
    return plans


def _record(result: PublishResult, plans: List[ModelPlan], local: List[LocalModel]) -> None:
    result.server_environments = {
        m.name: m.server_environment for m in local if m.server_environment is not None
    }
    for plan in plans:
        result.models.append(plan.name)
        result.uploaded += [f"{plan.name}/{u.rel}" for u in plan.uploads]
        result.unchanged += [f"{plan.name}/{rel}" for rel in plan.unchanged]
        result.deleted += [f"{plan.name}/{rel}" for rel in plan.deletes]
        result.bytes_uploaded += sum(u.size for u in plan.uploads)
        result.versions[plan.name] = plan.versions_after
        if plan.target_version is not None:
            result.new_versions[plan.name] = plan.target_version


def _parsed(url: Union[RepositoryURL, str], keep_versions: Optional[int]) -> RepositoryURL:
    if keep_versions is not None and keep_versions < 1:
        raise PublishError(
            f"keep_versions (--keep-versions) is {keep_versions}; expected 1 or more (the "
            "versions to keep per model, the newest first)"
        )
    try:
        return parse_s3_url(url)
    except StorageError as exc:
        raise PublishError(str(exc)) from exc


def publish(
    repository: PathLike,
    url: Union[RepositoryURL, str],
    *,
    env: Optional[Mapping[str, str]] = None,
    models: Optional[Sequence[str]] = None,
    new_version: bool = False,
    keep_versions: Optional[int] = None,
    prune: bool = False,
    dry_run: bool = False,
    reporter: Optional[Reporter] = None,
) -> PublishResult:
    """Upload the model folders of ``repository`` (only ``models`` when given) to ``url``
    (``s3://BUCKET/PREFIX`` on AWS, ``s3://HOST:PORT/BUCKET/PREFIX`` on an S3-compatible
    store) so that ``tritonserver --model-repository=URL`` serves them.

    Symbolic links are followed; hidden entries, ``__pycache__`` and ``*.pyc`` are left out;
    an empty version folder (an ensemble's) becomes a folder marker. A file whose object has
    the same size and ETag is not uploaded again. Per model, ``config.pbtxt`` is written last.

    - ``new_version``: each model's newest local version folder is published as the version
      after the bucket's newest (under its own number when the model is new to the bucket
      or that number is higher already); the bucket's versions are kept. Then roll it out
      (``tritonpy rollout``).
    - ``keep_versions``: afterwards, only the newest N version folders of each published
      model remain (tritonserver copies every version folder at each load).
    - ``prune``: delete the objects of a published model's folder that the local folder
      lacks (an old archive), except whole version folders it does not publish.
    - ``dry_run``: list the bucket and plan, write nothing.

    A model whose ``EXECUTION_ENV_PATH`` is an absolute folder (the image layout of
    ``tritonpy export``: environments unpacked in the image, used in place) is published
    without it; ``server_environments`` lists those folders, which every server must hold.
    Nothing outside the published models' folders is touched. Credentials come from ``env``
    (default ``os.environ``), read as tritonserver reads them; progress goes to ``reporter``.
    Raises :class:`PublishError` (nothing uploaded) for a repository the server could not use
    from a bucket: no model folder, an environment outside its model folder or missing, a
    file name the endpoint form cannot fetch, a bad URL or option; :class:`StorageError` when
    the store refuses or cannot be reached (naming the URL and the fix).

    Example::

        result = publish("out/model_repository", "s3://models/prod", new_version=True)
        result.new_versions                 # {'preprocess': 4}
    """
    began = time.monotonic()
    reporter = reporter or Reporter()
    parsed = _parsed(url, keep_versions)
    local = read_repository(Path(repository), models)
    _check_keys(parsed, local)
    client = s3_client(parsed, env=env)
    with step(reporter, f"listing {parsed}"):
        plans = _plans(client, parsed, local, PlanOptions(new_version, keep_versions, prune))
    result = PublishResult(str(parsed), dry_run=dry_run)
    _record(result, plans, local)
    if not dry_run:
        _apply(client, parsed, plans, reporter)
    result.seconds = time.monotonic() - began
    return result


def _apply(client: Any, url: RepositoryURL, plans: List[ModelPlan], reporter: Reporter) -> None:
    for plan in plans:
        uploads = plan.uploads
        if not uploads:
            reporter.note(f"{plan.name}: unchanged ({len(plan.unchanged)} object(s))")
            continue
        size = sum(u.size for u in uploads)
        title = f"uploading {plan.name} ({len(uploads)} file(s), {human_size(size)})"
        with step(reporter, title):
            _upload_model(client, url, plan, reporter)
    deletes = [f"{plan.name}/{rel}" for plan in plans for rel in plan.deletes]
    if deletes:
        with step(reporter, f"deleting {len(deletes)} object(s) from {url}"):
            _delete(client, url, deletes)
