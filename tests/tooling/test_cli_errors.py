"""The one error handler of the ``tritonpy`` command (``tritonpy._tooling.cli.run_command``)
and the one way subcommands are declared (``add_command``)."""

from __future__ import annotations

import argparse
from typing import Callable, List, Optional

import pytest

from tritonpy._runtime.errors import MissingDependencyError, ToolError, TritonRequestError
from tritonpy._tooling.cli import Failures, UsageError, add_command, add_note, run_command
from tritonpy.cli import build_parser, main


def failing(error: BaseException) -> Callable[[argparse.Namespace], int]:
    def command(args: argparse.Namespace) -> int:
        raise error

    return command


def run(error: BaseException, failures: Optional[Failures] = None, **options: str) -> int:
    args = argparse.Namespace(**options)
    return run_command(failing(error), args, name="thing", failures=failures or Failures())


def test_a_missing_dependency_is_one_line_naming_the_subcommand_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    error = MissingDependencyError("x", ("cv2",), ("opencv",), "image", "pip install it")
    assert run(error, Failures(prefix="tritonpy perf: ", status=1)) == 2
    assert capsys.readouterr().err == (
        "tritonpy: error: tritonpy thing needs opencv (not installed): pip install it\n"
    )


def test_an_error_prints_its_message_and_notes_with_the_command_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    error = ToolError("tritonserver exited")
    add_note(error, "the server log is kept in /tmp/log")
    assert run(error) == 1
    assert capsys.readouterr().err.splitlines() == [
        "tritonpy: error: tritonserver exited",
        "tritonpy: error: the server log is kept in /tmp/log",
    ]
    assert run(ToolError("no such directory"), Failures(status=2)) == 2
    assert capsys.readouterr().err == "tritonpy: error: no such directory\n"


def test_usage_and_bad_input_errors_exit_2_with_the_command_prefix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class BadInput(ToolError):
        pass

    failures = Failures(prefix="tritonpy perf: ", bad_input=(BadInput,))
    assert run(BadInput("--input 'X': expected NAME=FILE"), failures) == 2
    assert capsys.readouterr().err == "tritonpy perf: --input 'X': expected NAME=FILE\n"
    assert run(UsageError("new needs NAME")) == 2
    assert run(ToolError("refused"), failures) == 1


def test_a_bare_error_prints_as_the_server_gave_it(capsys: pytest.CaptureFixture[str]) -> None:
    failures = Failures(bare=(TritonRequestError,))
    assert run(TritonRequestError("INVALID_ARG", "negative"), failures) == 1
    assert capsys.readouterr().err == "[INVALID_ARG] negative\n"


def test_ctrl_c_is_one_line_and_exit_130_never_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    failures = Failures(interrupted="tritonpy: interrupted; {model_dir} left as it was")
    assert run(KeyboardInterrupt(), failures, model_dir="models/pre") == 130
    assert capsys.readouterr().err == "tritonpy: interrupted; models/pre left as it was\n"
    assert run(KeyboardInterrupt()) == 130
    assert capsys.readouterr().err == "tritonpy: interrupted\n"
    with pytest.raises(KeyboardInterrupt):  # a command may still choose to let it through
        run(KeyboardInterrupt(), Failures(interrupted=""))


def test_add_command_describes_the_command_with_its_docstring_and_handles_its_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def cmd_thing(args: argparse.Namespace) -> int:
        """Do the thing to THING."""
        raise UsageError(f"cannot do {args.what}")

    parser = argparse.ArgumentParser(prog="tritonpy")
    sub = add_command(parser.add_subparsers(), "thing", cmd_thing, help="do the thing")
    sub.add_argument("what")
    assert sub.description == "Do the thing to THING."
    args = parser.parse_args(["thing", "it"])
    assert args.func(args) == 2
    assert capsys.readouterr().err == "tritonpy: error: cannot do it\n"


def subcommands() -> List[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


def test_every_subcommand_has_a_description_and_a_help_page(
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = subcommands()
    assert {"serve", "infer", "new", "demo", "config", "check", "pack-env", "stub"} <= set(names)
    assert {"export", "probe", "perf", "tune"} <= set(names)
    for name in names:
        with pytest.raises(SystemExit) as exit_info:
            main([name, "--help"])
        assert exit_info.value.code == 0
        page = capsys.readouterr().out
        assert page.startswith(f"usage: tritonpy {name}")
        description = page.split("\n\n")[1]
        assert len(description) > 40 and not description.startswith("options"), name


def test_no_subcommand_prints_the_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().err
