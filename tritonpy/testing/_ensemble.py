"""``EnsembleHarness``: run an ensemble's steps over one ModelHarness per member model.

Example::

    from tritonpy.testing import EnsembleHarness

    with EnsembleHarness("model_repository", "digits") as ensemble:
        out = ensemble.infer({"IMAGE": np.array([[png_bytes]], dtype=object)})
        out["LABELS"]
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import NDArray

from .._runtime.errors import TritonRequestError
from .._tooling.closing import Closing
from .._tooling.errors import ModelLoadError
from ._config import CONFIG_TO_WIRE, directory_config, parse_config_pbtxt
from ._errors import HarnessError
from ._harness import ModelHarness
from ._requests import check_requested_outputs, to_client_array, validate_request
from ._responses import StreamErrors, decoupled_refused

Outputs = Dict[str, NDArray[Any]]
Result = Union[Outputs, TritonRequestError]

#: an output a member's response left out: the server counts the tensor as produced all the
#: same, runs the steps that read it without it (the member then refuses the request for its
#: missing input) and leaves it out of the ensemble's response (measured on 24.10)
ABSENT: Any = object()


class EnsembleHarness(Closing):
    """Load the ensemble ``name`` of ``repository`` and a :class:`ModelHarness` for each of its
    step models (an :class:`EnsembleHarness` for a step that is an ensemble), then run
    requests through the steps the way Triton's ensemble scheduler does: a step runs once
    every tensor of its ``input_map`` exists.

    A request is first checked against the ensemble's own config, as the server checks it
    (wrong shape or data type, a missing or unknown input, a batch above the ensemble's
    ``max_batch_size``, an output the ensemble does not declare: INVALID_ARG naming the
    ensemble). A step's error response reaches the client with the step's code and the
    server's prefix, ``in ensemble '<name>', <the member's message>``.

    ``infer_requests`` sends several requests through each step in one ``execute()`` (as the
    dynamic batchers of the members would), and a request that fails in a step stops there with
    that step's error, like on the server. ``release``: the members' target release (see
    ModelHarness; default the bundled ``"24.10"``).

    Example::

        with EnsembleHarness("model_repository", "chain") as chain:
            chain.infer({"IN": np.ones((1, 2), np.float32)}, requested_outputs=["OUT"])
    """

    def __init__(
        self, repository: Union[str, os.PathLike[str]], name: str, *, release: Optional[str] = None
    ) -> None:
        self.repository = Path(repository)
        self.name = name
        config_path = self.repository / name / "config.pbtxt"
        if not config_path.is_file():
            raise HarnessError(f"ensemble {name!r}: {config_path} not found")
        self.config = parse_config_pbtxt(config_path.read_text(encoding="utf-8"), str(config_path))
        if self.config.get("platform") != "ensemble":
            raise HarnessError(
                f"model {name!r} is not an ensemble (platform {self.config.get('platform')!r}); "
                f"use ModelHarness for it"
            )
        self.steps: List[Dict[str, Any]] = list(
            self.config.get("ensemble_scheduling", {}).get("step", [])
        )
        self._check_graph()
        self.members: Dict[str, Union[ModelHarness, EnsembleHarness]] = {}
        try:
            for step in self.steps:
                model = step["model_name"]
                if model in self.members:
                    continue
                # a step may be an ensemble itself: its errors then read
                # "in ensemble '<outer>', in ensemble '<inner>', ..." (measured on 24.10)
                nested = directory_config(self.repository / model, None).get("platform")
                self.members[model] = (
                    EnsembleHarness(self.repository, model, release=release)
                    if nested == "ensemble"
                    else ModelHarness(self.repository / model, release=release)
                )
            self._check_batch_sizes()
        except BaseException:
            self.close()
            raise
        #: the server makes an ensemble decoupled when a member is (its model_transaction_policy
        #: reads decoupled: true; measured on 24.10 with ensemble_io's decoupled trial)
        self.decoupled: bool = any(member.decoupled for member in self.members.values())

    def _check_graph(self) -> None:
        """The server refuses to load an ensemble whose step reads a tensor that neither the
        ensemble's inputs nor any step's outputs provide."""
        known = {io["name"] for io in self.config.get("input", [])}
        known |= {t for s in self.steps for t in s.get("output_map", {}).values()}
        for step in self.steps:
            missing = sorted(set(step.get("input_map", {}).values()) - known)
            if missing:
                raise HarnessError(
                    f"ensemble {self.name!r}: step {step['model_name']!r} reads {missing}, which "
                    f"neither the ensemble's inputs nor any step's outputs provide (the server "
                    f"refuses to load it); fix its input_map, then run 'tritonpy check'"
                )

    def _check_batch_sizes(self) -> None:
        """The server refuses to load an ensemble whose max_batch_size is above a batching
        member's (core r24.10 ensemble_utils.cc ValidateEnsembleConfig; measured)."""
        limit = int(self.config.get("max_batch_size", 0))
        for step in self.steps:
            model = step["model_name"]
            own = int(self.members[model].config.get("max_batch_size", 0))
            if own != 0 and own < limit:
                text = (
                    f"ensemble {self.name} allows maximum batch size {limit}, but it contains "
                    f"model {model} which only allows maximum batch size to be {own}"
                )
                raise ModelLoadError(
                    f"{text} (the server refuses to load the ensemble: lower its "
                    f"max_batch_size to {own} or raise {model}'s)",
                    failures={self.name: text},
                )

    def infer(
        self,
        inputs: Mapping[str, Any],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
        parameters: Optional[Dict[str, Any]] = None,
        request_id: str = "",
    ) -> Outputs:
        """One request through every step; its outputs, or a :class:`TritonRequestError`.
        Every step's request carries the ensemble request's ``request_id`` and ``parameters``,
        as the server's do (core r24.10 ensemble_scheduler.cc: SetId, SetParameters)."""
        (result,) = self.infer_requests(
            [inputs],
            requested_outputs=requested_outputs,
            parameters=parameters,
            request_ids=[request_id],
        )
        if isinstance(result, TritonRequestError):
            raise result
        return result

    def infer_requests(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
        parameters: Optional[Dict[str, Any]] = None,
        request_ids: Optional[Sequence[str]] = None,
    ) -> List[Result]:
        """Several requests through the steps; one result or error per request (the same
        ``requested_outputs`` and ``parameters`` for each; ``requested_outputs`` None: every
        output the ensemble declares)."""
        if self.decoupled:
            return [decoupled_refused(self.name) for _ in requests]
        wanted = None if requested_outputs is None else list(requested_outputs)
        ids = list(request_ids) if request_ids is not None else [""] * len(requests)
        tensors: List[Dict[str, Any]] = []
        failed: List[Optional[TritonRequestError]] = []
        asked: List[List[str]] = []
        for inputs, request_id in zip(requests, ids):
            arrays, error, names = self._admit(inputs, wanted, request_id)
            tensors.append(arrays)
            failed.append(error)
            asked.append(names)
        self._run_steps(tensors, failed, ids, parameters)
        return [
            error if error is not None else self._outputs(tensors[i], asked[i])
            for i, error in enumerate(failed)
        ]

    def infer_stream(
        self,
        inputs: Mapping[str, Any],
        *,
        requested_outputs: Optional[Iterable[str]] = None,
        parameters: Optional[Dict[str, Any]] = None,
        request_id: str = "",
        errors: StreamErrors = "raise",
    ) -> List[Any]:
        """One request, as a gRPC stream sends it; every response of the ensemble, in order.
        Each response of a decoupled member goes on through the later steps on its own: three
        steps of two responses each answer 8 times, as the server does (measured on 24.10,
        ``ensemble_io`` with decoupled members). An error (a refusal or a step's error
        response) raises TritonRequestError; with ``errors="return"`` it ends the list instead.

        Example::

            with EnsembleHarness("model_repository", "ensemble_io") as ensemble:
                parts = ensemble.infer_stream({"INPUT0": x, "GPU_OUTPUT": flags})
        """
        if errors not in ("raise", "return"):
            raise HarnessError(f"infer_stream(errors={errors!r}): expected 'raise' or 'return'")
        wanted = None if requested_outputs is None else list(requested_outputs)
        arrays, error, names = self._admit(inputs, wanted, request_id)
        parts: List[Any] = [error] if error is not None else []
        if error is None:
            self._branch(arrays, list(self.steps), names, parts, (request_id, parameters))
        for part in parts:
            if errors == "raise" and isinstance(part, TritonRequestError):
                raise part
        return parts

    def _branch(
        self,
        tensors: Dict[str, Any],
        pending: List[Dict[str, Any]],
        names: List[str],
        parts: List[Any],
        call: Tuple[str, Optional[Dict[str, Any]]],
    ) -> bool:
        """The steps of one branch of a streamed request, depth first, its response(s) added
        to ``parts``; False once an error has ended the stream."""
        step = next((s for s in pending if self._ready(s, tensors)), None)
        if step is None:
            parts.append(self._outputs(tensors, names))
            return True
        rest = [s for s in pending if s is not step]
        member = self.members[step["model_name"]]
        given = {k: tensors[v] for k, v in step["input_map"].items() if tensors[v] is not ABSENT}
        wanted = list(step["output_map"])
        request_id, parameters = call
        answers: List[Any] = (
            member.infer_stream(
                given,
                requested_outputs=wanted,
                parameters=parameters,
                request_id=request_id,
                errors="return",
            )
            if member.decoupled
            else member.infer_requests(
                [given], requested_outputs=wanted, parameters=parameters, request_ids=[request_id]
            )
        )
        for answer in answers:
            if isinstance(answer, TritonRequestError):
                parts.append(self._step_error(answer))
                return False
            branch = dict(tensors)
            for key, tensor in step["output_map"].items():
                branch[tensor] = answer.get(key, ABSENT)
            if not self._branch(branch, rest, names, parts, call):
                return False
        return True

    def refusal(
        self, inputs: Mapping[str, Any], requested_outputs: Optional[Iterable[str]] = None
    ) -> Optional[TritonRequestError]:
        """The server's refusal of this request against the ensemble's own config (None when
        it would be taken), without running a step."""
        wanted = None if requested_outputs is None else list(requested_outputs)
        return self._admit(inputs, wanted)[1]

    def _admit(
        self, inputs: Mapping[str, Any], wanted: Optional[List[str]], request_id: str = ""
    ) -> Tuple[Dict[str, Any], Optional[TritonRequestError], List[str]]:
        """A request as the server takes it: checked against the ensemble's own config."""
        declared = {
            io["name"]: CONFIG_TO_WIRE.get(io.get("data_type", ""))
            for io in self.config.get("input", [])
        }
        try:
            arrays = {n: to_client_array(v, n, declared.get(n)) for n, v in inputs.items()}
            validate_request(self.config, self.name, arrays, request_id)
            names = check_requested_outputs(self.config, self.name, wanted)
        except TritonRequestError as error:
            return {}, error, []
        return arrays, None, names

    def _run_steps(
        self,
        tensors: List[Dict[str, Any]],
        failed: List[Optional[TritonRequestError]],
        ids: List[str],
        parameters: Optional[Dict[str, Any]],
    ) -> None:
        """Each step once per request, as soon as the request holds its inputs; the requests
        a step is ready for go to its member together."""
        pending = [list(self.steps) if error is None else [] for error in failed]
        while True:
            step = next(
                (
                    s
                    for s in self.steps
                    for i, todo in enumerate(pending)
                    if failed[i] is None and s in todo and self._ready(s, tensors[i])
                ),
                None,
            )
            if step is None:
                return
            live = [
                i
                for i, todo in enumerate(pending)
                if failed[i] is None and step in todo and self._ready(step, tensors[i])
            ]
            for i in live:
                pending[i].remove(step)
            results = self.members[step["model_name"]].infer_requests(
                [
                    {
                        k: tensors[i][v]
                        for k, v in step["input_map"].items()
                        if tensors[i][v] is not ABSENT
                    }
                    for i in live
                ],
                requested_outputs=list(step["output_map"]),
                parameters=parameters,
                request_ids=[ids[i] for i in live],
            )
            for index, result in zip(live, results):
                if isinstance(result, TritonRequestError):
                    failed[index] = self._step_error(result)
                    continue
                for key, tensor in step["output_map"].items():
                    tensors[index][tensor] = result.get(key, ABSENT)

    @staticmethod
    def _ready(step: Dict[str, Any], tensors: Dict[str, Any]) -> bool:
        return set(step["input_map"].values()) <= set(tensors)

    def _step_error(self, error: TritonRequestError) -> TritonRequestError:
        """A member's error response as the ensemble's client gets it: the member's code,
        the server's prefix naming the ensemble."""
        return TritonRequestError(error.code, f"in ensemble '{self.name}', {error.message}")

    @staticmethod
    def _outputs(tensors: Dict[str, Any], names: List[str]) -> Outputs:
        """The requested outputs the steps produced (one a member left out is left out)."""
        return {n: np.asarray(tensors[n]) for n in names if tensors.get(n, ABSENT) is not ABSENT}

    def close(self) -> None:
        """Close every member harness (runs their ``finalize``)."""
        for harness in self.members.values():
            harness.close()
        self.members = {}
