"""Counts the requests of each sequence, keyed by ``request.correlation_id()``, as Triton's
QA model ``sequence_py`` does (this repository's own rendition; see ../../README.md).

The first request of a sequence answers 1, each next one the count so far plus one. Like the
original it tests the flags with ``==``: a one-request sequence (START | END = 3) is taken
for a request without START, and a START of an id it still counts is refused; either refusal
raises, which fails the whole execute(). Decoupled (``qa_sequence_py_decoupled``, the same
file), each request gets its answer three times and then the final flag.
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.counts = {}

    def _count(self, request):
        key = request.correlation_id()
        if request.flags() == pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START:
            if key in self.counts:
                raise pb_utils.TritonModelException(f"sequence {key} is already counting")
            self.counts[key] = 1
        elif key in self.counts:
            self.counts[key] += 1
        else:
            raise pb_utils.TritonModelException(f"sequence {key} never started")
        return pb_utils.Tensor("OUTPUT0", np.array([self.counts[key]], np.int32))

    def execute(self, requests):
        if not self.decoupled:
            return [pb_utils.InferenceResponse([self._count(r)]) for r in requests]
        for request in requests:
            sender = request.get_response_sender()
            tensor = self._count(request)
            for _ in range(3):
                sender.send(pb_utils.InferenceResponse([tensor]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
