"""``roll_out``: a rolling update through Triton's repository API. Replica by replica,
``load_model`` each model (the replicas run ``--model-control-mode=explicit``, so a new version
in the repository is served only once loaded), then wait until that replica serves the
versions the repository now holds, ready, before touching the next replica: the others keep
answering meanwhile, and a failure stops the rollout with the rest on the old version.

Measured on 24.10: ``load_model`` of a new version (version policy ``latest 1``) returns once
the new version is loaded; the old version answers every request until then (none refused).

Example::

    report = roll_out(["10.0.0.1:8001", "10.0.0.2:8001"], ["classifier"])
    for replica in report.replicas:
        print(replica.url, replica.before, "->", replica.after, f"{replica.seconds:.1f} s")
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .._runtime._optional import require
from ..client import WireProtocol, parse_endpoint
from ._errors import FleetError, RolloutError

Versions = Dict[str, Tuple[int, ...]]


@dataclass(frozen=True)
class ReplicaRollout:
    """One replica's update: ``url``, the versions of each model it served ``before`` and
    ``after`` (``{model: (2,)}``; ``()`` where the model was not loaded), and the ``seconds``
    from the first ``load_model`` until every model was ready."""

    url: str
    before: Versions
    after: Versions
    seconds: float

    def line(self) -> str:
        """``127.0.0.1:8001: ver 1 -> 2 (2.6 s)``, one model after another."""
        changes = ", ".join(
            f"{m} {_names(self.before.get(m, ()))} -> {_names(v)}" for m, v in self.after.items()
        )
        return f"{self.url}: {changes} ({self.seconds:.1f} s)"


@dataclass
class RolloutReport:
    """What :func:`roll_out` did: the ``models``, each updated replica's
    :class:`ReplicaRollout` in order, the total ``seconds``, and where it stopped
    (``failed_replica``, ``error``; None when every replica was updated)."""

    models: Tuple[str, ...]
    replicas: List[ReplicaRollout] = field(default_factory=list)
    seconds: float = 0.0
    failed_replica: Optional[str] = None
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.failed_replica is None

    def total_line(self) -> str:
        """``rolled out ver to 3 replicas in 7.9 s``."""
        models = ", ".join(self.models)
        return f"rolled out {models} to {len(self.replicas)} replica(s) in {self.seconds:.1f} s"


def roll_out(
    urls: Sequence[str],
    models: Sequence[str],
    *,
    protocol: WireProtocol = "grpc",
    timeout: float = 300.0,
    poll: float = 0.2,
) -> RolloutReport:
    """Load ``models`` on each replica of ``urls`` in turn (the repository API's
    ``load_model``) and wait (up to ``timeout`` seconds per replica) until it serves, ready,
    the versions the repository holds now, which must be those the first replica loaded.
    Raise :class:`~tritonpy.fleet.RolloutError` (its ``report``: the replicas done, the one
    that failed and why) at the first failure; the replicas after it are not touched.

    Example::

        report = roll_out(["127.0.0.1:8001", "127.0.0.1:9001"], ["ver"], timeout=120)
        print(report.total_line())
    """
    if isinstance(urls, str) or not urls or isinstance(models, str) or not models:
        raise FleetError(
            f"roll_out needs lists of replica URLs and model names, got urls={urls!r}, "
            f"models={models!r}; e.g. roll_out(['10.0.0.1:8001'], ['classifier'])."
        )
    report = RolloutReport(tuple(models))
    began = time.monotonic()
    target: Optional[Versions] = None
    for url in urls:
        try:
            done = _update(url, report.models, protocol, timeout, poll, target)
        except FleetError as exc:
            report.seconds = time.monotonic() - began
            report.failed_replica, report.error = url, str(exc)
            updated = ", ".join(r.url for r in report.replicas) or "none"
            rest = [u for u in urls if u != url and u not in {r.url for r in report.replicas}]
            raise RolloutError(
                f"rollout of {', '.join(models)} stopped at replica {url}: {exc} Updated "
                f"before it: {updated}; left on their old versions: {', '.join(rest) or 'none'}."
                " Fix that replica (its log says why) and run the rollout again: replicas "
                "already updated load nothing new.",
                report,
            ) from exc
        report.replicas.append(done)
        target = target or done.after
    report.seconds = time.monotonic() - began
    return report


def _update(
    url: str,
    models: Tuple[str, ...],
    protocol: WireProtocol,
    timeout: float,
    poll: float,
    target: Optional[Versions],
) -> ReplicaRollout:
    client = _RepositoryClient(url, protocol, timeout)
    try:
        before = {m: client.versions(m) for m in models}
        began = time.monotonic()
        for model in models:
            client.load(model)
        after = _wait_ready(client, models, began + timeout, poll)
        seconds = time.monotonic() - began
    finally:
        client.close()
    if target is not None and after != target:
        raise FleetError(
            f"after load_model it serves {_describe(after)}, while the first replica serves "
            f"{_describe(target)}: do all replicas read the same repository (the same bucket "
            "and prefix)?"
        )
    return ReplicaRollout(url, before, after, seconds)


def _wait_ready(
    client: _RepositoryClient, models: Tuple[str, ...], deadline: float, poll: float
) -> Versions:
    while True:
        after = {m: client.versions(m) for m in models}
        waiting = [m for m, v in after.items() if not v or not client.ready(m, v)]
        if not waiting:
            return after
        if time.monotonic() > deadline:
            raise FleetError(
                f"model(s) {', '.join(waiting)} not ready after load_model (versions "
                f"{_describe(after)}) within the timeout; see the replica's log."
            )
        time.sleep(poll)


class _RepositoryClient:
    """The few repository-API calls of a rollout, over tritonclient's gRPC or HTTP."""

    def __init__(self, url: str, protocol: WireProtocol, timeout: float) -> None:
        self.endpoint = parse_endpoint(url, protocol)
        self.timeout = timeout
        name = f"tritonclient.{self.endpoint.protocol}"
        require(name, "tritonclient.utils", extra="client", feature="tritonpy rollout")
        self._errors: Any = importlib.import_module("tritonclient.utils")
        module: Any = importlib.import_module(name)
        if self.endpoint.protocol == "grpc":
            self._client: Any = module.InferenceServerClient(
                self.endpoint.address, ssl=self.endpoint.ssl
            )
            self._options: Dict[str, Any] = {"client_timeout": timeout}
        else:
            self._client = module.InferenceServerClient(
                self.endpoint.address,
                ssl=self.endpoint.ssl,
                connection_timeout=timeout,
                network_timeout=timeout,
            )
            self._options = {}

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except self._errors.InferenceServerException as exc:
            raise FleetError(f"{what}: {exc.message()}.") from exc
        except OSError as exc:
            raise FleetError(f"{what}: cannot reach {self.endpoint.address}: {exc}.") from exc

    def versions(self, model: str) -> Tuple[int, ...]:
        """The versions the replica serves now (``()`` when the model is not loaded)."""
        try:
            if self.endpoint.protocol == "grpc":
                meta = self._client.get_model_metadata(model, as_json=True, **self._options)
            else:
                meta = self._client.get_model_metadata(model)
        except self._errors.InferenceServerException as exc:
            if "unknown model" in str(exc.message()):
                return ()
            raise FleetError(f"model {model!r} metadata: {exc.message()}.") from exc
        except OSError as exc:
            raise FleetError(f"cannot reach {self.endpoint.address}: {exc}.") from exc
        return tuple(sorted(int(v) for v in meta.get("versions", ())))

    def load(self, model: str) -> None:
        self._call(f"load_model({model!r})", self._client.load_model, model, **self._options)

    def ready(self, model: str, versions: Tuple[int, ...]) -> bool:
        return all(
            self._call(
                f"model {model!r} version {v} readiness",
                self._client.is_model_ready,
                model,
                str(v),
                **self._options,
            )
            for v in versions
        )

    def close(self) -> None:
        self._client.close()


def _names(versions: Tuple[int, ...]) -> str:
    return ",".join(str(v) for v in versions) if versions else "none"


def _describe(versions: Versions) -> str:
    return ", ".join(f"{m} versions [{_names(v)}]" for m, v in versions.items())
