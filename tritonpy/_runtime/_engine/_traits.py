"""What the engine takes of a model's declarations: its :class:`Traits`, read once at
``initialize`` from the class (the kind of ``infer``, streaming, merging) and from the instance
(the knobs a config parameter may override, such as ``check_cancellation``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .._declarations import INFER_SYNC, cancellation_policy
from .._sequence import Sequence

#: with check_cancellation = "auto", requests are checked while infer() takes this long or more
AUTO_CANCELLATION_SECONDS = 0.002


@dataclass(frozen=True)
class Traits:
    """The declarations of one model instance that decide the engine's paths."""

    #: what kind of callable ``infer`` is (``_declarations.INFER_SYNC``...)
    infer_kind: str
    #: ``infer`` names an argument ``parameters`` (it gets the request parameters)
    wants_parameters: bool
    #: the model streams (Triton's decoupled transaction policy)
    decoupled: bool
    #: ``merge_requests``: infer() may take the rows of several requests at once
    merge_requests: bool
    #: True/False from ``check_cancellation``, None for "auto"
    check_cancellation: Optional[bool]
    #: a stateful model's ``tp.Sequence`` declaration (None: requests are independent)
    sequence: Optional[Sequence] = None
    #: ``infer`` names an argument ``sequence`` (it gets each request's sequence)
    wants_sequence: bool = False

    @property
    def synchronous(self) -> bool:
        """``infer`` is a plain function (not async, not a generator)."""
        return self.infer_kind == INFER_SYNC


def traits_of(
    model: Any, infer_kind: str, wants_parameters: bool, wants_sequence: bool = False
) -> Traits:
    """The traits of an instance: the class's declarations (``infer_kind``,
    ``wants_parameters`` and ``wants_sequence`` as the class definition found them) and the
    instance's knobs."""
    cls = type(model)
    return Traits(
        infer_kind=infer_kind,
        wants_parameters=wants_parameters,
        decoupled=bool(cls.decoupled),
        merge_requests=bool(cls.merge_requests),
        check_cancellation=cancellation_policy(cls, model.check_cancellation),
        sequence=cls.sequence,
        wants_sequence=wants_sequence,
    )
