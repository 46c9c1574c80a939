"""The tritonserver command line that :class:`~tritonpy.server.TritonServer` runs.

Example::

    server_command("/opt/tritonserver", repository="repo", backends="/b",
                   host="127.0.0.1", ports=(8000, 8001, 8002))[1]
    # '--model-repository=repo'
"""

from __future__ import annotations

from typing import List, Sequence, Tuple


def server_command(
    tritonserver: str,
    *,
    repository: str,
    backends: str,
    host: str,
    ports: Tuple[int, int, int],
    log_verbose: int = 0,
    explicit: bool = False,
    exit_on_error: bool = True,
    extra_args: Sequence[str] = (),
) -> List[str]:
    """The arguments of one tritonserver run.

    ``explicit``: run with ``--model-control-mode=explicit --load-model=*``, so that every
    model still loads at startup and models can be reloaded through the repository API (what
    healing needs); Triton refuses repository-API loads in its default mode.
    ``exit_on_error=False``: the server keeps serving the other models when one fails to load
    at startup.
    """
    http_port, grpc_port, metrics_port = ports
    control = ["--model-control-mode=explicit", "--load-model=*"] if explicit else []
    return [
        tritonserver,
        f"--model-repository={repository}",
        f"--backend-directory={backends}",
        f"--http-address={host}",
        f"--grpc-address={host}",
        f"--metrics-address={host}",
        f"--http-port={http_port}",
        f"--grpc-port={grpc_port}",
        f"--metrics-port={metrics_port}",
        f"--exit-on-error={'true' if exit_on_error else 'false'}",
        "--strict-readiness=true",
        f"--log-verbose={log_verbose}",
        *control,
        *extra_args,
    ]
