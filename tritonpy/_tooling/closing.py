"""``Closing``: ``with obj:`` for objects that hold something until their ``close()``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Optional, Type, TypeVar

Self = TypeVar("Self", bound="Closing")


class Closing(ABC):
    """Mixin: ``with obj:`` returns ``obj`` and calls ``obj.close()`` at the end, whatever
    happened inside (the harnesses, the server)."""

    @abstractmethod
    def close(self) -> None:
        """Release what the object holds (safe to call more than once)."""

    def __enter__(self: Self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: object,
    ) -> None:
        self.close()
