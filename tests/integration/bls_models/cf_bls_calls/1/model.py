"""BLS caller: CASE picks the call; Y carries numbers, INFO what the call gave back (an error
as 'CODE: message')."""

import numpy as np

import tritonpy as tp


class Calls(tp.Model):
    inputs = {"CASE": tp.Text(), "X": tp.Tensor("FP32", [-1])}
    outputs = {"Y": tp.Tensor("FP32", [-1]), "INFO": tp.Text()}

    def infer(self, CASE, X):
        try:
            return self.run(CASE, X)
        except tp.TritonRequestError as exc:
            if CASE.startswith("raise"):
                raise
            return {"Y": X, "INFO": f"{exc.code}: {exc.message}"}

    def run(self, case, X):
        if case == "numpy":
            result = self.call("cf_target_scale", {"X": X})
            return {"Y": result["Y"], "INFO": f"N={result['N'].tolist()} {result['N'].dtype}"}
        if case == "list":  # Python numbers: INT64 at first, FP32 once the server said so
            result = self.call("cf_target_scale", {"X": [int(v) for v in X]}, outputs=["Y"])
            return {"Y": result["Y"], "INFO": ",".join(sorted(result))}
        if case == "text":
            loud = self.call("cf_target_shout", {"TEXT": "hello"})["LOUD"]
            return {"Y": X, "INFO": f"{loud.dtype} {loud.tolist()}"}
        if case == "stream":
            parts = list(self.call_stream("cf_target_count", {"N": [int(X[0])]}))
            return {"Y": np.array([p["I"][0] for p in parts], np.float32), "INFO": str(len(parts))}
        if case in ("error", "raise-error"):
            self.call("cf_target_scale", {"X": -X})
        if case == "missing":
            self.call("cf_no_such_model", {"X": X})
        if case == "wrong-dtype":
            self.call("cf_target_scale", {"X": X.astype(np.float64)})
        if case == "unknown-input":
            self.call("cf_target_negate", {"X": X, "Z": X})
        if case == "unexpected-input":
            self.call("cf_target_shout", {"TEXT": "a", "Z": "b"})
        if case == "call-decoupled":  # call() on a streaming target: refused
            self.call("cf_target_count", {"N": [1]})
        if case == "wrong-output":
            self.call("cf_target_scale", {"X": X}, outputs=["NOPE"])
        raise tp.InputError(f"input 'CASE': unknown case {case!r}")


TritonPythonModel = Calls
