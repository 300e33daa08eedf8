#!/usr/bin/env python3
"""A loopback HTTP/1.1 proxy that injects network faults, for spool's tests.

Tests start it between spool and a real server (Ceph RGW, the local GCS
server) and script it per request through a control port:

  fault_proxy.py --upstream 127.0.0.1:47480 --state-file DIR/proxy.json

binds two ports on 127.0.0.1 (never another address): the proxy port and
the control port, and writes {"port": P, "control_port": C} to the state file
once both listen. With --exit-on-stdin-eof it exits when its stdin closes, so
a test that dies never leaves it behind. With --tls-dir DIR the proxy port
speaks HTTPS with a self-signed certificate for 127.0.0.1 (made with the
openssl command) that it writes to DIR/cert.pem: a TLS front for a server that
has none.

Every client connection gets its own upstream connection; requests are parsed
(Content-Length or chunked bodies, Expect: 100-continue answered by the proxy)
so faults can hit one request of a keep-alive connection. A Location header
naming the upstream address is rewritten to name the proxy, so resumable
upload sessions (GCS) keep going through it.

Control (JSON over HTTP on the control port):
  POST   /rules   a rule or a list of rules; appended, first match wins
  DELETE /rules   removes every rule
  GET    /rules   the rules with the counts they have left
  GET    /log     one entry per request: method, target, status, fault,
                  time (time.monotonic() when it arrived: comparable
                  with other processes' on the same machine)
  DELETE /log     clears the log

A rule:
  {"kind": K, "count": 1, "skip": 0,              # hit the next `count` matching
                                                  # requests after letting `skip` pass
   "method": "PUT", "path": "regex", "query": "regex",
   "headers": {"Content-Range": "regex"},
   "final_chunk": true,                           # only a Content-Range that ends the
                                                  # object (bytes a-b/total, b+1 == total)
   ...kind's own fields}
Kinds:
  reset_response  {"bytes": N}  send the head and N body bytes, then reset (RST);
                                an empty answer is reset before its head
  reset_request   {"bytes": N}  forward the head and N request body bytes, then reset
  stall_response  {"bytes": N, "seconds": T}  send N body bytes, stall T, go on
                                (an empty answer stalls before its head)
  stall_request   {"bytes": N, "seconds": T}  stall T after N request body bytes
  flip            {"offset": N}  flip every bit of body byte N (default: the
                                middle byte): a bit error the server never saw
  truncate        {"fraction": F}  answer with the first F of the body, its
                                Content-Length cut to match; the connection stays
  status          {"status": 503, "code": "SlowDown", "flavor": "s3"|"gcs",
                   "forward": false}  answer an error document instead of the
                                server's answer; with forward the request still
                                reaches the server (it happened, the answer was lost)
  delay           {"seconds": T}  wait T before the first byte of the answer
  drop            {"forward": true}  close the connection without any answer
  throttle        {"rate": R, "burst": B, "flavor": "s3"|"gcs",
                   "scope": "prefix"|"rule"}  a standing rule
                                (count is ignored): admits at most R matching
                                requests per second per key prefix (a token
                                bucket of B tokens, default max(1, R/10), per
                                path up to its last "/", like S3's per-prefix
                                limit; with scope "rule", one bucket for every
                                request the rule matches, like one S3
                                partition under a whole dataset or checkpoint
                                before S3 splits it) and answers the rest as S3 does (503
                                SlowDown XML) or GCS (429 rateLimitExceeded
                                JSON); admitted requests go on to the other
                                rules. GET /rules shows, per rule, "admitted",
                                "throttled" and "admitted_seconds" (first to
                                last admitted request).
Python 3 standard library only.
"""

import argparse
import http.server
import json
import os
import re
import select
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

HEAD_LIMIT = 64 * 1024
COPY_BLOCK = 256 * 1024


class ProxyReset(Exception):
    """The proxy cut the connection on purpose."""


class PeerGone(Exception):
    """The client or the server closed its side."""


# --------------------------------------------------------------------------
# Rules.

class Rule:
    def __init__(self, spec):
        self.spec = spec
        self.kind = spec["kind"]
        if self.kind not in ("reset_response", "reset_request", "stall_response", "stall_request", "truncate",
                             "flip", "status", "delay", "drop", "throttle"):
            raise ValueError(f"unknown fault kind {self.kind!r}")
        self.count = int(spec.get("count", 1))
        self.skip = int(spec.get("skip", 0))
        self.method = spec.get("method")
        self.path = re.compile(spec["path"]) if "path" in spec else None
        self.query = re.compile(spec["query"]) if "query" in spec else None
        self.headers = {name.lower(): re.compile(rx) for name, rx in spec.get("headers", {}).items()}
        self.final_chunk = bool(spec.get("final_chunk", False))
        self.hits = 0
        if self.kind == "throttle":
            self.count = 1 << 62  # standing
            self.rate = float(spec["rate"])
            self.burst = float(spec.get("burst", max(1.0, self.rate / 10)))
            self.per_prefix = spec.get("scope", "prefix") == "prefix"
            flavor = spec.get("flavor", "s3")
            self.spec = dict(spec, status=429 if flavor == "gcs" else 503,
                             code="rateLimitExceeded" if flavor == "gcs" else "SlowDown")
            self.buckets = {}  # prefix -> [tokens, time of last refill]
            self.admitted = 0
            self.throttled = 0
            self.first_admitted = None
            self.last_admitted = None

    def admit(self, request, now):
        """Token bucket of the request's key prefix (throttle rules; the caller holds the state lock)."""
        prefix = request.path[:request.path.rfind("/") + 1] if self.per_prefix else ""
        tokens, last = self.buckets.get(prefix, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        if tokens >= 1:
            self.buckets[prefix] = (tokens - 1, now)
            self.admitted += 1
            self.first_admitted = self.first_admitted or now
            self.last_admitted = now
            return True
        self.buckets[prefix] = (tokens, now)
        self.throttled += 1
        return False

    def matches(self, request):
        if self.method and self.method != request.method:
            return False
        if self.path and not self.path.search(request.path):
            return False
        if self.query and not self.query.search(request.query):
            return False
        for name, rx in self.headers.items():
            if not rx.search(request.header(name) or ""):
                return False
        if self.final_chunk and not is_final_chunk(request.header("content-range")):
            return False
        return True

    def describe(self):
        if self.kind == "throttle":
            seconds = (self.last_admitted - self.first_admitted) if self.first_admitted else 0.0
            return dict(self.spec, admitted=self.admitted, throttled=self.throttled, admitted_seconds=seconds)
        return dict(self.spec, left=self.count, hits=self.hits)


def is_final_chunk(content_range):
    """True for 'bytes a-b/total' with b + 1 == total, or 'bytes */total'."""
    if not content_range:
        return False
    m = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", content_range.strip())
    if m:
        return int(m.group(2)) + 1 == int(m.group(3))
    return re.fullmatch(r"bytes \*/(\d+)", content_range.strip()) is not None


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []
        self.log = []

    def add(self, specs):
        rules = [Rule(s) for s in (specs if isinstance(specs, list) else [specs])]
        with self.lock:
            self.rules.extend(rules)
        return len(rules)

    def clear(self):
        with self.lock:
            self.rules = []

    def take(self, request):
        with self.lock:
            for rule in self.rules:
                if rule.count <= 0 or not rule.matches(request):
                    continue
                if rule.kind == "throttle":
                    if rule.admit(request, time.monotonic()):
                        continue
                    return rule
                if rule.skip > 0:
                    rule.skip -= 1
                    continue
                rule.count -= 1
                rule.hits += 1
                return rule
        return None

    def record(self, entry):
        with self.lock:
            self.log.append(entry)


# --------------------------------------------------------------------------
# HTTP framing.

class Reader:
    """Buffered reads from a socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""

    def fill(self):
        data = self.sock.recv(COPY_BLOCK)
        if not data:
            raise PeerGone("connection closed")
        self.buffer += data

    def read_head(self):
        """The head up to and including the blank line, or None at a clean close."""
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > HEAD_LIMIT:
                raise PeerGone("header too long")
            try:
                self.fill()
            except PeerGone:
                if not self.buffer:
                    return None
                raise
        end = self.buffer.index(b"\r\n\r\n") + 4
        head, self.buffer = self.buffer[:end], self.buffer[end:]
        return head

    def read_line(self):
        while b"\r\n" not in self.buffer:
            self.fill()
        end = self.buffer.index(b"\r\n") + 2
        line, self.buffer = self.buffer[:end], self.buffer[end:]
        return line

    def read_some(self, limit):
        if not self.buffer:
            self.fill()
        data, self.buffer = self.buffer[:limit], self.buffer[limit:]
        return data

    def read_exact(self, n):
        parts = []
        while n > 0:
            data = self.read_some(n)
            parts.append(data)
            n -= len(data)
        return b"".join(parts)


class Message:
    """A request or response head."""

    def __init__(self, head):
        lines = head.decode("latin-1").split("\r\n")
        self.start = lines[0]
        self.fields = []
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                self.fields.append([name.strip(), value.strip()])

    def header(self, name):
        for n, v in self.fields:
            if n.lower() == name:
                return v
        return None

    def remove(self, name):
        self.fields = [f for f in self.fields if f[0].lower() != name]

    def set(self, name, value):
        self.remove(name.lower())
        self.fields.append([name, value])

    def encode(self):
        return (self.start + "\r\n" + "".join(f"{n}: {v}\r\n" for n, v in self.fields) + "\r\n").encode("latin-1")

    def chunked(self):
        return "chunked" in (self.header("transfer-encoding") or "").lower()

    def wants_close(self):
        return (self.header("connection") or "").lower() == "close"


class Request(Message):
    def __init__(self, head):
        super().__init__(head)
        parts = self.start.split(" ")
        self.method, self.target = parts[0], parts[1]
        self.path, _, self.query = self.target.partition("?")


class Response(Message):
    def __init__(self, head):
        super().__init__(head)
        self.status = int(self.start.split(" ")[1])


def body_events(reader, message, has_body, until_close=False):
    """Yields the body of `message` as raw wire pieces (chunk framing kept)
    paired with their payload length."""
    if not has_body:
        return
    if message.chunked():
        while True:
            line = reader.read_line()
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                trailer = b""
                while True:
                    t = reader.read_line()
                    trailer += t
                    if t == b"\r\n":
                        break
                yield line + trailer, 0
                return
            yield line, 0
            left = size
            while left > 0:
                data = reader.read_some(min(left, COPY_BLOCK))
                left -= len(data)
                yield data, len(data)
            yield reader.read_exact(2), 0
        return
    length = message.header("content-length")
    if length is not None:
        left = int(length)
        while left > 0:
            data = reader.read_some(min(left, COPY_BLOCK))
            left -= len(data)
            yield data, len(data)
        return
    if until_close:
        while True:
            try:
                data = reader.read_some(COPY_BLOCK)
            except PeerGone:
                return
            yield data, len(data)


def read_body(reader, message, has_body):
    """The payload of a body (chunks decoded)."""
    out = []
    for piece, n in body_events(reader, message, has_body):
        if n:
            out.append(piece)
    return b"".join(out)


def reset(sock):
    """Closes with an RST instead of a FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


# --------------------------------------------------------------------------
# Error documents.

S3_CODES = {500: "InternalError", 502: "BadGateway", 503: "ServiceUnavailable", 504: "GatewayTimeout",
            429: "TooManyRequests", 408: "RequestTimeout"}


def error_answer(rule, request):
    status = int(rule.spec.get("status", 503))
    flavor = rule.spec.get("flavor", "s3")
    if flavor == "gcs":
        reason = rule.spec.get("code") or ("rateLimitExceeded" if status == 429 else "backendError")
        body = json.dumps({"error": {"code": status, "message": f"injected fault: {reason}",
                                     "errors": [{"reason": reason, "message": "injected fault"}]}}).encode()
        content_type = "application/json; charset=UTF-8"
    else:
        code = rule.spec.get("code") or S3_CODES.get(status, "InternalError")
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                f"<Message>injected fault</Message><Resource>{request.path}</Resource>"
                f"<RequestId>fault-proxy</RequestId></Error>").encode()
        content_type = "application/xml"
    reasons = {500: "Internal Server Error", 503: "Service Unavailable", 429: "Too Many Requests"}
    head = (f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nx-amz-request-id: fault-proxy\r\n\r\n").encode()
    return head + (body if request.method != "HEAD" else b"")


# --------------------------------------------------------------------------
# One client connection.

class Connection:
    def __init__(self, proxy, client):
        self.proxy = proxy
        self.client = client
        self.client_reader = Reader(client)
        self.upstream = None
        self.upstream_reader = None

    def run(self):
        try:
            while self.serve_one():
                pass
        except (ProxyReset, PeerGone, OSError):
            pass
        finally:
            self.close_upstream()
            try:
                self.client.close()
            except OSError:
                pass

    def connect_upstream(self):
        if self.upstream is None:
            self.upstream = socket.create_connection(self.proxy.upstream, timeout=None)
            self.upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.upstream_reader = Reader(self.upstream)

    def close_upstream(self, hard=False):
        if self.upstream is not None:
            (reset if hard else socket.socket.close)(self.upstream)
            self.upstream = None
            self.upstream_reader = None

    def cut(self):
        """Resets both sides: the fault the test asked for."""
        self.close_upstream(hard=True)
        reset(self.client)
        raise ProxyReset()

    def serve_one(self):
        head = self.client_reader.read_head()
        if head is None:
            return False
        request = Request(head)
        rule = self.proxy.state.take(request)
        kind = rule.kind if rule else None
        request_has_body = request.chunked() or int(request.header("content-length") or 0) > 0
        entry = {"method": request.method, "target": request.target, "fault": kind, "status": None,
                 "time": time.monotonic()}
        self.proxy.state.record(entry)
        if (request.header("expect") or "").lower() == "100-continue":
            request.remove("expect")
            self.client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")

        if kind == "throttle" or (kind == "status" and not rule.spec.get("forward", False)):
            read_body(self.client_reader, request, request_has_body)
            entry["status"] = int(rule.spec.get("status", 503))
            self.client.sendall(error_answer(rule, request))
            return not request.wants_close()
        if kind == "drop" and not rule.spec.get("forward", True):
            read_body(self.client_reader, request, request_has_body)
            self.cut()

        self.forward_request(request, request_has_body, rule)
        response_head = self.upstream_reader.read_head()
        if response_head is None:
            raise PeerGone("the server closed the connection")
        response = Response(response_head)
        response_has_body = request.method != "HEAD" and response.status not in (204, 304) and \
            not 100 <= response.status < 200
        entry["status"] = response.status

        if kind in ("status", "drop"):  # forwarded: the server acted, its answer is lost
            read_body(self.upstream_reader, response, response_has_body)
            if kind == "drop":
                self.cut()
            entry["status"] = int(rule.spec.get("status", 503))
            self.client.sendall(error_answer(rule, request))
            if response.wants_close():
                self.close_upstream()
            return not request.wants_close()

        self.relay_response(request, response, response_has_body, rule)
        if response.wants_close() or (not response.chunked() and response.header("content-length") is None
                                      and response_has_body):
            self.close_upstream()
            return False
        return not request.wants_close()

    def forward_request(self, request, has_body, rule):
        kind = rule.kind if rule else None
        self.connect_upstream()
        self.upstream.sendall(request.encode())
        sent = 0
        limit = int(rule.spec.get("bytes", 0)) if kind in ("reset_request", "stall_request") else None
        if limit is not None and limit == 0:
            self.request_fault(rule)
            limit = None
        for piece, n in body_events(self.client_reader, request, has_body):
            if limit is not None and n and sent + n >= limit:
                cut = limit - sent
                self.upstream.sendall(piece[:cut])
                sent += cut
                self.request_fault(rule)
                limit = None
                piece, n = piece[cut:], n - cut
            self.upstream.sendall(piece)
            sent += n
        if limit is not None:  # the body ended before the fault's point
            self.request_fault(rule)

    def request_fault(self, rule):
        if rule.kind == "reset_request":
            self.cut()
        self.stall(float(rule.spec.get("seconds", 1)))

    def stall(self, seconds):
        """Holds the exchange for `seconds`, unless the client gives up first:
        then the server's side is cut too, so the fault hits one request only
        (a server blocked on a half-sent body would otherwise stall the
        client's retries as well)."""
        deadline = time.time() + seconds
        while (left := deadline - time.time()) > 0:
            readable, _, _ = select.select([self.client], [], [], left)
            if not readable:
                continue
            try:
                data = self.client.recv(COPY_BLOCK)
            except OSError:
                data = b""
            if not data:
                self.cut()
            self.client_reader.buffer += data  # the rest of its request: kept for after the stall

    def relay_response(self, request, response, has_body, rule):
        kind = rule.kind if rule else None
        location = response.header("location")
        if location and self.proxy.upstream_text in location:
            response.set("Location", location.replace(self.proxy.upstream_text, self.proxy.own_text))
        if kind == "delay":
            time.sleep(float(rule.spec.get("seconds", 1)))
        empty = not has_body or response.header("content-length") == "0"
        if kind == "stall_response" and empty:  # nothing to stall in: stall before the head
            self.stall(float(rule.spec.get("seconds", 1)))
            kind = None
        if kind == "reset_response" and empty:  # nothing to cut: reset before the head
            self.cut()
        if kind == "flip" and has_body and not empty:
            body = bytearray(read_body(self.upstream_reader, response, has_body))
            offset = int(rule.spec.get("offset", len(body) // 2))
            if 0 <= offset < len(body):
                body[offset] ^= 0xFF
            response.remove("transfer-encoding")
            response.set("Content-Length", str(len(body)))
            self.client.sendall(response.encode() + bytes(body))
            return
        if kind == "truncate" and has_body:
            body = read_body(self.upstream_reader, response, has_body)
            keep = body[:int(len(body) * float(rule.spec.get("fraction", 0.5)))]
            response.remove("transfer-encoding")
            response.set("Content-Length", str(len(keep)))
            self.client.sendall(response.encode() + keep)
            return
        self.client.sendall(response.encode())
        limit = int(rule.spec.get("bytes", 0)) if kind in ("reset_response", "stall_response") else None
        if limit == 0:
            self.response_fault(rule)
            limit = None
        sent = 0
        for piece, n in body_events(self.upstream_reader, response, has_body, until_close=True):
            if limit is not None and n and sent + n >= limit:
                cut = limit - sent
                self.client.sendall(piece[:cut])
                sent += cut
                self.response_fault(rule)
                limit = None
                piece, n = piece[cut:], n - cut
            self.client.sendall(piece)
            sent += n
        if limit is not None:  # the body was shorter than the fault's point
            self.response_fault(rule)

    def response_fault(self, rule):
        if rule.kind == "reset_response":
            self.cut()
        self.stall(float(rule.spec.get("seconds", 1)))


# --------------------------------------------------------------------------
# Servers.

class Proxy:
    def __init__(self, upstream, state, tls=None):
        self.tls = tls
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.upstream_text = upstream
        self.state = state
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.own_text = f"127.0.0.1:{self.port}"

    def serve(self):
        while True:
            client, _ = self.listener.accept()
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self.serve_client, args=(client,), daemon=True).start()

    def serve_client(self, client):
        if self.tls:
            try:  # the handshake happens here, not in the accept loop
                client = self.tls.wrap_socket(client, server_side=True)
            except (ssl.SSLError, OSError):
                client.close()  # a client that does not trust the certificate
                return
        Connection(self, client).run()


def control_handler(state):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, document):
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/rules":
                return self.answer(404, {"error": "unknown path"})
            try:
                added = state.add(json.loads(body))
            except (ValueError, KeyError, re.error) as error:
                return self.answer(400, {"error": str(error)})
            self.answer(200, {"added": added})

        def do_DELETE(self):
            if self.path == "/rules":
                state.clear()
            elif self.path == "/log":
                with state.lock:
                    state.log = []
            else:
                return self.answer(404, {"error": "unknown path"})
            self.answer(200, {})

        def do_GET(self):
            with state.lock:
                if self.path == "/rules":
                    document = [r.describe() for r in state.rules]
                elif self.path == "/log":
                    document = list(state.log)
                else:
                    document = None
            if document is None:
                return self.answer(404, {"error": "unknown path"})
            self.answer(200, document)

    return Handler


def tls_context(directory):
    os.makedirs(directory, exist_ok=True)
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", required=True, help="host:port of the server (loopback)")
    parser.add_argument("--state-file", required=True, help="where to write the ports as JSON")
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    parser.add_argument("--tls-dir", help="serve HTTPS; the certificate goes to TLS_DIR/cert.pem")
    args = parser.parse_args()
    if not args.upstream.startswith(("127.", "localhost:")):
        sys.exit("fault_proxy: the upstream must be a loopback address")

    state = State()
    proxy = Proxy(args.upstream, state, tls_context(args.tls_dir) if args.tls_dir else None)
    control = http.server.ThreadingHTTPServer(("127.0.0.1", 0), control_handler(state))
    control.daemon_threads = True
    threading.Thread(target=control.serve_forever, daemon=True).start()
    threading.Thread(target=proxy.serve, daemon=True).start()

    temp = args.state_file + ".tmp"
    with open(temp, "w") as f:
        json.dump({"port": proxy.port, "control_port": control.server_address[1]}, f)
    os.replace(temp, args.state_file)
    if args.exit_on_stdin_eof:
        sys.stdin.read()
    else:
        threading.Event().wait()


if __name__ == "__main__":
    main()
