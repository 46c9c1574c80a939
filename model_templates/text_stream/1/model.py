"""Streams a text back in chunks (sentences, lines or words), one response per chunk.

``infer`` is a generator: each ``yield {output: value}`` is one response, the last one is
flagged final, and the model is decoupled (clients use a gRPC stream or HTTP
``/generate_stream``). A client that cancels stops the stream at the next ``yield``
(chunks made in under 2 ms: within 0.1 s).

config.pbtxt parameter ``unit``: ``sentence`` (default), ``line`` or ``word``.
"""

import re
from typing import Any, Dict, Iterator, List

import numpy as np

import tritonpy as tp

# a sentence ends at ., ! or ? (perhaps with a closing quote or bracket) before white space
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+")
_UNITS = ("sentence", "line", "word")


class TextStream(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {
        "CHUNK": tp.Text(),  # one sentence, line or word
        "INDEX": tp.Tensor("INT64", [1]),  # its position in the stream, from 0
    }
    unit = tp.config_parameter("unit", "sentence", cast=str.lower, choices=_UNITS)  # config.pbtxt

    def split(self, text: str) -> List[str]:
        if self.unit == "word":
            return text.split()
        if self.unit == "line":
            return [line.strip() for line in text.splitlines() if line.strip()]
        return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]

    def infer(self, TEXT: str) -> Iterator[Dict[str, Any]]:
        chunks = self.split(TEXT)
        if not chunks:
            raise tp.InputError(
                f"input 'TEXT' has no {self.unit} to stream (it is empty or white space); "
                f"send some text",
                input_name="TEXT",
            )
        for index, chunk in enumerate(chunks):
            yield {"CHUNK": chunk, "INDEX": np.array([index], np.int64)}


TritonPythonModel = TextStream
