#!/usr/bin/env python3
"""A small HTTP/1.1 server on 127.0.0.1 for the HTTP transport tests.

It listens on a free port and prints that port as the first line on stdout.
With --exit-on-stdin-eof it exits when its stdin closes, so a test that dies
never leaves it behind. With --tls-dir DIR it speaks HTTPS with a self-signed
certificate for 127.0.0.1 that it writes to DIR/cert.pem (made with the
openssl command). Standard library only.

Endpoints (any method; a request body is always read in full first):
  /echo                 JSON: method, path, query, headers, body length,
                        sha256 and crc32, whether it came chunked;
                        /echo?raw=1 answers with the request body itself
  /bytes?n=N            N bytes of deterministic content: byte i is i % 251
  /chunked?n=N&chunk=K  the same content sent chunked, K bytes per chunk
  /status?code=C&n=N    status C with a body (N bytes of the content above,
                        or "status C" when N is absent)
  /headers?Name=Value   answers 200 with the query's pairs as headers
  /continue             an interim "100 Continue" (with X-Interim), then 200
                        with X-Final
  /stall?after=N&seconds=T  announces more than N bytes, sends N, sleeps T
  /reset?after=N        announces more than N bytes, sends N, then resets the
                        connection
  /connections          how many TCP connections the server has accepted
Any endpoint with drop=1 in its query answers normally, as if the connection
stayed open, then closes it: a keep-alive connection the server dropped.
"""

import argparse
import hashlib
import http.server
import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import zlib

PATTERN = bytes(range(251))


def content(n):
    """The deterministic body: byte i is i % 251."""
    repeats = n // len(PATTERN) + 1
    return (PATTERN * repeats)[:n]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: without TCP_NODELAY every
    # response would wait for the client's delayed ACK (40 ms).
    disable_nagle_algorithm = True
    connections = 0
    connections_lock = threading.Lock()

    def setup(self):
        super().setup()
        with Handler.connections_lock:
            Handler.connections += 1

    def log_message(self, format, *args):  # quiet: tests read stdout/stderr
        pass

    # Every method goes through one dispatcher.
    def do_GET(self):
        self.dispatch()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = do_GET

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(body), True
                body += self.rfile.read(size)
                self.rfile.readline()  # CRLF after the chunk
        length = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(length), False

    def reply(self, code, body, headers=(), content_type="application/octet-stream"):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def dispatch(self):
        body, chunked = self.read_body()
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        route = {
            "/echo": self.on_echo,
            "/bytes": self.on_bytes,
            "/chunked": self.on_chunked,
            "/status": self.on_status,
            "/headers": self.on_response_headers,
            "/continue": self.on_interim_continue,
            "/stall": self.on_stall,
            "/reset": self.on_reset,
            "/connections": self.on_count_connections,
        }.get(url.path)
        if route is None:
            self.reply(404, b"no such endpoint: " + url.path.encode(), content_type="text/plain")
            return
        route(query, body, chunked)
        if query.get("drop"):
            self.close_connection = True

    def on_echo(self, query, body, chunked):
        if query.get("raw"):
            self.reply(200, body)
            return
        answer = {
            "method": self.command,
            "path": urllib.parse.urlsplit(self.path).path,
            "query": urllib.parse.urlsplit(self.path).query,
            "headers": [[name, value] for name, value in self.headers.items()],
            "body_length": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "body_crc32": zlib.crc32(body),
            "chunked": chunked,
        }
        self.reply(200, json.dumps(answer).encode(), content_type="application/json")

    def on_bytes(self, query, body, chunked):
        self.reply(200, content(int(query.get("n", "0"))))

    def on_chunked(self, query, body, chunked):
        data = content(int(query.get("n", "0")))
        step = max(1, int(query.get("chunk", "1000")))
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if self.command == "HEAD":
            return
        for start in range(0, len(data), step):
            piece = data[start:start + step]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.write(b"0\r\n\r\n")

    def on_status(self, query, body, chunked):
        code = int(query.get("code", "500"))
        if "n" in query:
            payload = content(int(query["n"]))
        else:
            payload = b"status %d" % code
        self.reply(code, payload, headers=[("X-Error-Code", "Test%d" % code)], content_type="text/plain")

    def on_response_headers(self, query, body, chunked):
        self.reply(200, b"ok", headers=list(query.items()), content_type="text/plain")

    def on_interim_continue(self, query, body, chunked):
        self.wfile.write(b"HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\n")
        self.reply(200, b"final", headers=[("X-Final", "yes")], content_type="text/plain")

    def truncated_start(self, sent):
        """Announces more bytes than will come and sends the first `sent`."""
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Length", str(sent + 1000))
        self.end_headers()
        self.wfile.write(content(sent))
        self.wfile.flush()

    def on_stall(self, query, body, chunked):
        self.truncated_start(int(query.get("after", "0")))
        time.sleep(float(query.get("seconds", "5")))

    def on_reset(self, query, body, chunked):
        self.truncated_start(int(query.get("after", "0")))
        # SO_LINGER with a zero timeout: close() sends RST instead of FIN.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    def on_count_connections(self, query, body, chunked):
        with Handler.connections_lock:
            count = Handler.connections
        self.reply(200, str(count).encode(), content_type="text/plain")


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that hangs up (stall and reset tests do) is not an error.
        if not isinstance(sys.exc_info()[1], (ConnectionError, OSError)):
            super().handle_error(request, client_address)


def serve_tls(server, directory):
    """Makes a self-signed certificate for 127.0.0.1 and wraps the socket."""
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    # The handshake happens in the handler thread, not in the accept loop.
    server.socket = context.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)


def exit_on_stdin_eof():
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="exit when stdin closes (when the test that started us ends)")
    parser.add_argument("--tls-dir", help="serve HTTPS; the certificate goes to TLS_DIR/cert.pem")
    args = parser.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    if args.tls_dir:
        serve_tls(server, args.tls_dir)
    print(server.server_address[1], flush=True)
    if args.exit_on_stdin_eof:
        threading.Thread(target=exit_on_stdin_eof, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
