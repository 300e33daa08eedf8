#!/usr/bin/env python3
"""The doc-example runner itself: a broken example fails its page's test with
a message that names the page, the line and the command; the rules on
languages and annotations hold. On local files only (no buckets).

  runner_test.py --spool BIN --python PY --pythonpath DIR --prefix DIR
"""

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = None


def run_page(text: str) -> tuple[int, str]:
    """Runs the runner on a page holding `text`; its exit status and output."""
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "page.md"), "w") as f:
            f.write(textwrap.dedent(text))
        result = subprocess.run(
            [sys.executable, os.path.join(HERE, "run_doc_examples.py"), "page.md", "--root", root,
             "--spool", ARGS.spool, "--python", ARGS.python, "--pythonpath", ARGS.pythonpath,
             "--prefix", ARGS.prefix, "--work", os.path.join(root, "work"), "--timeout", "120"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
        return result.returncode, result.stdout + result.stderr


class Runner(unittest.TestCase):
    def test_passing_blocks_of_every_kind(self):
        rc, out = run_page("""\
            # A page

            ```sh
            spool convert digits.csv ./ds/train --shards 2
            export COUNT_URL=./ds/train.manifest.json
            ```

            ```console
            $ spool records count $COUNT_URL
            200
            $ spool cat ./no-such-file   # exit 1
            ```

            <!-- setup
            import numpy as np
            -->
            ```python
            import spool
            value = np.int64(3)
            ```

            ```python
            assert value == 3 and spool.stat("digits.csv").size > 0
            ```

            <!-- setup
            #include <string>
            std::string Name() { return "s"; }
            -->
            ```cpp
            #include <spool/core/status.h>

            SPOOL_RETURN_IF_ERROR(spool::OkStatus());
            ...
            if (Name().empty()) return spool::InvalidArgumentError("empty");
            ```

            <!-- not-run: an example of the annotation -->
            ```sh
            exit 1
            ```

            ```text
            not a command
            ```
            """)
        self.assertEqual(rc, 0, out)
        self.assertIn("page.md: 7 blocks: 4 run, 1 compiled, 1 not run, 1 listings; 0 failed", out)
        self.assertIn("not run (1): an example of the annotation", out)

    def test_a_failing_command_is_named_with_its_line(self):
        # `false && true` is not caught by `set -e`; the runner checks each command.
        rc, out = run_page("""\
            # A page

            ```sh
            echo before
            false && echo never
            echo after
            ```
            """)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAILED page.md:5 (sh block at line 3, section 'A page'): `false && echo never` exited 1", out)
        self.assertIn("    | before", out)
        self.assertNotIn("after", out)

    def test_a_console_command_must_exit_as_shown(self):
        rc, out = run_page("""\
            ## Verify

            ```console
            $ true
            $ echo $?
            3
            ```
            """)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAILED page.md:4 (console block at line 3, section 'Verify'): `true` exited 0 (expected 3)", out)

    def test_a_console_block_must_print_what_it_shows(self):
        # Only each shown line's first word is compared: values change from run to run.
        rc, out = run_page("""\
            ## Stat

            ```console
            $ printf 'url: x\\nsize: 3\\n'
            url:  s3://b/k
            size: 17
            crc32c: 0x1234
            ```
            """)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAILED page.md:7 (console block at line 3, section 'Stat'): printed no line starting with "
                      "'crc32c:', as the page shows:\n    crc32c: 0x1234", out)

    def test_a_python_error_shows_the_page_line(self):
        rc, out = run_page("""\
            ## Loader

            ```python
            x = 1
            y = undefined_name
            ```
            """)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAILED page.md:3 (python block at line 3, section 'Loader')", out)
        self.assertIn('File "page.md", line 5, in <module>', out)
        self.assertIn("y = undefined_name", out)

    def test_a_fragment_missing_an_include_fails_to_compile(self):
        rc, out = run_page("""\
            ```cpp
            #include <spool/core/status.h>

            SPOOL_ASSIGN_OR_RETURN(auto location, spool::OpenLocation("file:///tmp/x"));
            ```
            """)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAILED page.md:1 (cpp block at line 1", out)
        self.assertIn("page.md:4:", out)   # the compiler's message, at the page's line
        self.assertIn("OpenLocation", out)

    def test_the_rules_on_blocks_and_annotations(self):
        for page, message in [
            ("```\nls\n```\n", "page.md:1: the fenced block has no language"),
            ("```bsh\nls\n```\n", "page.md:1: unknown block language 'bsh'"),
            ("<!-- not-run: -->\n```sh\nls\n```\n", "page.md:1: <!-- not-run: ... --> needs a reason"),
            ("<!-- not-run: why -->\n\n```sh\nls\n```\n", "page.md:1: an annotation must sit on the lines"),
            ("<!-- setup: ls -->\n```text\nls\n```\n", "page.md:2: a setup annotation on a 'text' listing"),
        ]:
            with self.subTest(page=page):
                rc, out = run_page(page)
                self.assertEqual(rc, 1, out)
                self.assertIn(message, out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("--spool", "--python", "--pythonpath", "--prefix"):
        parser.add_argument(name, required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest])
