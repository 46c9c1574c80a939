"""Batching rules (TP3xx), on the configuration after auto-complete.

==========  ========  ==============================================================
TP301       error     dynamic_batching on a model with max_batch_size 0
TP302       error     a preferred_batch_size above max_batch_size
TP303       warning   KIND_GPU instances for a model whose work is CPU-only
==========  ========  ==============================================================

A tritonpy model counts as CPU-only when none of its codecs is a ``TorchTensor`` bound to a
non-CPU device and its model.py imports no GPU framework (torch, cupy, tensorflow, jax,
onnxruntime, tensorrt, numba, triton).
"""

from __future__ import annotations

import types
from typing import Any, Iterator

from ..envs import GPU_MODULES  # top-level packages whose import suggests GPU work
from ._context import ModelEntry, Repository, error
from ._report import WARNING, Finding


def check_batching(repo: Repository) -> Iterator[Finding]:
    """Yield the batching findings of every model."""
    for entry in repo:
        config = entry.effective_config
        if config is None or entry.is_ensemble:
            continue
        yield from _check_model(entry, config)


def _check_model(entry: ModelEntry, config: Any) -> Iterator[Finding]:
    mbs = config.max_batch_size
    if config.HasField("dynamic_batching"):
        if mbs == 0:
            yield error(
                entry,
                "TP301",
                "dynamic_batching",
                "dynamic_batching is set but max_batch_size is 0: the batcher needs a batch "
                "dimension to merge requests along",
                "set max_batch_size > 0 (and declare it on a tritonpy class), or remove "
                "dynamic_batching",
            )
        else:
            too_big = [p for p in config.dynamic_batching.preferred_batch_size if p > mbs]
            if too_big:
                yield error(
                    entry,
                    "TP302",
                    "dynamic_batching.preferred_batch_size",
                    f"preferred_batch_size {too_big} above max_batch_size {mbs}; Triton "
                    f"refuses the configuration",
                    f"use preferred sizes between 1 and {mbs}",
                )
    cls = entry.model_class
    if cls is None or not is_cpu_only(entry):
        return
    for index, group in enumerate(entry.config.instance_group):
        if group.kind == type(group).KIND_GPU:
            yield entry.finding(
                "TP303",
                WARNING,
                f"instance_group[{index}].kind",
                f"KIND_GPU instances for {cls.__name__}, whose codecs and "
                f"imports are CPU-only: each instance holds a GPU (and its memory) for "
                f"CPU work",
                "use instance_group { kind: KIND_CPU } unless infer() really uses the GPU",
            )


def is_cpu_only(entry: ModelEntry) -> bool:
    """True for a tritonpy model whose declared work cannot touch a GPU (see the module
    docstring); False for every other model (nothing is known about them)."""
    from .._runtime.codecs.torch_tensor import TorchTensor

    cls = entry.model_class
    found = entry.env_import
    if found is not None:  # imported in its own environment: judged there
        return cls is not None and found.cpu_only
    loaded = entry.loaded
    if cls is None or loaded is None:
        return False
    for codec in (*cls.inputs.values(), *cls.outputs.values()):
        # device None: inputs stay where Triton put them, maybe on a GPU
        if isinstance(codec, TorchTensor) and codec.device != "cpu":
            return False
    for value in vars(loaded.module).values():
        origin = (
            value.__name__
            if isinstance(value, types.ModuleType)
            else getattr(value, "__module__", None)
        )
        if isinstance(origin, str) and origin.split(".")[0] in GPU_MODULES:
            return False
    return True
