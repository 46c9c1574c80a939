"""Follow a growing text file (tritonserver's log) from a byte offset, a complete line at a
time: what the log parser and the console echo both read.

Example::

    tail = FileTail(Path("/tmp/server.log"))
    for line in tail.read_lines():   # the complete lines appended since the last call
        ...
    tail.take_rest()                 # a last line without its newline, when the file is done
"""

from __future__ import annotations

from pathlib import Path
from typing import List


class FileTail:
    """The lines appended to ``path`` since ``offset``; a line still being written waits for
    its newline."""

    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path = path
        self.offset = offset
        self._partial = b""

    def read_lines(self) -> List[str]:
        """The complete lines appended since the last call (none when the file cannot be
        read), decoded as UTF-8 with replacement characters."""
        try:
            with open(self.path, "rb") as stream:
                stream.seek(self.offset)
                data = stream.read()
        except OSError:
            return []
        if not data:
            return []
        self.offset += len(data)
        *complete, self._partial = (self._partial + data).split(b"\n")
        return [raw.decode("utf-8", "replace") for raw in complete]

    def take_rest(self) -> str:
        """The unfinished last line (``""`` when there is none), which is then forgotten."""
        rest, self._partial = self._partial, b""
        return rest.decode("utf-8", "replace")
