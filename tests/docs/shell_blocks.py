"""Turns `sh` and `console` blocks into bash scripts that check every command.

A script stops at the first command whose exit status differs from the one
expected, and writes that command's index to the failure file. `set -e`
would miss `a && b` when `a` fails; this checks every complete command.

Expected status: 0, or N when the command's line ends in `# exit N`; in a
console block also N when the next command is `echo $?` and the doc shows N
as its output. The output a console block shows is compared loosely
(missing_output).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import subprocess

_EXIT_COMMENT = re.compile(r"#\s*exit\s+(\d+)\s*$")


@dataclasses.dataclass
class Command:
    line: int       # doc line of the command's first line
    text: str
    expected: int = 0
    shown: list[tuple[int, str]] = dataclasses.field(default_factory=list)  # console: (doc line, output line)


def _complete(text: str) -> bool:
    """Whether bash parses `text` as complete commands (no open quote, if, loop or continuation)."""
    if text.rstrip().endswith("\\"):
        return False
    result = subprocess.run(["bash", "-n"], input=text + "\n", capture_output=True, text=True)
    return result.returncode == 0


def _expected(text: str) -> int:
    match = _EXIT_COMMENT.search(text.split("\n")[-1])   # a comment can only end the last line
    return int(match.group(1)) if match else 0


def sh_commands(code: str, first_line: int) -> list[Command]:
    """The complete commands of an `sh` block (comments and blank lines dropped)."""
    commands: list[Command] = []
    pending: list[str] = []
    start = first_line
    for offset, line in enumerate(code.split("\n")):
        if not pending:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            start = first_line + offset
        pending.append(line)
        text = "\n".join(pending)
        if _complete(text):
            commands.append(Command(start, text, _expected(text)))
            pending = []
    if pending:
        commands.append(Command(start, "\n".join(pending)))  # bash reports the syntax error
    return commands


def console_commands(code: str, first_line: int) -> list[Command]:
    """The `$ ` commands of a `console` block; the other lines are output."""
    commands: list[Command] = []
    lines = code.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ ") or line == "$":
            start = i
            parts = [line[2:]]
            while parts[-1].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                parts.append(lines[i][2:] if lines[i].startswith("> ") else lines[i])
            commands.append(Command(first_line + start, "\n".join(parts), _expected("\n".join(parts))))
        elif commands and line.strip():
            commands[-1].shown.append((first_line + i, line))
        i += 1
    for index in range(len(commands) - 1):
        following = commands[index + 1]
        if following.text.strip() == "echo $?" and following.shown and following.shown[0][1].strip().isdigit():
            commands[index].expected = int(following.shown[0][1].strip())
    return commands


def missing_output(commands: list[Command], output: str) -> tuple[int, str] | None:
    """The first output line a console block shows whose first word starts no line of
    what the block printed, as (doc line, that line); None when all are there. Only the
    first word is compared: the rest (sizes, times, versions) differs from run to run."""
    printed = [line.strip() for line in output.split("\n")]
    for command in commands:
        for line, shown in command.shown:
            word = shown.split()[0]
            if not any(p.startswith(word) for p in printed):
                return line, shown
    return None


def script(commands: list[Command], fail_file: str, state_file: str) -> str:
    """A bash script running `commands` in order, checking each, then saving the environment."""
    out = ["set -o pipefail", f"__fail_file={shlex.quote(fail_file)}"]
    for index, command in enumerate(commands):
        out.append(command.text)
        out.append(f"__rc=$?; if [ $__rc -ne {command.expected} ]; then echo \"{index} $__rc\" > \"$__fail_file\"; "
                   f"exit 1; fi; (exit $__rc)")
    out.append(f"env -0 > {shlex.quote(state_file)}")
    return "\n".join(out) + "\n"
