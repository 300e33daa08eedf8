"""Missing, refused or expired credentials raise PermissionError, never FileNotFoundError.

The restart pattern of training scripts,
``try: state = spool.torch.load(url) except FileNotFoundError: state = None``,
must fail when the pod's credentials are missing or expired instead of
starting training from scratch. Each test points spool at a local server on
127.0.0.1 (a refusing S3 endpoint, a refusing OAuth token endpoint) or at
nothing at all, and asks for an object that does not exist, so that a
FileNotFoundError would show.
"""

from __future__ import annotations

import http.server
import json
import threading
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest
import torch  # noqa: F401  (spool.torch needs it)

import spool
import spool.torch

_CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "GCE_METADATA_HOST",
    "STORAGE_EMULATOR_HOST",
)


class _Refusing(http.server.BaseHTTPRequestHandler):
    """Answers every request with the server's `answer` (status, body); HEAD without a body."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _refuse(self) -> None:
        length = int(self.headers.get("Content-Length", "0") or 0)
        if length:
            self.rfile.read(length)
        status, body = self.server.answer  # type: ignore[attr-defined]
        data = b"" if self.command == "HEAD" else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _refuse


@pytest.fixture
def refusing_server() -> Iterator[Callable[[int, str], str]]:
    """Starts a server on 127.0.0.1 that refuses every request; returns its URL."""
    servers = []

    def start(status: int, body: str) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
        server.answer = (status, body)  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def no_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An environment with no AWS or Google credentials anywhere and no metadata service."""
    for name in _CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    return tmp_path


def _closed_port_url() -> str:
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    port = server.server_address[1]
    server.server_close()
    return f"http://127.0.0.1:{port}"


def _expect_permission_error_everywhere(root: str) -> None:
    """stat, ls, CheckpointManager.latest() and spool.torch.load under ``root`` raise PermissionError."""
    with pytest.raises(PermissionError) as stat:
        spool.stat(f"{root}/no-such-object")
    assert not isinstance(stat.value, FileNotFoundError)
    with pytest.raises(PermissionError):
        spool.ls(f"{root}/")
    with pytest.raises(PermissionError):
        spool.CheckpointManager(f"{root}/checkpoints").latest()
    with pytest.raises(PermissionError):
        spool.torch.load(f"{root}/checkpoints/model.pt")


def _bucket() -> str:
    # A bucket of its own: stores are cached per bucket and endpoint.
    return f"creds-{uuid.uuid4().hex[:12]}"


def test_s3_without_any_credentials(no_credentials: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", _closed_port_url())  # never reached: nothing to sign with
    with pytest.raises(spool.UnauthenticatedError, match="no AWS credentials found"):
        spool.stat(f"s3://{_bucket()}/model.pt")
    _expect_permission_error_everywhere(f"s3://{_bucket()}")


@pytest.mark.parametrize("status,code", [(403, "InvalidAccessKeyId"), (403, "SignatureDoesNotMatch"),
                                         (400, "ExpiredToken")])
def test_s3_keys_the_store_refuses(no_credentials: Path, monkeypatch: pytest.MonkeyPatch,
                                   refusing_server: Callable[[int, str], str], status: int, code: str) -> None:
    url = refusing_server(status, f"<Error><Code>{code}</Code><Message>refused</Message></Error>")
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDREFUSED")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    root = f"s3://{_bucket()}"
    with pytest.raises(spool.UnauthenticatedError, match=code):
        spool.ls(f"{root}/")
    with pytest.raises(PermissionError):
        spool.CheckpointManager(f"{root}/checkpoints").latest()
    with pytest.raises(spool.UnauthenticatedError, match=code):  # HEAD: no body, the code comes from a GET
        spool.torch.load(f"{root}/checkpoints/model.pt")
    with pytest.raises(spool.UnauthenticatedError, match=code):
        spool.stat(f"{root}/no-such-object")


def test_s3_profile_keys_the_store_refuses(no_credentials: Path, monkeypatch: pytest.MonkeyPatch,
                                           refusing_server: Callable[[int, str], str]) -> None:
    url = refusing_server(403, "<Error><Code>SignatureDoesNotMatch</Code><Message>refused</Message></Error>")
    credentials = no_credentials / "credentials"
    credentials.write_text("[train]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = wrong\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_PROFILE", "train")
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    _expect_permission_error_everywhere(f"s3://{_bucket()}")


def test_s3_web_identity_token_not_mounted(no_credentials: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", _closed_port_url())
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(no_credentials / "not-mounted"))
    monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/train")
    _expect_permission_error_everywhere(f"s3://{_bucket()}")


def test_gcs_credentials_file_missing(no_credentials: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(no_credentials / "key.json"))
    with pytest.raises(spool.UnauthenticatedError, match="key.json"):
        spool.stat(f"gs://{_bucket()}/model.pt")
    _expect_permission_error_everywhere(f"gs://{_bucket()}")


def test_gcs_adc_refresh_token_revoked(no_credentials: Path, monkeypatch: pytest.MonkeyPatch,
                                       refusing_server: Callable[[int, str], str]) -> None:
    token_uri = refusing_server(400, json.dumps({"error": "invalid_grant",
                                                 "error_description": "Token has been expired or revoked."}))
    adc = no_credentials / ".config" / "gcloud" / "application_default_credentials.json"
    adc.parent.mkdir(parents=True)
    adc.write_text(json.dumps({"type": "authorized_user", "client_id": "client", "client_secret": "secret",
                               "refresh_token": "1//revoked", "token_uri": f"{token_uri}/token"}))
    # The store's endpoint is never reached: the token is refused first.
    with pytest.raises(spool.UnauthenticatedError, match="invalid_grant"):
        spool.stat(f"gs://{_bucket()}/model.pt")
    _expect_permission_error_everywhere(f"gs://{_bucket()}")
