"""``RepositoryHarness``: a whole model repository under pytest, every model a BLS target of
the others, as in one Triton server.

Example::

    from tritonpy.testing._repository import RepositoryHarness

    def test_pipeline():
        with RepositoryHarness("model_repository") as repo:
            out = repo.infer("router", {"X": np.array([1.0, 2.0], np.float32)})
            assert out["ROUTE"].tolist() == [b"scale"]
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from .._runtime.errors import TritonRequestError
from .._tooling.closing import Closing
from . import fake_pb_utils as pb
from ._config import directory_config
from ._ensemble import EnsembleHarness
from ._errors import HarnessError
from ._harness import ModelHarness
from ._requests import client_view
from ._targets import bls_handler, server_error

Outputs = Dict[str, Any]


class RepositoryHarness(Closing):
    """Load the models of ``repository`` lazily (a model is loaded the first time it is used,
    directly or by a BLS call) and register every one of them, Python models and ensembles, as
    a BLS target: ``self.call("other_model", ...)`` in one model reaches ``other_model`` of
    the same repository, as it does in Triton.

    ``harness(name)`` is the model's :class:`ModelHarness` (or :class:`EnsembleHarness`);
    ``infer`` / ``infer_stream`` send one request to a model. ``close()`` (or the ``with``
    block) closes every loaded model and removes the registrations. ``release`` (``YY.MM``,
    default the bundled ``"24.10"``) is every model's target release (see ModelHarness).
    """

    def __init__(
        self, repository: Union[str, os.PathLike[str]], *, release: Optional[str] = None
    ) -> None:
        self.repository = Path(repository)
        self.release = release
        if not self.repository.is_dir():
            raise HarnessError(
                f"model repository {self.repository} does not exist; pass the directory that "
                f"holds one folder per model"
            )
        self._kinds: Dict[str, str] = {}
        for path in sorted(self.repository.iterdir()):
            if not path.is_dir() or path.name.startswith((".", "_")):
                continue
            parsed = directory_config(path, None)
            name = str(parsed.get("name") or path.name)
            if parsed.get("platform") == "ensemble":
                self._kinds[name] = "ensemble"
            elif parsed.get("backend", "python") == "python":
                self._kinds[name] = "python"
        self._loaded: Dict[str, Union[ModelHarness, EnsembleHarness]] = {}
        self._closed = False
        for name in self._kinds:
            pb.register_bls_model(name, self._lazy_handler(name))

    @property
    def models(self) -> List[str]:
        """The names of the models this harness serves (Python models and ensembles)."""
        return list(self._kinds)

    def _lazy_handler(self, name: str) -> Any:
        handler: Optional[Any] = None

        def lazy(request: pb.InferenceRequest) -> Any:
            nonlocal handler
            if handler is None:
                target = self.harness(name)
                if isinstance(target, EnsembleHarness):
                    handler = _ensemble_handler(target)
                else:
                    handler = bls_handler(target)
            return handler(request)

        return lazy

    def harness(self, name: str) -> Union[ModelHarness, EnsembleHarness]:
        """The (loaded on first use) harness of model ``name``."""
        if self._closed:
            raise HarnessError(f"RepositoryHarness for {self.repository} is closed")
        loaded = self._loaded.get(name)
        if loaded is not None:
            return loaded
        kind = self._kinds.get(name)
        if kind is None:
            raise HarnessError(
                f"model '{name}' is not in repository {self.repository}: it serves "
                f"{', '.join(self._kinds) or 'no model'}"
            )
        loaded = (
            EnsembleHarness(self.repository, name, release=self.release)
            if kind == "ensemble"
            else ModelHarness(self.repository / name, release=self.release)
        )
        self._loaded[name] = loaded
        return loaded

    def infer(
        self,
        model: str,
        inputs: Mapping[str, Any],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
        parameters: Optional[Dict[str, Any]] = None,
        request_id: str = "",
    ) -> Outputs:
        """Send one request to ``model``; its outputs as a client sees them (an ensemble gives
        ``request_id`` and ``parameters`` to every step's request)."""
        return self.harness(model).infer(
            inputs,
            requested_outputs=requested_outputs,
            parameters=parameters,
            request_id=request_id,
        )

    def infer_stream(
        self,
        model: str,
        inputs: Mapping[str, Any],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
    ) -> List[Outputs]:
        """Send one request to the decoupled ``model`` (or an ensemble, decoupled or not),
        as a gRPC stream does; every response's outputs."""
        return self.harness(model).infer_stream(inputs, requested_outputs=requested_outputs)

    def close(self) -> None:
        """Close every loaded model and remove the BLS registrations."""
        if self._closed:
            return
        self._closed = True
        for name in self._kinds:
            pb.unregister_bls_model(name)
        for loaded in self._loaded.values():
            loaded.close()
        self._loaded = {}


def _ensemble_handler(ensemble: EnsembleHarness) -> Any:
    """A BLS call to an ensemble: its requested outputs, or the ensemble's error response
    (its message only: 24.10's BLS path makes every callee's error INTERNAL; a refusal of the
    request reads ``Model <ensemble> - Error when running inference: ...``, measured)."""

    def handler(request: pb.InferenceRequest) -> pb.InferenceResponse:
        inputs = {t.name(): client_view(t.as_numpy()) for t in request.inputs()}
        names = list(request.requested_output_names()) or None
        refused = ensemble.refusal(inputs, names)
        if refused is not None:  # refused before any step runs: the server's BLS wording
            return server_error(ensemble.name, refused.message)
        (result,) = ensemble.infer_requests(
            [inputs],
            requested_outputs=names,
            parameters=json.loads(request.parameters() or "{}"),
            request_ids=[request.request_id()],
        )
        if isinstance(result, TritonRequestError):
            return pb.InferenceResponse(error=pb.TritonError(result.message))
        return pb.InferenceResponse([pb.Tensor(n, v) for n, v in result.items()])

    return handler
