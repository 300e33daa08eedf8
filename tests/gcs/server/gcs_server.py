#!/usr/bin/env python3
"""A local Google Cloud Storage server for spool's tests (standard library only).

Written from the public Cloud Storage JSON API documentation: buckets and
objects with generations and metagenerations; media, multipart and resumable
uploads (308 Resume Incomplete, or 200 with X-Http-Status-Code-Override: 308
for clients that send X-GUploader-No-308, as Google's Go client does);
alt=media downloads with Range; x-goog-hash (crc32c, md5) on downloads and
crc32c checked on uploads; preconditions (412); list with
prefix, delimiter, maxResults, pageToken and `fields`; delete; rewrite and
copy; JSON error bodies in Google's format. Beside the storage API it serves an
OAuth2 token endpoint that verifies RS256-signed JWTs against a public key and
refresh tokens of an authorized user, and the GCE metadata server's token
endpoint, so credential code is exercised for real.

Buckets created by an authenticated caller are private (every request to them
needs a token this server issued); buckets created anonymously are open, like
an emulator. A token that is presented is always checked.

Test-only control: POST /_fault with a JSON body arms a fault for the next
matching requests (see Faults), DELETE /_fault clears them: with a body
{"match": M}, only the faults whose match contains M (tests share one server
and run side by side, so each clears only what it armed).

Binds 127.0.0.1 only. `--port 0` picks a free port, written to --port-file.
"""

import argparse
import base64
import hashlib
import http.server
import json
import os
import re
import secrets
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
from datetime import datetime, timezone

# --------------------------------------------------------------------------
# CRC32C without a C extension: the CRC is the remainder of the message
# polynomial modulo the Castagnoli polynomial over GF(2). Python's big
# integers do the heavy lifting: a block is folded in half repeatedly
# (hi * x^k + lo == hi * (x^k mod P) + lo), each fold a few shifts and XORs
# at C speed, so megabytes take milliseconds.

_POLY = 0x11EDC6F41
_BIT_REVERSE = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))
_xpow_cache = {}


def _clmul(a, c):
    result, shift = 0, 0
    while c:
        if c & 1:
            result ^= a << shift
        c >>= 1
        shift += 1
    return result


def _mod_small(a):
    while a.bit_length() > 32:
        a ^= _POLY << (a.bit_length() - 33)
    return a


def _xpow(k):
    """x^k mod P."""
    cached = _xpow_cache.get(k)
    if cached is not None:
        return cached
    if k < 32:
        value = 1 << k
    else:
        half = _xpow(k // 2)
        value = _mod_small(_clmul(half, half))
        if k & 1:
            value = _mod_small(value << 1)
    _xpow_cache[k] = value
    return value


def _polymod(a):
    while a.bit_length() > 64:
        k = a.bit_length() // 2
        a = (a & ((1 << k) - 1)) ^ _clmul(a >> k, _xpow(k))
    return _mod_small(a)


class Crc32c:
    BLOCK = 1 << 20

    def __init__(self):
        self._state = 0xFFFFFFFF  # the initial value, as a polynomial

    def update(self, data):
        view = memoryview(data)
        for start in range(0, len(view), self.BLOCK):
            block = bytes(view[start:start + self.BLOCK])
            poly = int.from_bytes(block.translate(_BIT_REVERSE), "big")
            self._state = _polymod(_clmul(self._state, _xpow(8 * len(block))) ^ (poly << 32))

    def value(self):
        return int(f"{self._state:032b}"[::-1], 2) ^ 0xFFFFFFFF

    def base64(self):
        return base64.b64encode(struct.pack(">I", self.value())).decode()


def crc32c_base64(data):
    crc = Crc32c()
    crc.update(data)
    return crc.base64()


# --------------------------------------------------------------------------
# RS256 verification with pow(): PKCS#1 v1.5 with a SHA-256 DigestInfo.

_SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")


def read_public_key(pem_path):
    """(n, e) of an RSA public key, read through the openssl command."""
    text = subprocess.run(["openssl", "rsa", "-pubin", "-in", pem_path, "-noout", "-text"],
                          check=True, capture_output=True, text=True).stdout
    modulus = re.search(r"Modulus:\s*\n((?:\s+[0-9a-f:]+\n)+)", text)
    exponent = re.search(r"Exponent:\s*(\d+)", text)
    if not modulus or not exponent:
        raise ValueError(f"cannot read an RSA public key from {pem_path}")
    n = int(re.sub(r"[\s:]", "", modulus.group(1)), 16)
    return n, int(exponent.group(1))


def rs256_verify(n, e, signing_input, signature):
    k = (n.bit_length() + 7) // 8
    if len(signature) != k:
        return False
    s = int.from_bytes(signature, "big")
    if s >= n:
        return False
    em = pow(s, e, n).to_bytes(k, "big")
    digest = hashlib.sha256(signing_input).digest()
    suffix = b"\x00" + _SHA256_DIGEST_INFO + digest
    expected = b"\x00\x01" + b"\xff" * (k - 3 - len(suffix) + 1) + suffix
    return len(expected) == k and secrets.compare_digest(em, expected)


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# --------------------------------------------------------------------------
# Errors in Google's JSON format.

class ApiError(Exception):
    def __init__(self, code, reason, message, headers=None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.headers = headers or {}

    def body(self):
        return {"error": {"code": self.code, "message": self.message,
                          "errors": [{"domain": "global", "reason": self.reason,
                                      "message": self.message}]}}


def not_found(what):
    return ApiError(404, "notFound", f"No such object: {what}")


def rfc3339(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# --------------------------------------------------------------------------
# State.

class StoredObject:
    # Absolute like Google's (clients such as rclone's follow mediaLink as is); set at start.
    base_url = ""

    def __init__(self, bucket, name, data, content_type, generation, metadata=None):
        self.bucket, self.name, self.data = bucket, name, data
        self.content_type = content_type or "application/octet-stream"
        self.generation = generation
        self.metageneration = 1
        self.metadata = metadata or {}
        self.created = self.updated = time.time()
        self.crc32c = crc32c_base64(data)
        self.md5 = base64.b64encode(hashlib.md5(data).digest()).decode()

    def resource(self):
        resource = {
            "kind": "storage#object",
            "id": f"{self.bucket}/{self.name}/{self.generation}",
            "selfLink": f"{self.base_url}/storage/v1/b/{self.bucket}/o/{urllib.parse.quote(self.name, safe='')}",
            "mediaLink": (f"{self.base_url}/download/storage/v1/b/{self.bucket}/o/"
                          f"{urllib.parse.quote(self.name, safe='')}?generation={self.generation}&alt=media"),
            "name": self.name, "bucket": self.bucket,
            "generation": str(self.generation), "metageneration": str(self.metageneration),
            "contentType": self.content_type, "storageClass": "STANDARD",
            "size": str(len(self.data)), "md5Hash": self.md5, "crc32c": self.crc32c,
            "etag": base64.b64encode(f"{self.generation}/{self.metageneration}".encode()).decode(),
            "timeCreated": rfc3339(self.created), "updated": rfc3339(self.updated),
        }
        if self.metadata:
            resource["metadata"] = self.metadata
        return resource


class Bucket:
    def __init__(self, name, private):
        self.name, self.private = name, private
        self.objects = {}
        self.created = time.time()

    def resource(self):
        return {"kind": "storage#bucket", "id": self.name, "name": self.name,
                "location": "US", "storageClass": "STANDARD", "metageneration": "1",
                "timeCreated": rfc3339(self.created), "updated": rfc3339(self.created)}


class UploadSession:
    def __init__(self, bucket, name, content_type, metadata, preconditions, total, ttl):
        self.bucket, self.name, self.content_type = bucket, name, content_type
        self.metadata, self.preconditions, self.total = metadata, preconditions, total
        self.data = bytearray()
        self.crc = Crc32c()
        self.md5 = hashlib.md5()
        self.expires = time.time() + ttl
        self.cancelled = False
        self.result = None  # the object resource once finalized
        self.lock = threading.Lock()

    def append(self, data):
        self.data += data
        self.crc.update(data)
        self.md5.update(data)


class Fault:
    """One armed fault. kinds:
    status       answer `status` (default 503) instead of serving
    reset_after  read `bytes` of the request body (phase "request", the
                 default; requests with a shorter body are passed over) or
                 send `bytes` of the response body (phase "response"), then
                 reset the connection
    stall        sleep `seconds` before answering
    corrupt      flip one bit in the middle of a media download's body
    Each applies to the next `count` requests whose "METHOD path?query"
    contains `match` (and, when given, whose method is `method`)."""

    def __init__(self, spec):
        self.kind = spec["kind"]
        self.count = int(spec.get("count", 1))
        self.match = spec.get("match", "")
        self.method = spec.get("method")
        self.status = int(spec.get("status", 503))
        self.bytes = int(spec.get("bytes", 0))
        self.phase = spec.get("phase", "request")
        self.seconds = float(spec.get("seconds", 0))


class State:
    def __init__(self, args):
        self.lock = threading.Lock()
        self.buckets = {}
        self.sessions = {}
        self.tokens = {}  # token -> expiry
        self.faults = []
        self.next_generation = int(time.time() * 1e6)
        self.args = args
        self.public_key = read_public_key(args.public_key) if args.public_key else None
        self.port = 0

    def generation(self):
        with self.lock:
            self.next_generation += 1
            return self.next_generation

    def issue_token(self):
        token = "ya29.test-" + secrets.token_urlsafe(24)
        with self.lock:
            self.tokens[token] = time.time() + self.args.token_lifetime
        return token

    def token_valid(self, token):
        with self.lock:
            expiry = self.tokens.get(token)
        return expiry is not None and expiry > time.time()

    def take_fault(self, method, target, body_length):
        with self.lock:
            for fault in self.faults:
                if fault.kind == "reset_after" and fault.phase == "request" and \
                        body_length is not None and body_length <= fault.bytes:
                    continue  # the body ends before the point of the reset
                if fault.count > 0 and fault.match in f"{method} {target}" and \
                        (fault.method is None or fault.method == method):
                    fault.count -= 1
                    return fault
            self.faults = [f for f in self.faults if f.count > 0]
        return None


# --------------------------------------------------------------------------
# Request handling.

CHUNK_GRANULARITY = 256 * 1024


class ConnectionReset(Exception):
    pass


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "spool-test-gcs/1.0"

    def log_message(self, fmt, *args):
        if self.server.state.args.verbose:
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    @property
    def state(self):
        return self.server.state

    # ---- plumbing

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def do_PATCH(self):
        self.dispatch()

    def do_HEAD(self):
        self.dispatch()

    def dispatch(self):
        chunked = self.headers.get("Transfer-Encoding", "").lower() == "chunked"
        body_length = None if chunked else int(self.headers.get("Content-Length", 0) or 0)
        self.fault = self.state.take_fault(self.command, self.path, body_length)
        self.body_cache = None
        try:
            if self.fault and self.fault.kind == "stall":
                time.sleep(self.fault.seconds)
            if self.fault and self.fault.kind == "status":
                self.read_body()
                raise ApiError(self.fault.status, "backendError" if self.fault.status >= 500 else "rateLimitExceeded",
                               f"injected fault: HTTP {self.fault.status}")
            self.route()
        except ApiError as error:
            self.send_json(error.code, error.body(), error.headers)
        except ConnectionReset:
            self.reset_connection()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def reset_connection(self):
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close_connection = True
        try:
            self.connection.close()
        except OSError:
            pass

    def read_body(self):
        """The whole request body; a request-phase reset_after fault cuts it
        short and raises ConnectionReset after handing the partial body to
        `self.partial_body`."""
        if self.body_cache is not None:
            return self.body_cache
        limit = None
        if self.fault and self.fault.kind == "reset_after" and self.fault.phase == "request":
            limit = self.fault.bytes
        chunks, received = [], 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunk = self.rfile.read(size)
                self.rfile.readline()
                chunks.append(chunk)
                received += len(chunk)
                if limit is not None and received >= limit:
                    break
        else:
            remaining = int(self.headers.get("Content-Length", 0))
            if limit is not None:
                remaining = min(remaining, limit)
            while remaining > 0:
                chunk = self.rfile.read(min(remaining, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
        body = b"".join(chunks)
        if limit is not None:
            self.partial_body = body[:limit]
            raise ConnectionReset()
        self.body_cache = body
        return body

    def send_json(self, code, document, headers=None):
        body = json.dumps(document).encode() if document is not None else b""
        if code >= 400:
            # Answer before reading an unread body would leave the connection unusable.
            self.close_connection = self.body_cache is None and \
                int(self.headers.get("Content-Length", 0) or 0) > 0
        self.send_response(code)
        if document is not None:
            self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-GUploader-UploadID", "test-" + secrets.token_hex(6))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_media(self, code, body, headers):
        self.send_response(code)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if self.fault and self.fault.kind == "corrupt" and body:
            damaged = bytearray(body)
            damaged[len(damaged) // 2] ^= 0x01
            body = bytes(damaged)
        if self.fault and self.fault.kind == "reset_after" and self.fault.phase == "response":
            self.wfile.write(body[:self.fault.bytes])
            self.wfile.flush()
            raise ConnectionReset()
        view = memoryview(body)
        for start in range(0, len(view), 1 << 20):
            self.wfile.write(view[start:start + (1 << 20)])

    # ---- routing

    def route(self):
        url = urllib.parse.urlsplit(self.path)
        self.query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")[1:]]
        path = url.path
        if path == "/_fault":
            return self.handle_fault()
        if path == "/token":
            return self.handle_token()
        if path.startswith("/computeMetadata/v1/"):
            return self.handle_metadata(path)
        if parts[:3] == ["upload", "storage", "v1"] and len(parts) == 6 and parts[5] == "o":
            return self.handle_upload(parts[4])
        if parts[:3] == ["download", "storage", "v1"] and len(parts) == 7:
            return self.handle_object(parts[4], parts[6])
        if parts[:2] != ["storage", "v1"] or len(parts) < 3 or parts[2] != "b":
            raise ApiError(404, "notFound", f"Not Found: {url.path}")
        if len(parts) == 3:
            return self.handle_buckets()
        bucket = parts[3]
        if len(parts) == 4:
            return self.handle_bucket(bucket)
        if len(parts) == 5 and parts[4] == "o":
            if self.command == "GET":
                return self.list_objects(bucket)
            raise ApiError(405, "methodNotAllowed", "objects.insert is served under /upload/storage/v1")
        if len(parts) == 6 and parts[4] == "o":
            return self.handle_object(bucket, parts[5])
        if len(parts) == 11 and parts[4] == "o" and parts[6] in ("rewriteTo", "copyTo") \
                and parts[7] == "b" and parts[9] == "o":
            return self.rewrite(bucket, parts[5], parts[8], parts[10], parts[6] == "copyTo")
        raise ApiError(404, "notFound", f"Not Found: {url.path}")

    # ---- auth

    def caller_token(self):
        """The bearer token presented, checked; None when anonymous."""
        header = self.headers.get("Authorization")
        if header is None:
            return None
        if not header.startswith("Bearer ") or not self.state.token_valid(header[7:]):
            raise ApiError(401, "authError", "Invalid Credentials",
                           {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/", error="invalid_token"'})
        return header[7:]

    def bucket(self, name, token=None):
        with self.state.lock:
            bucket = self.state.buckets.get(name)
        if bucket is None:
            raise ApiError(404, "notFound", "The specified bucket does not exist.")
        if bucket.private and token is None:
            raise ApiError(401, "required",
                           "Anonymous caller does not have storage.objects.get access to the Google Cloud Storage object.",
                           {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/"'})
        return bucket

    # ---- test-only control

    def handle_fault(self):
        if self.command == "DELETE":
            scope = json.loads(self.read_body() or b"{}").get("match", "")
            with self.state.lock:
                self.state.faults = [f for f in self.state.faults if scope not in f.match]
            return self.send_json(204, None)
        spec = json.loads(self.read_body() or b"{}")
        fault = Fault(spec)
        if fault.kind not in ("status", "reset_after", "stall", "corrupt"):
            raise ApiError(400, "invalid", f"unknown fault kind {fault.kind!r}")
        with self.state.lock:
            self.state.faults.append(fault)
        self.send_json(200, {"armed": spec})

    # ---- OAuth2 and the metadata server

    def oauth_error(self, error, description):
        self.send_json(400, {"error": error, "error_description": description})

    def handle_token(self):
        if self.command != "POST":
            raise ApiError(405, "methodNotAllowed", "POST only")
        if not self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            return self.oauth_error("invalid_request", "expected application/x-www-form-urlencoded")
        form = {k: v[-1] for k, v in urllib.parse.parse_qs(self.read_body().decode()).items()}
        grant = form.get("grant_type")
        if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            problem = self.check_assertion(form.get("assertion", ""))
        elif grant == "refresh_token":
            problem = self.check_refresh(form)
        else:
            return self.oauth_error("unsupported_grant_type", f"grant_type {grant!r}")
        if problem:
            return self.oauth_error("invalid_grant", problem)
        self.send_json(200, {"access_token": self.state.issue_token(),
                             "expires_in": self.state.args.token_lifetime, "token_type": "Bearer"})

    def check_assertion(self, assertion):
        if self.state.public_key is None:
            return "this server has no public key to verify assertions"
        pieces = assertion.split(".")
        if len(pieces) != 3:
            return "the assertion is not a JWT"
        try:
            header = json.loads(b64url_decode(pieces[0]))
            claims = json.loads(b64url_decode(pieces[1]))
            signature = b64url_decode(pieces[2])
        except ValueError:
            return "the assertion is not valid base64url JSON"
        if header.get("alg") != "RS256" or header.get("typ", "JWT") != "JWT":
            return f"unsupported JWT header {header}"
        n, e = self.state.public_key
        if not rs256_verify(n, e, f"{pieces[0]}.{pieces[1]}".encode(), signature):
            return "Invalid JWT Signature."
        now = time.time()
        audience = f"http://127.0.0.1:{self.state.port}/token"
        if claims.get("aud") != audience:
            return f"Invalid JWT: aud must be {audience}"
        if not isinstance(claims.get("iat"), int) or not isinstance(claims.get("exp"), int):
            return "Invalid JWT: iat and exp must be integers"
        if claims["iat"] > now + 300 or claims["exp"] < now or claims["exp"] - claims["iat"] > 3600:
            return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
        if not claims.get("iss") or not claims.get("scope"):
            return "Invalid JWT: iss and scope are required"
        if self.state.args.client_email and claims["iss"] != self.state.args.client_email:
            return f"Invalid JWT: unknown issuer {claims['iss']}"
        return None

    def check_refresh(self, form):
        expected = self.state.args.authorized_user
        if not expected:
            return "this server has no authorized user"
        client_id, client_secret, refresh_token = expected.split(":", 2)
        if (form.get("client_id"), form.get("client_secret"), form.get("refresh_token")) != \
                (client_id, client_secret, refresh_token):
            return "Bad Request: unknown client or refresh token"
        return None

    def handle_metadata(self, path):
        if self.headers.get("Metadata-Flavor") != "Google":
            self.send_json(403, None)
            return
        if path == "/computeMetadata/v1/instance/service-accounts/default/token":
            return self.send_json(200, {"access_token": self.state.issue_token(),
                                        "expires_in": self.state.args.token_lifetime,
                                        "token_type": "Bearer"}, {"Metadata-Flavor": "Google"})
        if path == "/computeMetadata/v1/instance/service-accounts/default/email":
            body = b"default@spool-test.iam.gserviceaccount.com"
            return self.send_media(200, body, [("Content-Type", "application/text"), ("Metadata-Flavor", "Google")])
        if path == "/computeMetadata/v1/project/project-id":
            return self.send_media(200, b"spool-test", [("Content-Type", "application/text"),
                                                         ("Metadata-Flavor", "Google")])
        raise ApiError(404, "notFound", f"no metadata at {path}")

    # ---- buckets

    def handle_buckets(self):
        token = self.caller_token()
        if self.command == "POST":
            document = json.loads(self.read_body() or b"{}")
            name = document.get("name", "")
            if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]", name):
                raise ApiError(400, "invalid", f"Invalid bucket name: '{name}'")
            with self.state.lock:
                if name in self.state.buckets:
                    raise ApiError(409, "conflict",
                                   "Your previous request to create the named bucket succeeded and you already own it.")
                bucket = self.state.buckets[name] = Bucket(name, private=token is not None)
            return self.send_json(200, bucket.resource())
        if self.command == "GET":
            with self.state.lock:
                items = [b.resource() for b in sorted(self.state.buckets.values(), key=lambda b: b.name)
                         if token is not None or not b.private]
            return self.send_json(200, {"kind": "storage#buckets", "items": items})
        raise ApiError(405, "methodNotAllowed", "unsupported method")

    def handle_bucket(self, name):
        bucket = self.bucket(name, self.caller_token())
        if self.command == "GET":
            return self.send_json(200, bucket.resource())
        if self.command == "DELETE":
            with self.state.lock:
                if bucket.objects:
                    raise ApiError(409, "conflict", "The bucket you tried to delete is not empty.")
                del self.state.buckets[name]
            return self.send_json(204, None)
        raise ApiError(405, "methodNotAllowed", "unsupported method")

    # ---- preconditions

    def check_preconditions(self, current, query):
        """Raises 412 unless `current` (a StoredObject or None) satisfies the
        if{,Source}{Generation,Metageneration}{,Not}Match parameters."""
        def param(name):
            value = query.get(name)
            return None if value is None else int(value)
        generation = current.generation if current else 0
        if (value := param("ifGenerationMatch")) is not None and value != generation:
            raise ApiError(412, "conditionNotMet", "At least one of the pre-conditions you specified did not hold.")
        if (value := param("ifGenerationNotMatch")) is not None and value == generation:
            raise ApiError(304 if self.command == "GET" else 412, "conditionNotMet",
                           "At least one of the pre-conditions you specified did not hold.")
        for name, match in (("ifMetagenerationMatch", True), ("ifMetagenerationNotMatch", False)):
            value = param(name)
            if value is None:
                continue
            if current is None:
                raise ApiError(412, "conditionNotMet", "At least one of the pre-conditions you specified did not hold.")
            if (current.metageneration == value) != match:
                raise ApiError(412, "conditionNotMet", "At least one of the pre-conditions you specified did not hold.")

    # ---- objects

    def lookup(self, bucket, name, generation=None):
        with self.state.lock:
            current = bucket.objects.get(name)
        if current is None or (generation is not None and int(generation) != current.generation):
            raise not_found(f"{bucket.name}/{name}")
        return current

    def handle_object(self, bucket_name, name):
        bucket = self.bucket(bucket_name, self.caller_token())
        if self.command in ("GET", "HEAD"):
            with self.state.lock:
                current = bucket.objects.get(name)
            if current is None or ("generation" in self.query and int(self.query["generation"]) != current.generation):
                raise not_found(f"{bucket_name}/{name}")
            self.check_preconditions(current, self.query)
            if self.query.get("alt") == "media":
                return self.download(current)
            return self.send_json(200, self.partial(current.resource(), self.query.get("fields")))
        if self.command == "DELETE":
            with self.state.lock:
                current = bucket.objects.get(name)
                if current is None or ("generation" in self.query and
                                       int(self.query["generation"]) != current.generation):
                    raise not_found(f"{bucket_name}/{name}")
                self.check_preconditions(current, self.query)
                del bucket.objects[name]
            return self.send_json(204, None)
        if self.command == "PATCH":
            patch = json.loads(self.read_body() or b"{}")
            with self.state.lock:
                current = bucket.objects.get(name)
                if current is None:
                    raise not_found(f"{bucket_name}/{name}")
                self.check_preconditions(current, self.query)
                if "contentType" in patch:
                    current.content_type = patch["contentType"]
                if "metadata" in patch:
                    current.metadata = {k: v for k, v in {**current.metadata, **(patch["metadata"] or {})}.items()
                                        if v is not None}
                current.metageneration += 1
                current.updated = time.time()
                resource = current.resource()
            return self.send_json(200, resource)
        raise ApiError(405, "methodNotAllowed", "unsupported method")

    def download(self, current):
        size = len(current.data)
        headers = [("Content-Type", current.content_type),
                   ("x-goog-generation", str(current.generation)),
                   ("x-goog-metageneration", str(current.metageneration)),
                   ("x-goog-stored-content-length", str(size)),
                   ("x-goog-hash", f"crc32c={current.crc32c}"),
                   ("x-goog-hash", f"md5={current.md5}"),
                   ("ETag", f'"{current.md5}"'), ("Accept-Ranges", "bytes")]
        spec = self.headers.get("Range")
        if not spec:
            return self.send_media(200, current.data, headers)
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", spec.strip())
        if not match or match.group(1) == match.group(2) == "":
            return self.send_media(200, current.data, headers)  # an unparseable Range is ignored (RFC 9110)
        if match.group(1) == "":
            first = max(0, size - int(match.group(2)))
            last = size - 1
        else:
            first = int(match.group(1))
            last = min(int(match.group(2)), size - 1) if match.group(2) else size - 1
        if first >= size or last < first:
            raise ApiError(416, "requestedRangeNotSatisfiable", "Request range not satisfiable",
                           {"Content-Range": f"bytes */{size}"})
        headers.append(("Content-Range", f"bytes {first}-{last}/{size}"))
        self.send_media(206, current.data[first:last + 1], headers)

    def partial(self, resource, fields):
        """A partial response for `fields` such as "items(name,size),nextPageToken"."""
        if not fields:
            return resource
        return select_fields(resource, parse_fields(fields))

    def list_objects(self, bucket_name):
        bucket = self.bucket(bucket_name, self.caller_token())
        prefix = self.query.get("prefix", "")
        delimiter = self.query.get("delimiter", "")
        max_results = int(self.query.get("maxResults", 1000) or 1000)
        max_results = max(1, min(max_results, 1000))
        start_after = ""
        if self.query.get("pageToken"):
            try:
                start_after = base64.urlsafe_b64decode(self.query["pageToken"]).decode()
            except ValueError:
                raise ApiError(400, "invalid", "Invalid pageToken")
        start_offset = self.query.get("startOffset", "")
        end_offset = self.query.get("endOffset")
        with self.state.lock:
            names = sorted(bucket.objects)
            snapshot = dict(bucket.objects)
        items, prefixes, last_entry, more = [], [], None, False
        for name in names:
            if not name.startswith(prefix) or name < start_offset or (end_offset and name >= end_offset):
                continue
            entry = name
            if delimiter:
                cut = name.find(delimiter, len(prefix))
                if cut >= 0:
                    entry = name[:cut + len(delimiter)]
            if entry <= start_after or entry == last_entry:
                continue  # on an earlier page, or a further key under the same common prefix
            if len(items) + len(prefixes) == max_results:
                more = True
                break
            last_entry = entry
            if entry == name:
                items.append(snapshot[name].resource())
            else:
                prefixes.append(entry)
        document = {"kind": "storage#objects"}
        if more:
            document["nextPageToken"] = base64.urlsafe_b64encode(last_entry.encode()).decode()
        if items:
            document["items"] = items
        if prefixes:
            document["prefixes"] = prefixes
        self.send_json(200, self.partial(document, self.query.get("fields")))

    def rewrite(self, src_bucket_name, src_name, dst_bucket_name, dst_name, is_copy):
        token = self.caller_token()
        src_bucket = self.bucket(src_bucket_name, token)
        dst_bucket = self.bucket(dst_bucket_name, token)
        if self.command != "POST":
            raise ApiError(405, "methodNotAllowed", "POST only")
        body = json.loads(self.read_body() or b"{}")
        source = self.lookup(src_bucket, src_name, self.query.get("sourceGeneration"))
        self.check_source_preconditions(source)
        size = len(source.data)
        per_call = int(self.query.get("maxBytesRewrittenPerCall", 0) or 0) or self.state.args.rewrite_chunk
        done_before = 0
        if self.query.get("rewriteToken"):
            try:
                done_before = int(base64.urlsafe_b64decode(self.query["rewriteToken"]).decode().split(":")[1])
            except (ValueError, IndexError):
                raise ApiError(400, "invalid", "Invalid rewriteToken")
        progress = size if is_copy else min(size, done_before + per_call)
        if progress < size:
            token_text = f"{source.generation}:{progress}"
            return self.send_json(200, {"kind": "storage#rewriteResponse", "totalBytesRewritten": str(progress),
                                        "objectSize": str(size), "done": False,
                                        "rewriteToken": base64.urlsafe_b64encode(token_text.encode()).decode()})
        with self.state.lock:
            self.check_preconditions(dst_bucket.objects.get(dst_name), self.query)
            target = StoredObject(dst_bucket_name, dst_name, source.data,
                                  body.get("contentType", source.content_type), self.state_generation_locked(),
                                  dict(body.get("metadata") or source.metadata))
            dst_bucket.objects[dst_name] = target
            resource = target.resource()
        if is_copy:
            return self.send_json(200, resource)
        self.send_json(200, {"kind": "storage#rewriteResponse", "totalBytesRewritten": str(size),
                             "objectSize": str(size), "done": True, "resource": resource})

    def check_source_preconditions(self, source):
        renamed = {}
        for name in ("GenerationMatch", "GenerationNotMatch", "MetagenerationMatch", "MetagenerationNotMatch"):
            if f"ifSource{name}" in self.query:
                renamed[f"if{name}"] = self.query[f"ifSource{name}"]
        self.check_preconditions(source, renamed)

    def state_generation_locked(self):
        self.state.next_generation += 1
        return self.state.next_generation

    # ---- uploads

    def commit(self, bucket, name, data, content_type, metadata, query, crc_claims):
        """Stores a finished upload after checking checksums and preconditions."""
        return self.commit_checked(bucket, name, bytes(data), content_type, metadata, query, crc_claims,
                                   crc32c_base64(data))

    def commit_checked(self, bucket, name, data, content_type, metadata, query, crc_claims, actual_crc,
                       actual_md5=None):
        actual_md5 = actual_md5 or base64.b64encode(hashlib.md5(data).digest()).decode()
        for kind, claimed in crc_claims:
            actual = actual_crc if kind == "crc32c" else actual_md5
            if claimed != actual:
                label = "CRC32C" if kind == "crc32c" else "MD5"
                raise ApiError(400, "invalid",
                               f"Provided {label} \"{claimed}\" doesn't match calculated {label} \"{actual}\".")
        with self.state.lock:
            self.check_preconditions(bucket.objects.get(name), query)
            stored = StoredObject(bucket.name, name, b"", content_type, self.state_generation_locked(), metadata)
            stored.data, stored.crc32c, stored.md5 = data, actual_crc, actual_md5
            bucket.objects[name] = stored
            return stored.resource()

    def hash_claims(self, metadata):
        claims = []
        for key, kind in (("crc32c", "crc32c"), ("md5Hash", "md5")):
            if metadata.get(key):
                claims.append((kind, metadata[key]))
        for header in self.headers.get_all("X-Goog-Hash") or []:
            for item in header.split(","):
                kind, _, value = item.strip().partition("=")
                if kind in ("crc32c", "md5") and value:
                    claims.append((kind, value))
        return claims

    def handle_upload(self, bucket_name):
        bucket = self.bucket(bucket_name, self.caller_token())
        if "upload_id" in self.query:
            return self.resumable_request(bucket)
        if self.command != "POST":
            raise ApiError(405, "methodNotAllowed", "uploads start with POST")
        kind = self.query.get("uploadType")
        if kind == "media":
            name = self.query.get("name")
            if not name:
                raise ApiError(400, "required", "Required parameter: name")
            data = self.read_body()
            resource = self.commit(bucket, name, data, self.headers.get("Content-Type"), {}, self.query,
                                   self.hash_claims({}))
            return self.send_json(200, resource)
        if kind == "multipart":
            metadata, data, media_type = self.parse_multipart()
            name = metadata.get("name") or self.query.get("name")
            if not name:
                raise ApiError(400, "required", "Required parameter: name")
            resource = self.commit(bucket, name, data, metadata.get("contentType") or media_type,
                                   metadata.get("metadata"), self.query, self.hash_claims(metadata))
            return self.send_json(200, resource)
        if kind == "resumable":
            body = self.read_body()
            metadata = json.loads(body) if body.strip() else {}
            name = metadata.get("name") or self.query.get("name")
            if not name:
                raise ApiError(400, "required", "Required parameter: name")
            total = self.headers.get("X-Upload-Content-Length")
            session = UploadSession(bucket.name, name,
                                    metadata.get("contentType") or self.headers.get("X-Upload-Content-Type"),
                                    metadata, dict(self.query), int(total) if total else None,
                                    self.state.args.session_ttl)
            upload_id = secrets.token_urlsafe(18)
            with self.state.lock:
                self.state.sessions[upload_id] = session
            location = (f"http://127.0.0.1:{self.state.port}/upload/storage/v1/b/{bucket.name}/o"
                        f"?uploadType=resumable&name={urllib.parse.quote(name, safe='')}&upload_id={upload_id}")
            return self.send_json(200, None, {"Location": location})
        raise ApiError(400, "invalid", f"Invalid uploadType {kind!r}")

    def parse_multipart(self):
        content_type = self.headers.get("Content-Type", "")
        match = re.search(r'boundary="?([^";]+)"?', content_type)
        if not content_type.startswith("multipart/related") or not match:
            raise ApiError(400, "invalid", "multipart uploads need Content-Type: multipart/related; boundary=...")
        delimiter = b"--" + match.group(1).encode()
        body = self.read_body()
        pieces = body.split(delimiter)
        # pieces: preamble, part1, part2, "--" epilogue
        parts = []
        for piece in pieces[1:]:
            if piece.startswith(b"--"):
                break
            piece = piece[2:] if piece.startswith(b"\r\n") else piece
            head, _, content = piece.partition(b"\r\n\r\n")
            if content.endswith(b"\r\n"):
                content = content[:-2]
            headers = {}
            for line in head.decode("latin-1").split("\r\n"):
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
            parts.append((headers, content))
        if len(parts) != 2:
            raise ApiError(400, "invalid", f"multipart body must have 2 parts, found {len(parts)}")
        try:
            metadata = json.loads(parts[0][1] or b"{}")
        except ValueError:
            raise ApiError(400, "parseError", "Parse Error: the metadata part is not JSON")
        return metadata, parts[1][1], parts[1][0].get("content-type")

    def resumable_request(self, bucket):
        upload_id = self.query["upload_id"]
        with self.state.lock:
            session = self.state.sessions.get(upload_id)
        if session is None or session.bucket != bucket.name:
            raise ApiError(404, "notFound", "No such upload session.")
        if session.cancelled or time.time() > session.expires:
            raise ApiError(410, "gone", "The upload session has expired or was cancelled; start a new upload.")
        if self.command == "DELETE":
            session.cancelled = True
            session.data = bytearray()  # a cancelled session's bytes are never needed again
            return self.send_json(499, None)
        if self.command not in ("PUT", "POST"):
            raise ApiError(405, "methodNotAllowed", "resumable sessions take PUT")
        with session.lock:
            return self.resumable_put(bucket, session)

    def resumable_put(self, bucket, session):
        if session.result is not None:
            self.read_body()
            return self.send_json(200, session.result)
        spec = self.headers.get("Content-Range", "").strip()
        query_match = re.fullmatch(r"bytes \*/(\d+|\*)", spec)
        chunk_match = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+|\*)", spec)
        if query_match:
            self.read_body()
            total = query_match.group(1)
            if total != "*":
                session.total = int(total)
            if session.total is not None and len(session.data) == session.total and total != "*":
                return self.finalize(bucket, session)
            return self.send_308(session)
        if chunk_match:
            first, last = int(chunk_match.group(1)), int(chunk_match.group(2))
            total = None if chunk_match.group(3) == "*" else int(chunk_match.group(3))
            if last < first:
                raise ApiError(400, "invalid", f"Invalid Content-Range: {spec!r}")
        elif spec == "":  # the whole object in this one request
            first, total = 0, int(self.headers.get("Content-Length", 0) or 0)
        else:
            raise ApiError(400, "invalid", f"Invalid Content-Range: {spec!r}")
        if first > len(session.data):
            self.read_body()
            raise ApiError(400, "invalid",
                           f"Content-Range starts at {first} but the session has {len(session.data)} bytes")
        try:
            data = self.read_body()
        except ConnectionReset:
            # A dropped chunk: keep what arrived, in whole 256 KiB units.
            self.keep(session, first, self.partial_body, final=False)
            raise
        if total is not None:
            session.total = total
        final = session.total is not None and first + len(data) == session.total
        if not final and len(data) % CHUNK_GRANULARITY:
            raise ApiError(400, "invalid", "Upload chunks other than the last must be a multiple of 256 KiB.")
        self.keep(session, first, data, final)
        if final:
            return self.finalize(bucket, session)
        return self.send_308(session)

    @staticmethod
    def keep(session, first, data, final):
        skip = len(session.data) - first  # bytes the session already has
        data = data[skip:] if skip > 0 else data
        if not final:
            data = data[:len(data) - len(data) % CHUNK_GRANULARITY]
        session.append(data)

    def send_308(self, session):
        headers = {}
        if session.data:
            headers["Range"] = f"bytes=0-{len(session.data) - 1}"
        if self.headers.get("X-GUploader-No-308", "").lower() == "yes":
            # Google's Go client cannot take a 308 (its HTTP stack reads it as a redirect): it
            # asks for this header, and the service answers 200 with the real status beside it.
            headers["X-Http-Status-Code-Override"] = "308"
            return self.send_json(200, None, headers)
        self.send_json(308, None, headers)

    def finalize(self, bucket, session):
        metadata = session.metadata
        actual_crc = session.crc.base64()
        actual_md5 = base64.b64encode(session.md5.digest()).decode()
        resource = self.commit_checked(bucket, session.name, bytes(session.data), session.content_type,
                                       metadata.get("metadata"), session.preconditions, self.hash_claims(metadata),
                                       actual_crc, actual_md5)
        session.result = resource
        session.data = bytearray()
        self.send_json(200, resource)


# --------------------------------------------------------------------------
# Partial responses: fields=a,b(c,d),e/f

def parse_fields(text):
    fields, i = {}, 0

    def parse_list(i):
        result = {}
        name = ""
        while i < len(text):
            ch = text[i]
            if ch == ",":
                if name:
                    result.setdefault(name.strip(), None)
                name = ""
                i += 1
            elif ch == "(":
                sub, i = parse_list(i + 1)
                result[name.strip()] = sub
                name = ""
            elif ch == ")":
                if name:
                    result.setdefault(name.strip(), None)
                return result, i + 1
            else:
                name += ch
                i += 1
        if name:
            result.setdefault(name.strip(), None)
        return result, i

    fields, _ = parse_list(0)
    expanded = {}
    for key, sub in fields.items():  # a/b is a(b)
        head, _, tail = key.partition("/")
        expanded[head] = {tail: sub} if tail else sub
    return expanded


def select_fields(document, fields):
    if fields is None:
        return document
    if isinstance(document, list):
        return [select_fields(item, fields) for item in document]
    if not isinstance(document, dict):
        return document
    return {key: select_fields(document[key], sub) for key, sub in fields.items() if key in document}


# --------------------------------------------------------------------------

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="where to write the port chosen")
    parser.add_argument("--public-key", help="PEM RSA public key that verifies service-account JWTs")
    parser.add_argument("--client-email", help="the only JWT issuer accepted (default: any)")
    parser.add_argument("--authorized-user", help="CLIENT_ID:CLIENT_SECRET:REFRESH_TOKEN accepted by /token")
    parser.add_argument("--token-lifetime", type=int, default=3600, help="seconds an access token lives")
    parser.add_argument("--session-ttl", type=float, default=7 * 24 * 3600, help="seconds a resumable session lives")
    parser.add_argument("--rewrite-chunk", type=int, default=8 << 20, help="bytes rewritten per rewrite call")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    server = Server(("127.0.0.1", args.port), Handler)
    server.state = State(args)
    server.state.port = server.server_address[1]
    StoredObject.base_url = f"http://127.0.0.1:{server.state.port}"
    if args.port_file:
        temporary = args.port_file + ".tmp"
        with open(temporary, "w") as f:
            f.write(f"{server.state.port}\n")
        os.replace(temporary, args.port_file)
    print(f"gcs test server on http://127.0.0.1:{server.state.port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
