"""The ELF reading the checker needs, from the one reader tritonpy has (:mod:`tritonpy.stubs.elf`).

>>> needed_libraries("backends/python/triton_python_backend_stub")      # doctest: +SKIP
['libcudart.so.12', 'libpython3.10.so.1.0', 'libstdc++.so.6', ...]
>>> linked_python("backends/python/triton_python_backend_stub")         # doctest: +SKIP
'3.10'
"""

from __future__ import annotations

from ..stubs.elf import ElfError, linked_python, needed_libraries

__all__ = ["ElfError", "linked_python", "needed_libraries"]
