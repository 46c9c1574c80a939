"""The runtime: what a model.py running inside Triton's stub imports (numpy only, never
the tooling). Private: users import from ``tritonpy`` (see its ``__all__``)."""
