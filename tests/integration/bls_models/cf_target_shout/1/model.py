"""BLS target on text."""

import tritonpy as tp


class Shout(tp.Model):
    inputs = {"TEXT": tp.Text(), "SUFFIX": tp.Text(default="!")}
    outputs = {"LOUD": tp.Text()}

    def infer(self, TEXT, SUFFIX):
        return {"LOUD": TEXT.upper() + SUFFIX}


TritonPythonModel = Shout
