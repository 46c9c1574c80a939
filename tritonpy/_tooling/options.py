"""How error messages name the caller's options: ``--http-port 8000`` for a user of
``tritonpy serve``, ``http_port=8000`` for a caller of :class:`~tritonpy.server.TritonServer`.

Example::

    names = OptionNames(cli=True)
    names.option("http_port", "PORT")     # '--http-port PORT'
    OptionNames().option("http_port")     # 'http_port='
"""

from __future__ import annotations

from dataclasses import dataclass

# keyword arguments whose command-line flag is not simply --<name-with-dashes>
_FLAGS = {"startup_timeout": "--timeout"}


@dataclass(frozen=True)
class OptionNames:
    """Names options the way the caller typed them: CLI flags when ``cli`` is true, Python
    keyword arguments otherwise."""

    cli: bool = False

    def option(self, name: str, value: str = "") -> str:
        """``name`` (a keyword argument of TritonServer) as the caller writes it, with an
        optional placeholder ``value``."""
        if self.cli:
            flag = _FLAGS.get(name, "--" + name.replace("_", "-"))
            return f"{flag} {value}" if value else flag
        return f"{name}={value}"

    def options(self, *names: str) -> str:
        """Several options, comma-separated: ``--http-port, --grpc-port``."""
        return ", ".join(self.option(name) for name in names)


PYTHON_NAMES = OptionNames(cli=False)
CLI_NAMES = OptionNames(cli=True)
