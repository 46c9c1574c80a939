"""Plain tensors only, no batching: requests take tritonpy's plain-tensor path. MODE picks
what infer returns: 0 the declared arrays (one a strided view), 1 values to convert, 2 one
output left out, 3 an output of the wrong shape, 4 the declared arrays with COUNT 1 when the
plain-tensor path relies on the server's checks of the inputs (0 when it checks them itself)."""

import numpy as np

import tritonpy as tp
from tritonpy._runtime._engine._plain import server_checks_inputs
from tritonpy._runtime._engine.engine import engine_of


class Plain(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [-1]), "MODE": tp.Tensor("INT32", [1])}
    outputs = {
        "Y": tp.Tensor("FP32", [-1]),
        "EVEN": tp.Tensor("INT64", [-1]),
        "COUNT": tp.Tensor("INT32", [1]),
    }

    def infer(self, X, MODE):
        mode = int(MODE[0])
        count = len(X)
        if mode == 1:
            return {"Y": X.astype(np.float64) / 2, "EVEN": list(range(count)), "COUNT": count}
        outputs = {
            "Y": X * 2 if mode != 3 else X.reshape(1, -1),
            "EVEN": np.arange(2 * count, dtype=np.int64)[::2],  # a strided view
            "COUNT": np.array([count], np.int32),
        }
        if mode == 2:
            del outputs["COUNT"]
        if mode == 4:
            outputs["COUNT"] = np.array([int(server_checks_inputs(engine_of(self)))], np.int32)
        return outputs


TritonPythonModel = Plain
