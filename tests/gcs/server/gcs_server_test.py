#!/usr/bin/env python3
"""Checks the local GCS server against the JSON API's documented behaviour,
independently of spool: plain HTTP requests with urllib, answers compared
with what the public documentation says (status codes, headers, bodies).

Starts its own server on a free 127.0.0.1 port. Run: python3 gcs_server_test.py
"""

import base64
import hashlib
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gcs_server  # noqa: E402


class Crc32cTest(unittest.TestCase):
    def test_known_vectors(self):
        # RFC 3720 (iSCSI) appendix B.4 and the usual check value.
        for data, expected in ((b"123456789", 0xE3069283), (b"\x00" * 32, 0x8A9136AA),
                               (b"\xff" * 32, 0x62A8AB43), (bytes(range(32)), 0x46DD794E), (b"", 0)):
            crc = gcs_server.Crc32c()
            crc.update(data)
            self.assertEqual(crc.value(), expected, data)

    def test_incremental_equals_one_shot(self):
        data = os.urandom(3 * gcs_server.Crc32c.BLOCK + 12345)
        whole, parts = gcs_server.Crc32c(), gcs_server.Crc32c()
        whole.update(data)
        for start in range(0, len(data), 777777):
            parts.update(data[start:start + 777777])
        self.assertEqual(whole.value(), parts.value())


class Rs256Test(unittest.TestCase):
    def test_verifies_openssl_signatures_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            key, public, message = (os.path.join(tmp, name) for name in ("key.pem", "public.pem", "message"))
            subprocess.run(["openssl", "genrsa", "-out", key, "2048"], check=True, capture_output=True)
            subprocess.run(["openssl", "rsa", "-in", key, "-pubout", "-out", public], check=True, capture_output=True)
            with open(message, "wb") as f:
                f.write(b"header.claims")
            signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key, message], check=True,
                                       capture_output=True).stdout
            n, e = gcs_server.read_public_key(public)
            self.assertTrue(gcs_server.rs256_verify(n, e, b"header.claims", signature))
            self.assertFalse(gcs_server.rs256_verify(n, e, b"header.claimz", signature))
            broken = bytearray(signature)
            broken[10] ^= 1
            self.assertFalse(gcs_server.rs256_verify(n, e, b"header.claims", bytes(broken)))


class ServerFixture(unittest.TestCase):
    """Starts one server, with ARGS, for the test cases of a subclass."""
    ARGS = []

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        port_file = os.path.join(cls.tmp.name, "port")
        cls.process = subprocess.Popen([sys.executable, os.path.join(HERE, "gcs_server.py"), "--port", "0",
                                        "--port-file", port_file, *cls.ARGS],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while not os.path.exists(port_file):
            assert time.time() < deadline and cls.process.poll() is None, "server did not start"
            time.sleep(0.05)
        with open(port_file) as f:
            cls.port = int(f.read())
        cls.call("POST", "/storage/v1/b?project=p", json.dumps({"name": "bkt"}).encode())

    @classmethod
    def tearDownClass(cls):
        cls.process.terminate()
        cls.process.wait()
        cls.tmp.cleanup()

    @classmethod
    def call(cls, method, path, body=None, headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", cls.port, timeout=30)
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, response.headers, data


class ServerTest(ServerFixture):
    ARGS = ["--rewrite-chunk", "1000"]

    def upload(self, name, data, query=""):
        status, _, body = self.call("POST", f"/upload/storage/v1/b/bkt/o?uploadType=media&name="
                                            f"{urllib.parse.quote(name, safe='')}{query}", data)
        return status, json.loads(body)

    def test_media_upload_and_object_resource(self):
        status, resource = self.upload("dir/a b", b"123456789")
        self.assertEqual(status, 200)
        self.assertEqual(resource["kind"], "storage#object")
        self.assertEqual(resource["name"], "dir/a b")
        self.assertEqual(resource["size"], "9")  # int64/uint64 fields are JSON strings
        self.assertEqual(resource["crc32c"], "4waSgw==")
        self.assertEqual(resource["md5Hash"], base64.b64encode(hashlib.md5(b"123456789").digest()).decode())
        status, _, body = self.call("GET", "/storage/v1/b/bkt/o/dir%2Fa%20b")
        self.assertEqual(json.loads(body)["generation"], resource["generation"])

    def test_ranged_download_and_hashes(self):
        self.upload("ranged", b"0123456789")
        status, headers, body = self.call("GET", "/storage/v1/b/bkt/o/ranged?alt=media", headers={"Range": "bytes=2-4"})
        self.assertEqual((status, body, headers["Content-Range"]), (206, b"234", "bytes 2-4/10"))
        self.assertIn("crc32c=", ",".join(headers.get_all("x-goog-hash")))
        self.assertIn("md5=", ",".join(headers.get_all("x-goog-hash")))
        self.assertTrue(headers["x-goog-generation"])
        status, _, body = self.call("GET", "/storage/v1/b/bkt/o/ranged?alt=media", headers={"Range": "bytes=-3"})
        self.assertEqual((status, body), (206, b"789"))
        status, headers, body = self.call("GET", "/storage/v1/b/bkt/o/ranged?alt=media", headers={"Range": "bytes=10-"})
        self.assertEqual(status, 416)
        self.assertEqual(json.loads(body)["error"]["code"], 416)

    def test_preconditions(self):
        status, first = self.upload("pre", b"a", "&ifGenerationMatch=0")
        self.assertEqual(status, 200)
        status, error = self.upload("pre", b"b", "&ifGenerationMatch=0")
        self.assertEqual(status, 412)
        self.assertEqual(error["error"]["errors"][0]["reason"], "conditionNotMet")
        status, _ = self.upload("pre", b"c", "&ifGenerationMatch=" + first["generation"])
        self.assertEqual(status, 200)
        status, _, _ = self.call("GET", f"/storage/v1/b/bkt/o/pre?alt=media&ifGenerationMatch={first['generation']}")
        self.assertEqual(status, 412)
        status, _, _ = self.call("DELETE", "/storage/v1/b/bkt/o/pre?ifMetagenerationMatch=7")
        self.assertEqual(status, 412)

    def test_multipart_upload_checks_crc32c(self):
        def multipart(metadata, data):
            body = (b"--B\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" + json.dumps(metadata).encode() +
                    b"\r\n--B\r\nContent-Type: text/plain\r\n\r\n" + data + b"\r\n--B--\r\n")
            return self.call("POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart", body,
                             {"Content-Type": "multipart/related; boundary=B"})
        status, _, body = multipart({"name": "mp", "crc32c": "4waSgw=="}, b"123456789")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["contentType"], "text/plain")
        status, _, body = multipart({"name": "mp2", "crc32c": "AAAAAA=="}, b"123456789")
        self.assertEqual(status, 400)
        status, _, _ = self.call("GET", "/storage/v1/b/bkt/o/mp2")
        self.assertEqual(status, 404)

    def test_resumable_session(self):
        status, headers, _ = self.call("POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable",
                                       json.dumps({"name": "res"}).encode(), {"Content-Type": "application/json"})
        self.assertEqual(status, 200)
        session = urllib.parse.urlsplit(headers["Location"])
        target = session.path + "?" + session.query
        chunk = os.urandom(256 * 1024)
        status, headers, _ = self.call("PUT", target, b"", {"Content-Range": "bytes */*"})
        self.assertEqual((status, headers["Range"]), (308, None))
        status, headers, _ = self.call("PUT", target, chunk, {"Content-Range": "bytes 0-262143/*"})
        self.assertEqual((status, headers["Range"]), (308, "bytes=0-262143"))
        status, _, _ = self.call("PUT", target, b"x" * 1000, {"Content-Range": "bytes 262144-263143/*"})
        self.assertEqual(status, 400)  # not a multiple of 256 KiB and not the last chunk
        crc = gcs_server.Crc32c()
        crc.update(chunk + b"tail")
        status, _, body = self.call("PUT", target, b"tail", {"Content-Range": "bytes 262144-262147/262148",
                                                              "X-Goog-Hash": "crc32c=" + crc.base64()})
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["size"], "262148")
        status, _, _ = self.call("PUT", target, b"", {"Content-Range": "bytes */262148"})
        self.assertEqual(status, 200)  # a finished session answers with its object
        status, _, _ = self.call("DELETE", target)
        self.assertEqual(status, 499)
        status, _, _ = self.call("PUT", target, b"", {"Content-Range": "bytes */*"})
        self.assertEqual(status, 410)

    def test_resume_incomplete_as_200_for_clients_that_ask(self):
        # Google's Go client (rclone) sends X-GUploader-No-308 and reads the status from
        # X-Http-Status-Code-Override, since its HTTP stack would take a 308 for a redirect.
        status, headers, _ = self.call("POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable",
                                       json.dumps({"name": "no308"}).encode(), {"Content-Type": "application/json"})
        session = urllib.parse.urlsplit(headers["Location"])
        target = session.path + "?" + session.query
        status, headers, _ = self.call("PUT", target, b"\0" * 262144,
                                       {"Content-Range": "bytes 0-262143/*", "X-GUploader-No-308": "yes"})
        self.assertEqual((status, headers["X-Http-Status-Code-Override"], headers["Range"]),
                         (200, "308", "bytes=0-262143"))

    def test_links_are_absolute_and_media_link_downloads(self):
        _, resource = self.upload("linked", b"payload")
        base = f"http://127.0.0.1:{self.port}/"
        self.assertTrue(resource["selfLink"].startswith(base + "storage/v1/b/bkt/o/linked"), resource["selfLink"])
        self.assertTrue(resource["mediaLink"].startswith(base + "download/storage/v1/"), resource["mediaLink"])
        link = urllib.parse.urlsplit(resource["mediaLink"])
        status, _, body = self.call("GET", link.path + "?" + link.query)
        self.assertEqual((status, body), (200, b"payload"))

    def test_list_prefix_delimiter_pages_and_fields(self):
        for name in ("l/a", "l/b/1", "l/b/2", "l/c", "l/d/x", "l/e"):
            self.upload(name, b".")
        seen, token = [], ""
        while True:
            query = "prefix=l/&delimiter=/&maxResults=2&fields=items(name),prefixes,nextPageToken"
            status, _, body = self.call("GET", "/storage/v1/b/bkt/o?" + query + (f"&pageToken={token}" if token else ""))
            page = json.loads(body)
            self.assertEqual(status, 200)
            self.assertTrue(all(set(item) == {"name"} for item in page.get("items", [])))
            seen += [item["name"] for item in page.get("items", [])] + page.get("prefixes", [])
            token = page.get("nextPageToken")
            if not token:
                break
        self.assertEqual(sorted(seen), ["l/a", "l/b/", "l/c", "l/d/", "l/e"])
        status, _, body = self.call("GET", "/storage/v1/b/bkt/o?prefix=l/b")
        self.assertEqual([item["name"] for item in json.loads(body)["items"]], ["l/b/1", "l/b/2"])

    def test_rewrite_in_several_calls_and_copy(self):
        self.upload("src", b"z" * 2500)
        token, calls = "", 0
        while True:
            calls += 1
            suffix = f"?rewriteToken={token}" if token else ""
            status, _, body = self.call("POST", "/storage/v1/b/bkt/o/src/rewriteTo/b/bkt/o/dst" + suffix, b"{}")
            answer = json.loads(body)
            self.assertEqual(answer["kind"], "storage#rewriteResponse")
            if answer["done"]:
                break
            token = answer["rewriteToken"]
        self.assertEqual(calls, 3)
        self.assertEqual(answer["resource"]["size"], "2500")
        status, _, body = self.call("POST", "/storage/v1/b/bkt/o/src/copyTo/b/bkt/o/copy", b"{}")
        self.assertEqual((status, json.loads(body)["name"]), (200, "copy"))

    def test_errors_and_auth(self):
        status, _, body = self.call("GET", "/storage/v1/b/bkt/o/missing")
        error = json.loads(body)["error"]
        self.assertEqual((status, error["code"], error["errors"][0]["reason"]), (404, 404, "notFound"))
        status, _, _ = self.call("GET", "/storage/v1/b/bkt/o", headers={"Authorization": "Bearer forged"})
        self.assertEqual(status, 401)
        status, _, _ = self.call("GET", "/computeMetadata/v1/instance/service-accounts/default/token")
        self.assertEqual(status, 403)  # without Metadata-Flavor: Google
        status, _, body = self.call("GET", "/computeMetadata/v1/instance/service-accounts/default/token",
                                    headers={"Metadata-Flavor": "Google"})
        token = json.loads(body)["access_token"]
        status, _, _ = self.call("POST", "/storage/v1/b?project=p", json.dumps({"name": "private-b"}).encode(),
                                 {"Authorization": "Bearer " + token})
        self.assertEqual(status, 200)
        status, _, _ = self.call("GET", "/storage/v1/b/private-b/o")
        self.assertEqual(status, 401)
        status, _, _ = self.call("GET", "/storage/v1/b/private-b/o", headers={"Authorization": "Bearer " + token})
        self.assertEqual(status, 200)


class SessionExpiryTest(ServerFixture):
    """A server whose upload sessions live half a second."""
    ARGS = ["--session-ttl", "0.5"]

    def test_expired_session_is_gone(self):
        status, headers, _ = self.call("POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=late", b"")
        session = urllib.parse.urlsplit(headers["Location"])
        time.sleep(1)
        status, _, body = self.call("PUT", session.path + "?" + session.query, b"x",
                                    {"Content-Range": "bytes 0-0/1"})
        self.assertEqual(status, 410)
        self.assertEqual(json.loads(body)["error"]["code"], 410)


if __name__ == "__main__":
    unittest.main(verbosity=2)
