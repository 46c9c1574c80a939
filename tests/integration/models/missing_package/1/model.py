"""Imports a package that does not exist: loading must fail with ModuleNotFoundError."""

import tritonpy_no_such_package_xyz


class TritonPythonModel:
    def execute(self, requests):
        return tritonpy_no_such_package_xyz.run(requests)
