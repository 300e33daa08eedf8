"""Runs consecutive Python blocks of one doc section in one interpreter, in
order, sharing their globals, as a reader pasting them into one session would.

  python_driver.py BLOCKS.json RESULT_FILE

BLOCKS.json is a list of {"path", "line", "code"} (setup code comes as a block
of its own). Each block is compiled with blank lines in front so that a
traceback names the page and the line there. On the first exception the
traceback goes to stderr, the failing block's index to RESULT_FILE, and the
exit status is 1.
"""

import json
import linecache
import sys
import traceback


def main() -> int:
    blocks_file, result_file = sys.argv[1], sys.argv[2]
    with open(blocks_file) as f:
        blocks = json.load(f)
    namespace = {"__name__": "__main__"}
    for index, block in enumerate(blocks):
        source = "\n" * (block["line"] - 1) + block["code"] + "\n"
        # Tracebacks show the page's lines, as for a file.
        linecache.cache[block["path"]] = (len(source), None, source.splitlines(True), block["path"])
        try:
            exec(compile(source, block["path"], "exec"), namespace)  # noqa: S102 (the docs' own examples)
        except BaseException as error:  # noqa: BLE001 (SystemExit too: an example must not exit)
            # Without this driver's own frame.
            traceback.print_exception(type(error), error, error.__traceback__.tb_next)
            with open(result_file, "w") as f:
                f.write(str(index))
            return 1
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
