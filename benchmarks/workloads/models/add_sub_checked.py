"""An ablation of the add_sub workload (see add_sub_dict.py): the declarative shape plus
what tritonpy's plain-tensor path adds to it per request, written out by hand: ``infer``
timed (for ``check_cancellation="auto"``) and each output checked against its declared
data type and shape before it becomes a tensor. What it costs over add_sub_dict.py is those
checks; what tritonpy costs over it is the rest of its engine. It is also the add_sub
workload's ``checked`` variant (``benchmarks/run.py --checked``; sequence_checked.py and
stream_checked.py are the others), whose pooled ratios split the same way."""

from time import perf_counter

import numpy as np
import triton_python_backend_utils as pb_utils

OUTPUTS = (("OUTPUT0", np.dtype(np.float32), (4,)), ("OUTPUT1", np.dtype(np.float32), (4,)))


class TritonPythonModel:
    def initialize(self, args):
        self.slowest = 0.0

    def infer(self, INPUT0, INPUT1):
        return {"OUTPUT0": np.add(INPUT0, INPUT1), "OUTPUT1": np.subtract(INPUT0, INPUT1)}

    def execute(self, requests):
        responses = []
        for request in requests:
            in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            in1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            started = perf_counter()
            result = self.infer(in0, in1)
            elapsed = perf_counter() - started
            if elapsed > self.slowest:
                self.slowest = elapsed
            tensors = []
            for name, dtype, dims in OUTPUTS if type(result) is dict else ():
                value = result.get(name)
                if type(value) is not np.ndarray or value.dtype != dtype or value.shape != dims:
                    raise pb_utils.TritonModelException(f"output {name!r} does not fit")
                tensors.append(pb_utils.Tensor(name, value))
            if len(tensors) != len(result):
                raise pb_utils.TritonModelException("infer() returned undeclared outputs")
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses
