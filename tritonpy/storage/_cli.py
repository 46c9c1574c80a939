"""``tritonpy publish REPO URL [--model NAME ...] [--new-version] [--keep-versions N] [--prune]
[--dry-run] [--json]``: thin command over :func:`tritonpy.storage.publish`.

Exit status: 0 when published (or planned, with ``--dry-run``), 1 when the store refused or
could not be reached (the message names the URL and the fix), 2 when the repository or the
options cannot be published as they are (nothing uploaded) or boto3 is missing.

Example::

    tritonpy publish out/model_repository s3://127.0.0.1:9000/models/prod
    tritonpy publish out/model_repository s3://models/prod --model classifier --new-version \\
        --keep-versions 2
"""

from __future__ import annotations

import argparse
import sys

from .._tooling import cli as shared
from ._local import PublishError


def add_parser(subparsers: shared.Subparsers) -> None:
    """Declare the ``publish`` subcommand on ``subparsers``."""
    parser = shared.add_command(
        subparsers,
        "publish",
        cmd_publish,
        help="upload a model repository to s3:// so that tritonserver serves it from there",
        failures=shared.Failures(bad_input=(PublishError,)),
    )
    shared.add_repository(parser, "the local model repository (one folder per model)")
    parser.add_argument(
        "url",
        metavar="URL",
        help="s3://BUCKET/PREFIX (AWS), s3://HOST:PORT/BUCKET/PREFIX (an S3-compatible store), "
        "s3://https://HOST:PORT/BUCKET/PREFIX",
    )
    parser.add_argument(
        "--model",
        "-m",
        action="append",
        default=None,
        metavar="NAME",
        help="publish only this model (repeatable; default: every model folder)",
    )
    parser.add_argument(
        "--new-version",
        action="store_true",
        help="publish each model's newest local version folder as the version after the "
        "bucket's newest, keeping the bucket's older versions (then: tritonpy rollout)",
    )
    parser.add_argument(
        "--keep-versions",
        type=int,
        default=None,
        metavar="N",
        help="afterwards delete each published model's version folders beyond the newest N",
    )
    parser.add_argument(
        "--prune",
        action="store_true",
        help="delete objects of a published model's folder that the local folder lacks "
        "(version folders it does not publish excepted)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list what would be uploaded and deleted"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def cmd_publish(args: argparse.Namespace) -> int:
    """Upload the model folders of REPO to URL so that tritonserver --model-repository=URL
    serves them: unchanged files (same ETag) are skipped, each model's config.pbtxt is written
    after its other files, hidden files, __pycache__ and *.pyc are left out. Refused before
    anything is uploaded: an EXECUTION_ENV_PATH that is not $$TRITON_MODEL_DIRECTORY/<archive>
    inside its model folder, a missing archive, file names an s3://HOST:PORT/... URL cannot
    fetch. Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION (or
    AWS_PROFILE), as tritonserver reads them."""
    from . import publish

    with shared.ConsoleReporter() as reporter:
        result = publish(
            args.repository,
            args.url,
            models=args.model,
            reporter=reporter,
            **shared.options(args, "new_version keep_versions prune dry_run"),
        )
    text = result.to_json() if args.json else "\n".join(result.lines())
    sys.stdout.write(text + "\n")
    return 0
