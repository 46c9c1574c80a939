"""The smallest tritonpy model: text in, the same text upper-cased out.

Edit the declarations and ``infer``; keep the last line, the name Triton's Python backend
looks for. The rest (reading tensors, UTF-8, batching, responses, errors) is tritonpy's.
"""

from typing import Dict, List

import tritonpy as tp


class Upper(tp.Model):
    inputs = {"TEXT": tp.Text()}  # TYPE_STRING, each element decoded from UTF-8
    outputs = {"UPPER": tp.Text()}
    max_batch_size = 8  # rows of all requests of one execute() arrive together

    def infer(self, TEXT: List[str]) -> Dict[str, List[str]]:
        return {"UPPER": [text.upper() for text in TEXT]}


TritonPythonModel = Upper
