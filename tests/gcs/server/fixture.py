#!/usr/bin/env python3
"""Starts and stops the local GCS server for one test run (a CTest fixture).

  fixture.py start DIR   makes a throw-away RSA key pair (openssl genrsa), starts
                         gcs_server.py in the background on a free 127.0.0.1 port
                         and writes into DIR:
                           port                  the server's port
                           pid                   the server's process id
                           server.log            its output
                           service_account.json  a service-account key file whose
                                                 token_uri is the server's /token
                           authorized_user.json  an authorized_user file the
                                                 server's /token accepts
  fixture.py stop DIR    stops the process named in DIR/pid, and only that one.

The key is generated per run and never leaves DIR: it only authenticates
against this test server.
"""

import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_EMAIL = "spool-test@spool-test.iam.gserviceaccount.com"
AUTHORIZED_USER = ("spool-test-client.apps.googleusercontent.com", "spool-test-secret", "1//spool-test-refresh")


def start(directory):
    os.makedirs(directory, exist_ok=True)
    stop(directory)
    key, public = os.path.join(directory, "key.pem"), os.path.join(directory, "public.pem")
    subprocess.run(["openssl", "genrsa", "-out", key, "2048"], check=True, capture_output=True)
    subprocess.run(["openssl", "rsa", "-in", key, "-pubout", "-out", public], check=True, capture_output=True)
    port_file = os.path.join(directory, "port")
    if os.path.exists(port_file):
        os.remove(port_file)
    log = open(os.path.join(directory, "server.log"), "w")
    process = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "gcs_server.py"), "--port", "0", "--port-file", port_file,
         "--public-key", public, "--client-email", CLIENT_EMAIL,
         "--authorized-user", ":".join(AUTHORIZED_USER), "--rewrite-chunk", str(2 << 20)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    with open(os.path.join(directory, "pid"), "w") as f:
        f.write(f"{process.pid}\n")
    deadline = time.time() + 20
    while not os.path.exists(port_file):
        if process.poll() is not None or time.time() > deadline:
            sys.exit(f"the GCS test server did not start; see {directory}/server.log")
        time.sleep(0.05)
    port = int(open(port_file).read())
    with open(key) as f:
        private_key = f.read()
    write_json(os.path.join(directory, "service_account.json"), {
        "type": "service_account", "project_id": "spool-test", "private_key_id": "test-key-1",
        "private_key": private_key, "client_email": CLIENT_EMAIL, "client_id": "1234567890",
        "token_uri": f"http://127.0.0.1:{port}/token"})
    write_json(os.path.join(directory, "authorized_user.json"), {
        "type": "authorized_user", "client_id": AUTHORIZED_USER[0], "client_secret": AUTHORIZED_USER[1],
        "refresh_token": AUTHORIZED_USER[2], "token_uri": f"http://127.0.0.1:{port}/token"})
    print(f"GCS test server on http://127.0.0.1:{port} (pid {process.pid}, files in {directory})")


def write_json(path, document):
    with open(path, "w") as f:
        json.dump(document, f, indent=2)
    os.chmod(path, 0o600)


def stop(directory):
    pid_file = os.path.join(directory, "pid")
    if not os.path.exists(pid_file):
        return
    pid = int(open(pid_file).read())
    try:
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.05)
    except ProcessLookupError:
        pass
    os.remove(pid_file)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop"):
        sys.exit(__doc__)
    (start if sys.argv[1] == "start" else stop)(sys.argv[2])
