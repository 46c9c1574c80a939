"""``probe``: send one real inference to every READY model of a running Triton and report which
ones answered.

Readiness is not liveness: since release 24.06 Triton's Python backend no longer restarts a
stub process that died (killed by the OOM killer, a crash in native code), yet
``/v2/health/ready`` and the model's own readiness keep answering READY while every request
fails with ``Stub process 'NAME_0' is not healthy``. Only a request shows it.

Example::

    from tritonpy.probe import probe

    report = probe("localhost:8000", timeout=5)
    for result in report.results:
        print(result.name, result.answered, result.latency)
"""

from __future__ import annotations

import http.client
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .._runtime._optional import require
from .._runtime.errors import DeclarationError, ToolError, TritonPyError
from .._tooling.errors import ServerError
from .._tooling.options import changed, option
from ..client import (
    Endpoint,
    InferClient,
    ModelKind,
    ModelSignature,
    SequenceControl,
    WireProtocol,
    configs_reader,
    fresh_sequence_id,
    model_kind,
    open_stream,
    parse_endpoint,
)
from ._diagnosis import dead_stub, server_refused
from ._report import NOT_LOADED, OLD_VERSION, ProbeReport, ProbeResult, judge
from ._repository import RepositoryModels, expected_version, repository_models
from ._requests import ProbeRequestError, probe_inputs

DEFAULT_URL = "localhost:8000"
DEFAULT_TIMEOUT = 5.0


@dataclass(frozen=True)
class ProbeOptions:
    """How :func:`probe` probes, each option declared once with the flag and help of
    ``tritonpy probe``.

    Example::

        probe("localhost:8000", options=ProbeOptions(timeout=2, repository="model_repository"))
    """

    timeout: float = option(
        DEFAULT_TIMEOUT, help="how long each call may take in seconds (default {default})"
    )
    repository: Optional[Union[str, Path]] = option(
        None,
        metavar="REPO",
        help="the server's model repository (a directory or an s3:// URL): its models are "
        "probed, each must be loaded in its newest version; warmup samples' input_data_file "
        "are read from it",
    )


class ProbeUsageError(ToolError):
    """The probe was asked for something it cannot do (a bad URL, protocol or timeout)."""


class _ProbeClient(InferClient):
    """:class:`InferClient` plus the repository index (gRPC and HTTP alike)."""

    def repository_index(self) -> List[Dict[str, Any]]:
        """``[{"name", "version", "state", "reason"}, ...]`` of every model the server knows."""
        if self.endpoint.protocol == "grpc":
            reply = self._call(
                "the repository index",
                self._client.get_model_repository_index,
                as_json=True,
                client_timeout=self.timeout,
            )
            entries: List[Dict[str, Any]] = list(reply.get("models", []))
        else:
            try:
                entries = list(
                    self._call("the repository index", self._client.get_model_repository_index)
                )
            except http.client.HTTPException as exc:
                raise ServerError(
                    f"{self.endpoint.address} does not answer HTTP ({exc!r}); is it the gRPC "
                    "port? Pass the HTTP port (8000 by default) or grpc://HOST:PORT."
                ) from exc
        return entries


def _states(entries: Sequence[Dict[str, Any]]) -> Dict[str, Dict[str, str]]:
    # name -> {"state", "reason", "versions"}; a model with one READY version is READY, and
    # "versions" lists its READY versions (space-separated, ascending)
    states: Dict[str, Dict[str, str]] = {}
    ready: Dict[str, List[str]] = {}
    for entry in entries:
        name = str(entry.get("name", ""))
        state = str(entry.get("state", ""))
        if state == "READY":
            ready.setdefault(name, []).append(str(entry.get("version", "")))
        if name not in states or state == "READY":
            states[name] = {"state": state, "reason": str(entry.get("reason", ""))}
    for name, versions in ready.items():
        states[name]["versions"] = " ".join(sorted(versions, key=lambda v: (len(v), v)))
    return states


def _probe_one(
    client: _ProbeClient,
    name: str,
    repository: Optional[Path],
    models: Sequence[str],
    version: str = "",
) -> ProbeResult:
    try:
        config = client.model_config(name, version)
        kind = model_kind(config, configs_reader(client.model_config))
        inputs = probe_inputs(config, repository)
        signature = ModelSignature.from_config(config)
    except (ProbeRequestError, DeclarationError, KeyError, ValueError) as exc:
        message = f"cannot build a request: {exc}"
        return ProbeResult(name, True, False, None, "REQUEST", message, version=version)
    except TritonPyError as exc:
        _, status, message = judge(exc)
        message = f"model configuration: {message}"
        return ProbeResult(name, True, False, None, status, message, version=version)
    send = _ProbeSend(client, name, inputs, signature, kind, version)
    began = time.perf_counter()
    error: Optional[TritonPyError] = None
    try:
        send.run()
    except TritonPyError as exc:
        error = exc
    latency = time.perf_counter() - began
    if send.unsupported:
        unsupported = send.unsupported
        return ProbeResult(
            name, True, False, None, "REQUEST", unsupported, send.how, version=version
        )
    answered, status, message = judge(error)
    if status in ("TIMEOUT", "DEADLINE_EXCEEDED"):
        # the server is there (it listed the model): the model itself did not answer in time
        message = f"no answer within --timeout {client.timeout:g} s"
    dead = dead_stub(message, models) or ""
    return ProbeResult(
        name,
        True,
        answered,
        latency,
        status,
        message,
        request=send.how,
        refused_by_server=bool(message) and server_refused(message),
        dead_stub=dead,
        dead_stub_role=_role(dead, name, config),
        version=version,
    )


def _role(dead: str, name: str, config: Dict[str, Any]) -> str:
    if not dead or dead == name:
        return ""
    steps = (config.get("ensemble_scheduling") or {}).get("step", []) or []
    return "member" if any(step.get("model_name") == dead for step in steps) else "callee"


class _ProbeSend:
    """The one request of a probe, sent the way the model's kind needs: a plain request, or a
    stream to a decoupled model (healthy at its first response or its final flag), with a
    fresh one-request sequence (START and END) for a sequence model. ``how`` says which;
    ``unsupported`` why nothing could be sent over this protocol."""

    def __init__(
        self,
        client: _ProbeClient,
        name: str,
        inputs: Dict[str, Any],
        signature: ModelSignature,
        kind: ModelKind,
        version: str = "",
    ) -> None:
        self.client, self.name, self.inputs = client, name, inputs
        self.version = version
        self.signature, self.kind = signature, kind
        self.sequence: Optional[SequenceControl] = None
        self.how = "stream" if kind.decoupled else "infer"
        self.unsupported = ""
        if kind.sequence:
            self.sequence = SequenceControl(fresh_sequence_id(kind), start=True, end=True)
            self.how += f" in sequence {self.sequence.id!r} (START and END)"

    def run(self) -> None:
        if not self.kind.decoupled:
            self.client.infer(
                self.name,
                self.inputs,
                signature=self.signature,
                sequence=self.sequence,
                version=self.version,
            )
            return
        endpoint = self.client.endpoint
        datatypes = {n: spec.datatype for n, spec in self.signature.inputs.items()}
        try:
            stream = open_stream(
                f"{endpoint.protocol}{'s' if endpoint.ssl else ''}://{endpoint.address}",
                self.name,
                self.inputs,
                sequence=self.sequence,
                datatypes=datatypes,
                timeout=self.client.timeout,
                version=self.version,
            )
        except ServerError as exc:  # what HTTP generate_stream cannot carry
            self.unsupported = f"cannot probe this {self.kind.describe()} model over HTTP: {exc}"
            return
        for _ in stream:
            break  # a first response proves the model runs: leave the rest unread
        error = stream.result.error
        if error is not None:
            raise error
        answer = "a response" if stream.count else "the final flag"
        self.how = self.how.replace("stream", f"stream: {answer}", 1)


def probe(
    url: str = DEFAULT_URL,
    models: Optional[Sequence[str]] = None,
    options: Optional[ProbeOptions] = None,
    *,
    protocol: Optional[WireProtocol] = None,
    **changes: Any,
) -> ProbeReport:
    """Send one inference request to each of ``models`` (default: every READY model of the
    repository index, ensembles included) of the server at ``url`` and judge each answer (see
    :func:`tritonpy.probe._report.judge`).

    ``url`` is ``host:port`` (HTTP unless ``protocol="grpc"``: the port Kubernetes probes and
    the health endpoints use; :class:`~tritonpy.server.InferClient` reads it as gRPC),
    ``http://``, ``https://``, ``grpc://`` or ``grpcs://``. Each request is built from the
    model's configuration as the server reports it (see
    :func:`tritonpy.probe._requests.probe_inputs`) and sent as its kind needs: a stream to a
    decoupled model (gRPC, or HTTP ``generate_stream`` where the inputs fit it, else a
    ``REQUEST`` failure saying to use gRPC), a one-request sequence (START and END, a fresh
    correlation id) to a sequence model or an ensemble over one. ``timeout`` bounds every call
    in seconds; ``repository`` is the server's model repository as seen from here (a
    directory or an ``s3://`` URL): its models are then the ones probed (``models`` narrows
    them) and one not loaded, or not in the newest version the repository holds (as its
    version policy allows), fails as ``NOT_LOADED`` or ``OLD_VERSION`` without a request;
    warmup samples' ``input_data_file`` are read from it. ``options`` (a
    :class:`ProbeOptions`) holds those two; keyword arguments replace its fields.

    A server that does not answer gives a report with ``error`` set; a named model that is not
    READY (or unknown) fails with status ``NOT_READY`` (``NOT_FOUND``). Raises
    :class:`ProbeUsageError` for a bad ``url``/``protocol``/``timeout`` and
    :class:`~tritonpy.MissingDependencyError` when tritonclient is not installed.

    Example::

        report = probe("grpc://localhost:8001", ["preprocess"], timeout=2)
        assert report.ok, report.render_text()
    """
    chosen = changed(ProbeOptions, options, changes)
    timeout, repository = chosen.timeout, chosen.repository
    protocol, endpoint = _checked_endpoint(url, protocol, timeout)
    require(f"tritonclient.{endpoint.protocol}", extra="client", feature="tritonpy probe")
    report = ProbeReport(url, endpoint.protocol)
    client = _ProbeClient(url, protocol, timeout=timeout)
    try:
        try:
            states = _states(client.repository_index())
        except TritonPyError as exc:
            report.error = str(exc)
            return report
        wanted = list(dict.fromkeys(models)) if models else None
        report.results.extend(_probe_models(client, states, wanted, repository))
        return report
    finally:
        client.close()


def _probe_models(
    client: _ProbeClient,
    states: Dict[str, Dict[str, str]],
    wanted: Optional[List[str]],
    repository: Optional[Union[str, Path]],
) -> List[ProbeResult]:
    """Without a repository: ``wanted`` or every READY model; with one: ``wanted`` or every
    model of the repository, each checked against it first."""
    results: List[ProbeResult] = []
    if repository is None:
        names = wanted or sorted(n for n, s in states.items() if s["state"] == "READY")
        for name in names:
            results.extend(_results_for(client, name, states, None))
        return results
    with repository_models(repository) as found:
        for name in wanted or sorted(found.versions):
            if name in found.versions:
                results.extend(_against_repository(client, name, states, found))
            else:
                results.extend(_results_for(client, name, states, found.files))
    return results


def _against_repository(
    client: _ProbeClient, name: str, states: Dict[str, Dict[str, str]], found: RepositoryModels
) -> List[ProbeResult]:
    """A model of the repository: not loaded, or loaded in another version than the
    repository's newest, is one FAIL without a request; else probed as usual."""
    state = states.get(name)
    if state is None or state["state"] != "READY":
        said = "the server does not list it" if state is None else f"state {state['state']}"
        reason = f": {state['reason']}" if state is not None and state["reason"] else ""
        message = (
            f"not loaded ({said}{reason}); the repository {found.label} holds it: load it "
            f"(tritonpy rollout --model {name}) or take it out of the repository"
        )
        return [ProbeResult(name, False, False, None, NOT_LOADED, message)]
    served = [int(v) for v in state.get("versions", "").split() if v.isdigit()]
    try:
        config = client.model_config(name)
    except TritonPyError:
        config = {}  # the probe below reports it
    newest = expected_version(found.versions[name], config)
    if newest is not None and newest not in served:
        listed = " ".join(map(str, served)) or "none"
        message = (
            f"serves version{'s' * (len(served) != 1)} {listed}, the repository's newest is "
            f"{newest}: roll it out with tritonpy rollout --model {name}"
        )
        return [ProbeResult(name, True, False, None, OLD_VERSION, message)]
    return _results_for(client, name, states, found.files)


def _checked_endpoint(
    url: str, protocol: Optional[WireProtocol], timeout: float
) -> Tuple[Optional[WireProtocol], Endpoint]:
    """The protocol to ask for (HTTP for a bare ``host:port``) and the endpoint ``url``
    names, or :class:`ProbeUsageError`."""
    if timeout <= 0:
        raise ProbeUsageError(f"--timeout {timeout}: expected a number of seconds above 0")
    if protocol is None and "://" not in url:
        protocol = "http"  # the port the health endpoints (and Kubernetes probes) use
    try:
        return protocol, parse_endpoint(url, protocol)
    except ServerError as exc:
        raise ProbeUsageError(str(exc)) from exc


def _results_for(
    client: _ProbeClient, name: str, states: Dict[str, Dict[str, str]], where: Optional[Path]
) -> List[ProbeResult]:
    """A model the server does not know or that is not READY fails without a request; one
    served in several versions gets a request per READY version (each has its own stub)."""
    state = states.get(name)
    if state is None:
        known = ", ".join(sorted(states)) or "none"
        message = f"the server has no model {name!r}; its models: {known}"
        return [ProbeResult(name, False, False, None, "NOT_FOUND", message)]
    if state["state"] != "READY":
        reason = f": {state['reason']}" if state["reason"] else ""
        message = f"state {state['state'] or 'not loaded'}{reason}"
        return [ProbeResult(name, False, False, None, "NOT_READY", message)]
    versions = state.get("versions", "").split()
    if len(versions) < 2:
        return [_probe_one(client, name, where, sorted(states))]
    return [_probe_one(client, name, where, sorted(states), v) for v in versions]
