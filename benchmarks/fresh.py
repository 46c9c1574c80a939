"""``--fresh-stubs``: every round of a cell on new stub processes.

A variant's ``triton_python_backend_stub`` is one long-lived process, and where the machine
places it (its memory, caches, the core it shares with tritonserver's threads) weighs on all
of its rounds alike: two copies of one model can differ by several percent for a whole run.
Rounds inside one run then do not average that out, however many there are. Reloading every
variant's model before each round (Triton's repository API, explicit model control) gives
each round new stubs, so the median of the rounds is taken over several placements instead
of one.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterable, List

__all__ = ["SERVER_ARGS", "restart_stubs", "stub_models"]

#: the tritonserver arguments the reloads need (the benchmark starts it without the healer)
SERVER_ARGS = ("--model-control-mode=explicit", "--load-model=*")


def stub_models(repo: Path, model: str) -> List[str]:
    """The models whose stubs serve ``model``: the model itself, or an ensemble's steps (and
    theirs, for an ensemble of ensembles), in step order."""
    from tritonpy.config import parse_config

    config = parse_config((repo / model / "config.pbtxt").read_text(encoding="utf-8"))
    if config.platform != "ensemble":
        return [model]
    members: List[str] = []
    for step in config.ensemble_scheduling.step:
        for member in stub_models(repo, step.model_name):
            if member not in members:
                members.append(member)
    return members


def restart_stubs(http_url: str, repo: Path, models: Iterable[str]) -> float:
    """Reload every model that serves one of ``models`` (so that each gets new stub
    processes; an ensemble over a reloaded member is loaded again too) and return the
    seconds it took."""
    from tritonpy.server._supervise import reload_model

    started = time.monotonic()
    done: List[str] = []
    for model in models:
        for member in stub_models(repo, model):
            if member not in done:
                reload_model(http_url, member)
                done.append(member)
    return time.monotonic() - started
