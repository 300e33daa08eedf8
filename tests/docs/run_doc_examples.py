#!/usr/bin/env python3
"""Runs the examples of one Markdown page of the docs, as a user would.

  run_doc_examples.py PAGE --root SRC --spool BIN --python PY --pythonpath DIR --prefix DIR --work DIR

Which blocks run and how to opt one out: docs/building.md, "Examples in the
docs are tests", and doc_blocks.py. Each `##` section of the page gets a
fresh folder holding the sample inputs (workspace.py); its runnable blocks run
there in order: exported variables carry from one shell block to the next,
consecutive Python blocks share their globals. What a user would substitute
is substituted in shell and Python blocks:
- every bucket (`s3://NAME`, `gs://NAME`) becomes NAME-<run id>, made before
  the page runs and deleted after it: S3 buckets on the server in
  AWS_ENDPOINT_URL (the ceph_rgw fixture), GCS buckets on the local GCS
  server (the gcs_server fixture, SPOOL_GCS_SERVER_DIR), which
  STORAGE_EMULATOR_HOST points `gs://` at;
- `/scratch/` becomes the section's folder `scratch/`, `/path/to/spool/`
  the source tree;
- `spool`, `python` and `python3` on PATH are the build's command and the
  virtual environment's Python, with the build's package importable.

Each failure names the page, the line of the block (and of the command), the
command, its exit status and its output. Exit status 1 if any block failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpp_blocks  # noqa: E402
import shell_blocks  # noqa: E402
import workspace  # noqa: E402
from doc_blocks import Block, DocError, parse  # noqa: E402

_BUCKET = re.compile(r"\b(s3|gs)://([a-z0-9][a-z0-9.-]*[a-z0-9])")
_OUTPUT_LIMIT = 6000   # characters of a failing command's output shown


def log(message: str) -> None:
    print(message, flush=True)


class Buckets:
    """The buckets a page names, renamed per run, made and removed here."""

    def __init__(self, blocks: list[Block]):
        self.suffix = "d" + secrets.token_hex(3)
        self.names: dict[tuple[str, str], str] = {}
        for block in blocks:
            for text in (block.code, block.setup.code if block.setup else ""):
                for scheme, name in _BUCKET.findall(text):
                    self.names[(scheme, name)] = f"{name}-{self.suffix}"[:63]

    def substitute(self, text: str) -> str:
        return _BUCKET.sub(lambda m: f"{m.group(1)}://{self.names.get((m.group(1), m.group(2)), m.group(2))}", text)

    def create(self, env: dict[str, str]) -> None:
        for (scheme, _), name in self.names.items():
            if scheme == "s3":
                self._s3(env).create_bucket(Bucket=name)
            else:
                request = urllib.request.Request(
                    f"http://{env['STORAGE_EMULATOR_HOST']}/storage/v1/b?project=docs", method="POST",
                    data=json.dumps({"name": name}).encode(), headers={"Content-Type": "application/json"})
                urllib.request.urlopen(request, timeout=30).read()

    def delete(self, env: dict[str, str]) -> None:
        """Removes the S3 buckets with everything in them (the GCS server is the fixture's, in memory)."""
        for (scheme, _), name in self.names.items():
            if scheme != "s3":
                continue
            try:
                bucket = self._s3(env, resource=True).Bucket(name)
                bucket.object_versions.delete()
                bucket.objects.delete()
                for upload in bucket.multipart_uploads.all():
                    upload.abort()
                bucket.delete()
            except Exception as error:  # noqa: BLE001 (clean-up is best effort; say so)
                log(f"note: could not delete bucket s3://{name}: {error}")

    @staticmethod
    def _s3(env, resource=False):
        import boto3  # the virtual environment's; only pages naming s3:// need it
        session = boto3.session.Session(aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                                        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
                                        region_name=env.get("AWS_REGION", "us-east-1"))
        make = session.resource if resource else session.client
        return make("s3", endpoint_url=env["AWS_ENDPOINT_URL"])


class Page:
    def __init__(self, args, blocks: list[Block]):
        self.args = args
        self.blocks = blocks
        self.buckets = Buckets([b for b in blocks if b.runnable and b.language != "cpp"])
        self.failures: list[str] = []
        self.work = args.work
        self.env = self._base_env()

    def _base_env(self) -> dict[str, str]:
        bin_dir = os.path.join(self.work, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        for name, target in (("spool", self.args.spool), ("python", self.args.python),
                             ("python3", self.args.python)):
            os.symlink(os.path.abspath(target), os.path.join(bin_dir, name))
        env = dict(os.environ)
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        env["PYTHONPATH"] = os.path.abspath(self.args.pythonpath)
        env["HOME"] = os.path.join(self.work, "home")
        os.makedirs(env["HOME"], exist_ok=True)
        env.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
        if env.get("SPOOL_GCS_SERVER_DIR"):
            with open(os.path.join(env["SPOOL_GCS_SERVER_DIR"], "port")) as f:
                env["STORAGE_EMULATOR_HOST"] = f"127.0.0.1:{int(f.read())}"
        return env

    def check_servers(self) -> None:
        schemes = {scheme for scheme, _ in self.buckets.names}
        if "s3" in schemes and "AWS_ENDPOINT_URL" not in self.env:
            raise DocError(f"{self.args.page} names s3:// buckets: run it with the ceph_rgw fixture's environment")
        if "gs" in schemes and "STORAGE_EMULATOR_HOST" not in self.env:
            raise DocError(f"{self.args.page} names gs:// buckets: run it with the gcs_server fixture "
                           "(SPOOL_GCS_SERVER_DIR)")

    # --- running ---------------------------------------------------------

    def run(self) -> None:
        sections: dict[str, list[Block]] = {}
        for block in self.blocks:
            if block.runnable and block.language in ("sh", "console", "python"):
                sections.setdefault(block.section, []).append(block)
        if sections:
            self.check_servers()
            self.buckets.create(self.env)
        try:
            for number, (title, blocks) in enumerate(sections.items()):
                self._run_section(number, title, blocks)
        finally:
            self.buckets.delete(self.env)
        compiled = [b for b in self.blocks if b.runnable and b.language in ("cpp", "cmake")]
        if compiled:
            failures = cpp_blocks.build(compiled, os.path.join(self.work, "cpp"), self.args.prefix, log,
                                        self.args.timeout)
            for failure in failures:
                self._fail(failure.block, None, failure.what, failure.output)

    def _run_section(self, number: int, title: str, blocks: list[Block]) -> None:
        folder = os.path.join(self.work, f"section-{number:02d}")
        os.makedirs(os.path.join(folder, "scratch"))
        workspace.make(folder)
        log(f"== section '{title or '(top)'}' in {folder}")
        env = dict(self.env)
        i = 0
        while i < len(blocks):
            block = blocks[i]
            if block.language == "python":
                group = [block]
                while i + 1 < len(blocks) and blocks[i + 1].language == "python":
                    i += 1
                    group.append(blocks[i])
                ok = self._run_python(group, folder, env)
            else:
                ok = self._run_shell(block, folder, env)
            if not ok:
                rest = len(blocks) - i - 1
                if rest:
                    log(f"   (the {rest} later block(s) of this section are skipped: they may build on this one)")
                return
            i += 1

    def _substitute(self, text: str, folder: str) -> str:
        text = self.buckets.substitute(text).replace("/scratch/", os.path.join(folder, "scratch") + "/")
        return text.replace("/path/to/spool/", os.path.abspath(self.args.root) + "/")

    def _run_shell(self, block: Block, folder: str, env: dict[str, str]) -> bool:
        split = shell_blocks.console_commands if block.language == "console" else shell_blocks.sh_commands
        commands = []
        if block.setup:
            commands += shell_blocks.sh_commands(block.setup.code, block.setup.line)
        commands += split(block.code, block.first_code_line)
        for command in commands:
            command.text = self._substitute(command.text, folder)
        fail_file = os.path.join(self.work, "failed")
        state_file = os.path.join(self.work, "state")
        for name in (fail_file, state_file):
            if os.path.exists(name):
                os.remove(name)
        script = shell_blocks.script(commands, fail_file, state_file)
        log(f"  {block.where()} [{block.language}] {len(commands)} command(s)")
        rc, output = self._execute(["bash", "-c", script], folder, env)
        missing = shell_blocks.missing_output(commands, output) if rc == 0 else None
        if missing:
            line, shown = missing
            self._fail(block, line, f"printed no line starting with '{shown.split()[0]}', as the page shows:\n"
                       f"    {self._substitute(shown, folder).strip()}", output)
            return False
        if rc == 0 and os.path.exists(state_file):
            with open(state_file, "rb") as f:
                entries = [e.decode(errors="replace") for e in f.read().split(b"\0") if b"=" in e]
            env.clear()
            env.update(dict(e.split("=", 1) for e in entries))
            for name in ("_", "SHLVL", "PWD", "OLDPWD"):
                env.pop(name, None)
            return True
        if os.path.exists(fail_file):
            index, status = (int(x) for x in open(fail_file).read().split())
            command = commands[index]
            expected = f" (expected {command.expected})" if command.expected else ""
            self._fail(block, command.line, f"`{command.text}` exited {status}{expected}", output)
        else:
            self._fail(block, None, f"the block exited {rc}", output)
        return False

    def _run_python(self, group: list[Block], folder: str, env: dict[str, str]) -> bool:
        parts = []
        for block in group:
            if block.setup:
                parts.append({"path": block.path, "line": block.setup.line,
                              "code": self._substitute(block.setup.code, folder), "block": block.line})
            parts.append({"path": block.path, "line": block.first_code_line,
                          "code": self._substitute(block.code, folder), "block": block.line})
        blocks_file = os.path.join(self.work, "python-blocks.json")
        result_file = os.path.join(self.work, "python-failed")
        if os.path.exists(result_file):
            os.remove(result_file)
        with open(blocks_file, "w") as f:
            json.dump(parts, f)
        log("  " + ", ".join(f"{b.where()}" for b in group) + " [python]")
        driver = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python_driver.py")
        rc, output = self._execute([self.args.python, driver, blocks_file, result_file], folder, env)
        if rc == 0:
            return True
        if os.path.exists(result_file):
            part = parts[int(open(result_file).read())]
            block = next(b for b in group if b.line == part["block"])
            self._fail(block, None, "raised (traceback below, with the page's line numbers)", output)
        else:
            self._fail(group[0], None, f"python exited {rc}", output)
        return False

    def _execute(self, command: list[str], folder: str, env: dict[str, str]) -> tuple[int, str]:
        """Runs `command` in its own process group, output to a file (background jobs may
        keep a pipe open), and kills whatever the group left running."""
        with tempfile.TemporaryFile(mode="w+", dir=self.work) as out:
            process = subprocess.Popen(command, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc = process.wait(timeout=self.args.timeout)
            except subprocess.TimeoutExpired:
                rc = -1
                out.write(f"\n(timed out after {self.args.timeout} s)\n")
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
            out.seek(0)
            return rc, out.read()

    def _fail(self, block: Block, line: int | None, what: str, output: str) -> None:
        where = f"{block.path}:{line}" if line else block.where()
        if len(output) > _OUTPUT_LIMIT:
            output = "...\n" + output[-_OUTPUT_LIMIT:]
        message = (f"FAILED {where} ({block.language} block at line {block.line}, section "
                   f"'{block.section}'): {what}\n" + "".join(f"    | {l}\n" for l in output.rstrip().split("\n")))
        log(message)
        self.failures.append(f"{where}: {what.splitlines()[0] if what else ''}")


def summary(page: str, blocks: list[Block], failures: list[str]) -> str:
    ran = sum(1 for b in blocks if b.runnable and b.language in ("sh", "console", "python"))
    compiled = sum(1 for b in blocks if b.runnable and b.language in ("cpp", "cmake"))
    opted_out = Counter(b.not_run for b in blocks if b.not_run is not None)
    listings = sum(1 for b in blocks if b.not_run is None and not b.runnable)
    lines = [f"{page}: {len(blocks)} blocks: {ran} run, {compiled} compiled, {sum(opted_out.values())} not run, "
             f"{listings} listings; {len(failures)} failed"]
    lines += [f"  not run ({n}): {reason}" for reason, n in sorted(opted_out.items())]
    lines += [f"  FAILED {f}" for f in failures]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("page", help="the Markdown file, relative to --root")
    parser.add_argument("--root", required=True, help="the source tree")
    parser.add_argument("--spool", required=True, help="the spool command of the build")
    parser.add_argument("--python", required=True, help="the Python with the package's dependencies")
    parser.add_argument("--pythonpath", required=True, help="the build's Python package folder")
    parser.add_argument("--prefix", required=True, help="the package installed by the docs_install fixture")
    parser.add_argument("--work", required=True, help="a scratch folder, emptied first")
    parser.add_argument("--timeout", type=int, default=240, help="seconds per block (default 240)")
    args = parser.parse_args()

    with open(os.path.join(args.root, args.page)) as f:
        text = f.read()
    try:
        blocks = parse(text, args.page)
    except DocError as error:
        log(f"FAILED {error}")
        return 1
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    page = Page(args, blocks)
    try:
        page.run()
    except DocError as error:
        log(f"FAILED {error}")
        return 1
    log(summary(args.page, blocks, page.failures))
    if page.failures:
        log(f"(the folders the blocks ran in are kept in {args.work})")
        return 1
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
