"""Builds the `cpp` and `cmake` blocks of a page against the installed package.

One CMake project per page (find_package(spool), spool::spool), one
executable per block, so a compiler error carries the page's name and line
(`#line`). Nothing is run: the examples name buckets that do not exist here.

A `cpp` block is taken as a user would paste it:
- with `int main(` in it, it is a whole program and compiles as it is;
- otherwise its leading `#include` lines go at the top of a file and the rest
  becomes the body of `spool::Status Example()`, so SPOOL_ASSIGN_OR_RETURN
  works. The includes the block lists must be enough: nothing else is added.
- A line that is only `...` stands for code left out, and is dropped.
- Its setup annotation is file-scope code placed after the block's includes
  (declarations of the things the fragment uses: `step`, `Train(...)`). A
  setup holding the line `// the example` is the whole file around the body
  instead: the block's lines go in that line's place, with no wrapper.

A `cmake` block is configured and built as the body of a CMakeLists.txt with
the project and find_package(spool) above it and an executable for the
target it links (the first argument of target_link_libraries).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess

from doc_blocks import Block

EXAMPLE_MARKER = "// the example"


@dataclasses.dataclass
class Failure:
    block: Block
    what: str
    output: str


def _split_includes(code: str) -> tuple[list[str], list[str]]:
    lines = code.split("\n")
    n = 0
    while n < len(lines) and (lines[n].startswith("#include") or not lines[n].strip()
                              or lines[n].lstrip().startswith("//")):
        n += 1
    return lines[:n], lines[n:]


def _line(number: int, path: str) -> str:
    return f'#line {number} "{path}"'


def cpp_source(block: Block) -> str:
    if "int main(" in block.code:
        return _line(block.first_code_line, block.path) + "\n" + block.code + "\n"
    head, body = _split_includes(block.code)
    body = ["// ..." if line.strip() == "..." else line for line in body]   # an elision, as readers take it
    body_line = block.first_code_line + len(head)
    out = [_line(block.first_code_line, block.path), *head]
    setup = block.setup
    if setup and EXAMPLE_MARKER in [line.strip() for line in setup.code.split("\n")]:
        setup_lines = setup.code.split("\n")
        at = [s.strip() for s in setup_lines].index(EXAMPLE_MARKER)
        out += [_line(setup.line, block.path), *setup_lines[:at], _line(body_line, block.path), *body,
                _line(setup.line + at + 1, block.path), *setup_lines[at + 1:]]
        return "\n".join(out) + "\n"
    if setup:
        out += [_line(setup.line, block.path), *setup.code.split("\n")]
    out += ["#line 1 \"<example wrapper>\"", "namespace {", "[[maybe_unused]] spool::Status Example() {",
            _line(body_line, block.path), *body,
            "#line 3 \"<example wrapper>\"", "  return spool::OkStatus();", "}", "}  // namespace",
            "int main() { return Example().ok() ? 0 : 1; }"]
    return "\n".join(out) + "\n"


def _cmake_target(block: Block) -> str:
    match = re.search(r"target_link_libraries\(\s*([A-Za-z0-9_.+-]+)", block.code)
    if not match:
        raise ValueError(f"{block.where()}: a cmake block must link a target (target_link_libraries(NAME ...))")
    return match.group(1)


def build(blocks: list[Block], folder: str, prefix: str, log, timeout: int) -> list[Failure]:
    """Configures and builds every block in `folder`; returns the failures."""
    os.makedirs(folder, exist_ok=True)
    top = ["cmake_minimum_required(VERSION 3.25)", "project(doc_examples LANGUAGES CXX)",
           "set(CMAKE_CXX_STANDARD 20)", "set(CMAKE_CXX_STANDARD_REQUIRED ON)", "find_package(spool REQUIRED)"]
    targets: list[tuple[str, Block]] = []
    for block in blocks:
        name = f"block_{block.line}"
        if block.language == "cpp":
            with open(os.path.join(folder, f"{name}.cc"), "w") as f:
                f.write(cpp_source(block))
            top += [f"add_executable({name} {name}.cc)", f"target_link_libraries({name} PRIVATE spool::spool)"]
            targets.append((name, block))
        else:
            sub = os.path.join(folder, name)
            os.makedirs(sub, exist_ok=True)
            target = _cmake_target(block)
            with open(os.path.join(sub, "main.cc"), "w") as f:
                f.write("#include <spool/register_backends.h>\nint main() { spool::RegisterAllBackends(); }\n")
            with open(os.path.join(sub, "CMakeLists.txt"), "w") as f:
                f.write(f"# {block.where()}\nadd_executable({target} main.cc)\n{block.code}\n")
            top.append(f"add_subdirectory({name})")
            targets.append((target, block))
    with open(os.path.join(folder, "CMakeLists.txt"), "w") as f:
        f.write("\n".join(top) + "\n")

    build_dir = os.path.join(folder, "build")
    configure = ["cmake", "-S", folder, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                 f"-DCMAKE_PREFIX_PATH={prefix}"]
    if os.environ.get("CXX"):
        configure.append(f"-DCMAKE_CXX_COMPILER={os.environ['CXX']}")
    result = subprocess.run(configure, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        lines = ", ".join(str(block.line) for _, block in targets)
        return [Failure(targets[0][1], f"configuring the project of the blocks at lines {lines}",
                        result.stdout + result.stderr)]
    failures = []
    for target, block in targets:
        log(f"  {block.where()} [{block.language}] building {target}")
        result = subprocess.run(["cmake", "--build", build_dir, "--target", target], capture_output=True,
                                text=True, timeout=timeout)
        if result.returncode != 0:
            failures.append(Failure(block, f"building {target}", result.stdout + result.stderr))
    return failures
