"""An ablation of the add_sub workload, not a variant of it: add_sub_raw.py written in the
shape a declarative model has (an ``infer`` method of the inputs returning a dict of the
outputs, each made into its tensor in ``execute()``, with no checks). What it costs over
add_sub_raw is what that shape costs any model; add_sub_checked.py adds tritonpy's output
checks and the timing of ``infer``. Served with add_sub_raw's configuration:

    python benchmarks/cpu_split.py --workload add_sub --concurrency 16 --execute-cpu \\
        --extra dict=raw:benchmarks/workloads/models/add_sub_dict.py \\
        --extra checked=raw:benchmarks/workloads/models/add_sub_checked.py
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def infer(self, INPUT0, INPUT1):
        return {"OUTPUT0": np.add(INPUT0, INPUT1), "OUTPUT1": np.subtract(INPUT0, INPUT1)}

    def execute(self, requests):
        responses = []
        for request in requests:
            in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            in1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            result = self.infer(in0, in1)
            tensors = [pb_utils.Tensor(name, value) for name, value in result.items()]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses
