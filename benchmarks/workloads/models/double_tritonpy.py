"""Y = 2 * X, batched rows (dynamic batching): the model whose stub the chaos benchmark
(benchmarks/stub_kill_chaos.py) and the healing test (tests/integration/test_heal.py) kill."""

import tritonpy as tp


class Double(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [4])}
    outputs = {"Y": tp.Tensor("FP32", [4])}
    max_batch_size = 8

    def infer(self, X):
        return {"Y": X * 2}


TritonPythonModel = Double
