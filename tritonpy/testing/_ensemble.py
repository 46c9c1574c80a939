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
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np
from numpy.typing import NDArray

from .._runtime.errors import TritonRequestError
from .._tooling.closing import Closing
from ._config import parse_config_pbtxt
from ._errors import HarnessError
from ._harness import ModelHarness

Outputs = Dict[str, NDArray[Any]]


class EnsembleHarness(Closing):
    """Load the ensemble ``name`` of ``repository`` and a :class:`ModelHarness` for each of its
    step models, then run requests through the steps the way Triton's ensemble scheduler does:
    a step runs once every tensor of its ``input_map`` exists.

    ``infer_requests`` sends several requests through each step in one ``execute()`` (as the
    dynamic batchers of the members would), and a request that fails in a step stops there with
    that step's error, like on the server. ``release``: the members' target release (see
    ModelHarness; default the bundled ``"24.10"``).
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
        self.members: Dict[str, ModelHarness] = {}
        try:
            for step in self.steps:
                model = step["model_name"]
                if model not in self.members:
                    self.members[model] = ModelHarness(self.repository / model, release=release)
        except BaseException:
            self.close()
            raise

    def infer(self, inputs: Mapping[str, Any]) -> Outputs:
        """One request through every step; its outputs, or a :class:`TritonRequestError`."""
        (result,) = self.infer_requests([inputs])
        if isinstance(result, TritonRequestError):
            raise result
        return result

    def infer_requests(
        self, requests: Sequence[Mapping[str, Any]]
    ) -> List[Union[Outputs, TritonRequestError]]:
        """Several requests through the steps; one result or error per request."""
        tensors: List[Dict[str, Any]] = [dict(r) for r in requests]
        failed: List[Optional[TritonRequestError]] = [None] * len(requests)
        pending = list(self.steps)
        while pending:
            live = [i for i, error in enumerate(failed) if error is None]
            if not live:
                break
            ready = [
                s
                for s in pending
                if all(set(s["input_map"].values()) <= set(tensors[i]) for i in live)
            ]
            if not ready:
                missing = {t for s in pending for t in s["input_map"].values()}
                raise HarnessError(
                    f"ensemble {self.name!r}: steps {[s['model_name'] for s in pending]} wait "
                    f"for tensors no step produces ({sorted(missing)}); run 'tritonpy check'"
                )
            step = ready[0]
            pending.remove(step)
            results = self.members[step["model_name"]].infer_requests(
                [{k: tensors[i][v] for k, v in step["input_map"].items()} for i in live],
                requested_outputs=list(step["output_map"]),
            )
            for index, result in zip(live, results):
                if isinstance(result, TritonRequestError):
                    failed[index] = result
                    continue
                for key, tensor in step["output_map"].items():
                    tensors[index][tensor] = result[key]
        names = [o["name"] for o in self.config.get("output", [])]
        return [
            error if error is not None else {n: np.asarray(tensors[i][n]) for n in names}
            for i, error in enumerate(failed)
        ]

    def close(self) -> None:
        """Close every member harness (runs their ``finalize``)."""
        for harness in self.members.values():
            harness.close()
        self.members = {}
