"""``FleetClient``: requests spread round robin over several replicas of one repository, a
request that a replica failed for a reason of its own sent again to the next replica (what a
Kubernetes Service in front of the pods plus a retrying client give), with counts.

Example::

    fleet = FleetClient(["10.0.0.1:8001", "10.0.0.2:8001", "10.0.0.3:8001"])
    outputs = fleet.infer("add_sub", {"INPUT0": x, "INPUT1": y})
    print(fleet.stats().summary())
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from numpy.typing import NDArray

from ..client import (
    InferClient,
    ModelSignature,
    OutputTensor,
    SequenceControl,
    StreamResult,
    WireProtocol,
    parse_endpoint,
    stream_infer,
)
from ._errors import FleetError
from ._retry import replica_fault
from ._stats import FleetStats, _Counter

T = TypeVar("T")
Arrays = Mapping[str, NDArray[Any]]


@dataclass(frozen=True)
class FleetAnswer:
    """One answered request: its ``outputs``, the ``replica`` (URL) that answered and the
    number of ``attempts`` it took (1: no retry)."""

    outputs: List[OutputTensor]
    replica: str
    attempts: int

    def __getitem__(self, name: str) -> NDArray[Any]:
        """The output ``name``'s array (``answer["Y"]``)."""
        for tensor in self.outputs:
            if tensor.name == name:
                return tensor.array
        raise KeyError(f"no output {name!r}; the answer has {[t.name for t in self.outputs]}")


class FleetClient:
    """An inference client over the replicas ``urls`` (``host:port`` or ``grpc://``/
    ``http://`` URLs, all of one ``protocol``).

    Each request goes to the next replica (round robin); when that replica fails it for a
    reason of its own (unreachable, ``UNAVAILABLE``, the model not loaded there, its stub
    dead: see :mod:`tritonpy.fleet._retry` for the codes measured on 24.10) it is sent to the
    next one, up to ``retries`` more times; a replica found unreachable is skipped for
    ``down_for`` seconds. A refusal of the request itself (``INVALID_ARG``, the model's own
    error) is raised at once as :class:`~tritonpy.TritonRequestError`; when every attempt
    failed, :class:`~tritonpy.fleet.FleetError` says what each replica answered.
    ``timeout``: seconds per attempt. Thread-safe: threads share one client.

    - :meth:`infer` / :meth:`answer`: one request (``answer`` also says which replica);
    - :meth:`stream`: a decoupled model's request, all its responses (a stream a replica cut
      is sent again whole to the next replica);
    - :meth:`infer_sequence`: a whole sequence (START ... END) on one replica; a replica's
      fault replays it from its start on the next replica (a sequence's state lives in one
      server's sequence batcher, so its requests cannot be spread);
    - :meth:`stats`: answered, failed, retried, per replica.

    Example::

        fleet = FleetClient(["127.0.0.1:8001", "127.0.0.1:9001"], retries=3)
        y = fleet.answer("double", {"X": np.ones((1, 4), np.float32)})["Y"]
        sums = fleet.infer_sequence("seq_sum", [{"VALUE": v} for v in values])
        parts = fleet.stream("tokens", {"TEXT": np.array([b"hi"], object)}).responses
    """

    def __init__(
        self,
        urls: Sequence[str],
        *,
        protocol: WireProtocol = "grpc",
        retries: int = 3,
        timeout: float = 30.0,
        down_for: float = 1.0,
        backoff: float = 0.05,
    ) -> None:
        if isinstance(urls, str) or not urls:
            raise FleetError(
                f"FleetClient needs a list of replica URLs, got {urls!r}; e.g. "
                "FleetClient(['10.0.0.1:8001', '10.0.0.2:8001'])."
            )
        self.urls: Tuple[str, ...] = tuple(urls)
        for url in self.urls:
            parse_endpoint(url, protocol)  # a wrong URL fails here, not at the first request
        self.protocol: WireProtocol = protocol
        self.retries = int(retries)
        self.timeout = float(timeout)
        self.down_for = float(down_for)
        self.backoff = float(backoff)
        self._lock = threading.Lock()
        self._next = 0
        self._down: Dict[str, float] = {}
        self._signatures: Dict[str, ModelSignature] = {}
        self._local = threading.local()
        self._clients: List[InferClient] = []
        self._counter = _Counter(self.urls)

    # --------------------------------------------------------------------- requests
    def infer(
        self,
        model: str,
        inputs: Arrays,
        outputs: Optional[Sequence[str]] = None,
        *,
        parameters: Optional[Mapping[str, Any]] = None,
        version: str = "",
    ) -> List[OutputTensor]:
        """One request to ``model`` (see :meth:`InferClient.infer
        <tritonpy.client.InferClient.infer>`) on the next replica that answers it."""
        return self.answer(model, inputs, outputs, parameters=parameters, version=version).outputs

    def answer(
        self,
        model: str,
        inputs: Arrays,
        outputs: Optional[Sequence[str]] = None,
        *,
        parameters: Optional[Mapping[str, Any]] = None,
        version: str = "",
    ) -> FleetAnswer:
        """:meth:`infer`, also saying which replica answered and after how many attempts."""

        def send(url: str) -> List[OutputTensor]:
            client = self._client(url)
            signature = self._signature(client, model)
            return client.infer(
                model, inputs, outputs, signature=signature, parameters=parameters, version=version
            )

        result, url, attempts = self._attempts(f"model {model!r}", send)
        return FleetAnswer(result, url, attempts)

    def stream(
        self,
        model: str,
        inputs: Arrays,
        *,
        parameters: Optional[Mapping[str, Any]] = None,
        version: str = "",
    ) -> StreamResult:
        """One request to a decoupled ``model``: every response until the final one (see
        :func:`tritonpy.client.stream_infer`). A stream a replica failed (before or after
        some responses) is sent again whole to the next replica; the result holds one
        replica's complete answer. A stream the model ended with an error raises it."""

        def send(url: str) -> StreamResult:
            return self._stream_once(url, model, inputs, parameters, None, version)

        return self._attempts(f"model {model!r} (stream)", send)[0]

    def infer_sequence(
        self,
        model: str,
        steps: Sequence[Arrays],
        *,
        sequence_id: Optional[Union[int, str]] = None,
        stream: bool = False,
    ) -> List[Union[List[OutputTensor], StreamResult]]:
        """Send the requests ``steps`` as one sequence (the first with START, the last with
        END, all with one correlation id: ``sequence_id``, default a fresh random one) to one
        replica; return each step's outputs (``stream=True``: each step's
        :class:`~tritonpy.client.StreamResult`, for a decoupled sequence model). A replica's
        fault at any step replays the whole sequence on the next replica."""
        if not steps:
            raise FleetError(f"model {model!r}: infer_sequence needs at least one step.")
        corr = sequence_id if sequence_id is not None else 1 + secrets.randbelow(2**31 - 2)

        def send(url: str) -> List[Union[List[OutputTensor], StreamResult]]:
            done: List[Union[List[OutputTensor], StreamResult]] = []
            for i, step in enumerate(steps):
                control = SequenceControl(corr, start=i == 0, end=i == len(steps) - 1)
                if stream:
                    done.append(self._stream_once(url, model, step, None, control, ""))
                    continue
                client = self._client(url)
                signature = self._signature(client, model)
                done.append(client.infer(model, step, signature=signature, sequence=control))
            return done

        return self._attempts(f"model {model!r} (sequence {corr})", send)[0]

    def stats(self) -> FleetStats:
        """The counts so far (a snapshot)."""
        return self._counter.snapshot()

    def close(self) -> None:
        """Close every connection this client opened (in every thread)."""
        with self._lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()
        self._local = threading.local()

    def __enter__(self) -> FleetClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --------------------------------------------------------------------- internals
    def _stream_once(
        self,
        url: str,
        model: str,
        inputs: Arrays,
        parameters: Optional[Mapping[str, Any]],
        sequence: Optional[SequenceControl],
        version: str,
    ) -> StreamResult:
        result = stream_infer(
            url,
            model,
            inputs,
            protocol=self.protocol,
            parameters=parameters,
            sequence=sequence,
            timeout=self.timeout,
            version=version,
        )
        if result.error is not None:
            raise result.error
        return result

    def _client(self, url: str) -> InferClient:
        clients: Optional[Dict[str, InferClient]] = getattr(self._local, "clients", None)
        if clients is None:
            clients = self._local.clients = {}
        client = clients.get(url)
        if client is None:
            client = clients[url] = InferClient(url, self.protocol, timeout=self.timeout)
            with self._lock:
                self._clients.append(client)
        return client

    def _signature(self, client: InferClient, model: str) -> ModelSignature:
        signature = self._signatures.get(model)
        if signature is None:
            signature = self._signatures[model] = client.signature(model)
        return signature

    def _order(self) -> List[str]:
        """The replicas to try: those up, round robin from the next one, then those marked
        down. The turn goes round the replicas up, so a dead replica's share is spread over
        all the others, not handed to the one after it (which would get twice the load)."""
        with self._lock:
            turn = self._next
            self._next += 1  # a Python int: no wrap, so no skew at a wrap
            now = time.monotonic()
            self._down = {u: t for u, t in self._down.items() if t > now}
            up = [u for u in self.urls if u not in self._down]
            down = [u for u in self.urls if u in self._down]
        return _rotated(up, turn) + _rotated(down, turn)

    def _attempts(self, what: str, send: Callable[[str], T]) -> Tuple[T, str, int]:
        order = self._order()
        tried: List[str] = []
        for attempt in range(self.retries + 1):
            url = order[attempt % len(order)]
            if attempt >= len(order):
                time.sleep(self.backoff * attempt)  # every replica failed once: let them recover
            try:
                result = send(url)
            except Exception as exc:
                reason = replica_fault(exc)
                if reason is None:
                    self._counter.refuse(url)
                    raise
                last = attempt == self.retries
                self._counter.fault(url, reason, retried=not last)
                if reason in ("unreachable", "unavailable"):
                    with self._lock:
                        self._down[url] = time.monotonic() + self.down_for
                tried.append(f"{url}: {reason} ({exc})")
                continue
            self._counter.answer(url)
            return result, url, attempt + 1
        raise FleetError(
            f"{what}: every attempt failed ({self.retries + 1} attempts over "
            f"{len(self.urls)} replicas): " + "; ".join(tried) + ". Are the replicas running "
            "and serving the model (tritonpy probe URL)? Raise retries= to wait longer."
        )


def _rotated(urls: List[str], turn: int) -> List[str]:
    """``urls`` starting from the ``turn``-th (round robin), wrapping around."""
    if not urls:
        return []
    start = turn % len(urls)
    return urls[start:] + urls[:start]
