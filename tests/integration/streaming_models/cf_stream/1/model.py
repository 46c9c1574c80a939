"""Streams the words of TEXT, one response each (WORD, INDEX). BAD -> InputError, CRASH ->
ZeroDivisionError mid-stream; a first word SLOW makes each next part take 0.5 s (time for a
client's cancellation to arrive); STATUS yields how many parts the last closed stream had
sent when it was closed (its finally block ran)."""

from __future__ import annotations

import time
from typing import Any, Dict, Iterator

import numpy as np

import tritonpy as tp


class Stream(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"WORD": tp.Text(), "INDEX": tp.Tensor("INT32", [1])}

    def setup(self) -> None:
        self.last_closed = -1

    def infer(self, TEXT: str) -> Iterator[Dict[str, Any]]:
        if TEXT == "STATUS":
            yield {"WORD": str(self.last_closed), "INDEX": np.array([0], np.int32)}
            return
        words = TEXT.split()
        slow = bool(words) and words[0] == "SLOW"
        resumed = 0  # the parts the stream asked past: the ones it sent
        try:
            for index, word in enumerate(words):
                if word == "BAD":
                    raise tp.InputError(f"word {index} is BAD; send words other than BAD")
                if word == "CRASH":
                    print(1 / 0)
                yield {"WORD": word, "INDEX": np.array([index], np.int32)}
                resumed += 1
                if slow:
                    time.sleep(0.5)
        finally:
            self.last_closed = resumed


TritonPythonModel = Stream
