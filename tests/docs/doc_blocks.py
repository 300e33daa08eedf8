"""Reads the fenced code blocks of a Markdown page, with their annotations.

A block's language (the first word after the fence) says what happens to it:

  sh, bash, shell    run by bash, command by command
  console            `$ ` lines are commands, the other lines their output
  python, py         run by Python; the blocks of one section share globals
  cpp, c++, cc, cxx  compiled and linked against the installed package
  cmake              configured and built against the installed package
  text, json, ...    listings (LISTING_LANGUAGES): never run

A block with no language is an error: the page must say which it is.

Annotations are HTML comments (invisible once rendered) on the lines
directly above the fence:

  <!-- not-run: why -->      the block is not run; the reason is required
  <!-- setup: code -->       code run (or, for C++, compiled) before the
  <!-- setup                 block, in its language; it may span lines up
  code                       to the closing `-->`
  -->
"""

from __future__ import annotations

import dataclasses
import re

RUN_LANGUAGES = {
    "sh": "sh", "bash": "sh", "shell": "sh",
    "console": "console",
    "python": "python", "py": "python",
    "cpp": "cpp", "c++": "cpp", "cc": "cpp", "cxx": "cpp",
    "cmake": "cmake",
}
LISTING_LANGUAGES = {
    "text", "txt", "output", "json", "jsonl", "yaml", "yml", "toml", "ini", "xml", "csv", "tsv",
    "proto", "protobuf", "dockerfile", "diff", "http", "prometheus", "promql", "markdown", "md",
}

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_HEADING = re.compile(r"^(?P<level>#{1,6})\s+(?P<title>.*?)\s*#*\s*$")


class DocError(Exception):
    """A page that breaks the rules above; the message names the file and line."""


@dataclasses.dataclass
class Setup:
    line: int  # 1-based line of the setup's first code line
    code: str


@dataclasses.dataclass
class Block:
    path: str        # as given, for messages
    line: int        # 1-based line of the opening fence
    language: str    # the normalised kind (RUN_LANGUAGES' values) or the listing's tag
    code: str        # the lines between the fences, indentation removed
    section: str     # the title of the `##` section the block is in ("" before the first)
    not_run: str | None = None  # the reason, when annotated not-run
    setup: Setup | None = None

    @property
    def first_code_line(self) -> int:
        return self.line + 1

    @property
    def runnable(self) -> bool:
        return self.language in RUN_LANGUAGES.values() and self.not_run is None

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def parse(text: str, path: str) -> list[Block]:
    """Every fenced block of the page, in order; raises DocError on a rule broken."""
    lines = text.split("\n")
    blocks: list[Block] = []
    section = ""
    pending: dict = {}   # annotations waiting for their fence: kind -> (line, value)
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            i = _read_block(lines, i, fence, path, section, pending, blocks)
            pending = {}
            continue
        stripped = line.strip()
        if stripped.startswith("<!--") and _annotation_kind(stripped):
            i = _read_annotation(lines, i, path, pending)
            continue
        if pending:
            first = min(where for where, _ in pending.values())
            raise DocError(f"{path}:{first}: an annotation must sit on the lines directly above a fenced block")
        heading = _HEADING.match(line)
        if heading and len(heading.group("level")) <= 2:
            section = heading.group("title")
        i += 1
    if pending:
        first = min(where for where, _ in pending.values())
        raise DocError(f"{path}:{first}: an annotation at the end of the page annotates no block")
    return blocks


def _annotation_kind(stripped: str) -> str | None:
    body = stripped[4:].lstrip()
    for kind in ("not-run", "setup"):
        if body.startswith(kind) and (len(body) == len(kind) or body[len(kind)] in ": \t-"):
            return kind
    return None


def _read_annotation(lines: list[str], i: int, path: str, pending: dict) -> int:
    start = i
    stripped = lines[i].strip()
    kind = _annotation_kind(stripped)
    body = stripped[4:].lstrip()[len(kind):]
    body = body[1:] if body.startswith(":") else body
    parts = [body]
    while "-->" not in parts[-1]:
        i += 1
        if i == len(lines):
            raise DocError(f"{path}:{start + 1}: the comment is never closed with -->")
        parts.append(lines[i])
    parts[-1] = parts[-1][:parts[-1].index("-->")]
    if kind in pending:
        raise DocError(f"{path}:{start + 1}: a second {kind} annotation for the same block")
    if kind == "not-run":
        reason = " ".join(p.strip() for p in parts).strip()
        if not reason:
            raise DocError(f"{path}:{start + 1}: <!-- not-run: ... --> needs a reason after the colon")
        pending[kind] = (start + 1, reason)
    else:
        # Code on the comment's first line starts there; otherwise on the next.
        first_line = start + 1 if parts[0].strip() else start + 2
        code_lines = parts if parts[0].strip() else parts[1:]
        pending[kind] = (start + 1, Setup(first_line, "\n".join(code_lines).strip("\n")))
    return i + 1


def _read_block(lines, i, fence, path, section, pending, blocks) -> int:
    indent = len(fence.group("indent"))
    marker = fence.group("fence")
    info = fence.group("info").strip()
    close = re.compile(r"^ *" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}\s*$")
    j = i + 1
    while j < len(lines) and not close.match(lines[j]):
        j += 1
    if j == len(lines):
        raise DocError(f"{path}:{i + 1}: the fenced block is never closed")
    tag = info.split()[0].lower() if info else ""
    if not tag:
        raise DocError(
            f"{path}:{i + 1}: the fenced block has no language; give it one: sh, console, python or cpp "
            f"to run it, or text (json, yaml, ...) for a listing that is not run")
    if tag in RUN_LANGUAGES:
        language = RUN_LANGUAGES[tag]
    elif tag in LISTING_LANGUAGES:
        language = tag
    else:
        raise DocError(
            f"{path}:{i + 1}: unknown block language '{tag}'; runnable: {', '.join(sorted(RUN_LANGUAGES))}; "
            f"listings: {', '.join(sorted(LISTING_LANGUAGES))} (tests/docs/doc_blocks.py)")
    body = [line[indent:] if line[:indent].strip() == "" else line for line in lines[i + 1:j]]
    not_run = pending.get("not-run", (0, None))[1]
    setup = pending.get("setup", (0, None))[1]
    if setup is not None and language not in RUN_LANGUAGES.values():
        raise DocError(f"{path}:{i + 1}: a setup annotation on a '{tag}' listing, which is never run")
    blocks.append(Block(path, i + 1, language, "\n".join(body), section, not_run, setup))
    return j + 1
