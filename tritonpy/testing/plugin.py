"""pytest plugin for tritonpy (registered through the ``pytest11`` entry point)."""
