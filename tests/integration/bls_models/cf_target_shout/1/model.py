"""BLS target on text."""

import tritonpy as tp


class Shout(tp.Model):
    inputs = {"TEXT": tp.Text()}
    outputs = {"LOUD": tp.Text()}

    def infer(self, TEXT):
        return {"LOUD": TEXT.upper() + "!"}


TritonPythonModel = Shout
