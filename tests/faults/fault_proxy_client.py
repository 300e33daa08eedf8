"""Runs tests/faults/fault_proxy.py in front of a server for a Python test and
scripts it through its control port (C++ tests use fault_proxy.h):

  proxy = FaultProxyProcess(script, "127.0.0.1:47480", folder)
  env["AWS_ENDPOINT_URL"] = proxy.url
  proxy.call("POST", "/rules", {"kind": "flip", "method": "GET", "count": 1})
  ...
  proxy.close()

The proxy exits when its stdin closes, so it never outlives the test.
Only the standard library.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request


class FaultProxyProcess:
    def __init__(self, script, upstream, folder):
        state = os.path.join(folder, "proxy.json")
        self.process = subprocess.Popen([sys.executable, script, "--upstream", upstream, "--state-file", state,
                                         "--exit-on-stdin-eof"], stdin=subprocess.PIPE)
        deadline = time.time() + 30
        while not os.path.exists(state):
            if self.process.poll() is not None or time.time() > deadline:
                raise RuntimeError("the fault proxy did not start")
            time.sleep(0.05)
        time.sleep(0.1)
        with open(state) as f:
            ports = json.load(f)
        self.url = f"http://127.0.0.1:{ports['port']}"
        self.control = f"http://127.0.0.1:{ports['control_port']}"

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.control + path, data=data, method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
        return json.loads(text) if text else None

    def log(self):
        return self.call("GET", "/log")

    def reset(self):
        self.call("DELETE", "/rules")
        self.call("DELETE", "/log")

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)
