"""``triton_python_backend_stub`` provisioning: a stub for the environment's Python, from the
server's own release, beside config.pbtxt.

Example::

    from tritonpy.stubs import provision_stub

    provision_stub("model_repository/preprocess", triton_version="24.10", python="3.10")
"""
