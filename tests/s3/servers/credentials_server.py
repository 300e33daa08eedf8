#!/usr/bin/env python3
"""A loopback stand-in for the AWS credential endpoints, for unit tests.

    credentials_server.py sts <role arn> <token file>
    credentials_server.py container <authorization token>
    credentials_server.py imds [no-role]
    credentials_server.py refuse <http status> <S3 error code>

Binds 127.0.0.1 on a free port, prints the port on the first line of stdout,
and serves until killed. Every request is checked the way the real service
checks it; a request that is wrong gets the service's error answer, so the
client under test fails visibly:

- sts: POST / with a form body, Action=AssumeRoleWithWebIdentity,
  Version=2011-06-15, the given RoleArn, a RoleSessionName, and a
  WebIdentityToken equal to the token file's content *now* (tests rotate it).
  The answer's AccessKeyId is "ASIA" + the token, and it expires in 2 minutes
  (inside the client's refresh window, so every Get refreshes).
- container: GET /credentials with the given Authorization header.
- imds: IMDSv2: PUT /latest/api/token with a TTL header, then GETs carrying
  the token: the role list, then the role's credentials. With no-role the
  role list answers 404, as on an instance with no IAM role attached.
- refuse: an S3 endpoint that refuses every request with the given status
  and S3 error document (InvalidAccessKeyId, SignatureDoesNotMatch,
  ExpiredToken, ...); HEAD answers carry no body, as S3's do.
"""
import datetime
import http.server
import json
import sys
import urllib.parse

MODE = sys.argv[1]
IMDS_TOKEN = "imds-session-token"


def expiration(minutes):
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=minutes)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(length).decode()

    def sts_error(self, code, message):
        self.answer(400 if code != "AccessDenied" else 403,
                    "<ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error>"
                    "<RequestId>req-sts</RequestId></ErrorResponse>" % (code, message), "text/xml")

    def refuse(self):
        self.body()
        status, code = int(sys.argv[2]), sys.argv[3]
        body = "" if self.command == "HEAD" else (
            "<Error><Code>%s</Code><Message>refused by the test server</Message>"
            "<RequestId>req-refuse</RequestId></Error>" % code)
        self.answer(status, body, "application/xml")

    def do_HEAD(self):
        if MODE == "refuse":
            return self.refuse()
        self.answer(404, "")

    def do_POST(self):
        if MODE == "refuse":
            return self.refuse()
        if MODE != "sts" or self.path != "/":
            return self.answer(404, "{}")
        form = urllib.parse.parse_qs(self.body())
        field = lambda name: form.get(name, [""])[0]
        with open(sys.argv[3]) as f:
            current_token = f.read().strip()
        if field("Action") != "AssumeRoleWithWebIdentity" or field("Version") != "2011-06-15":
            return self.sts_error("InvalidAction", "wrong Action or Version")
        if field("RoleArn") != sys.argv[2]:
            return self.sts_error("AccessDenied", "wrong role " + field("RoleArn"))
        if not field("RoleSessionName"):
            return self.sts_error("ValidationError", "RoleSessionName missing")
        if field("WebIdentityToken") != current_token:
            return self.sts_error("InvalidIdentityToken", "stale or wrong token")
        self.answer(200, """<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>ASIA%s</AccessKeyId>
      <SecretAccessKey>sts-secret</SecretAccessKey>
      <SessionToken>sts-session-token</SessionToken>
      <Expiration>%s</Expiration>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>req-sts</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>""" % (current_token, expiration(2)), "text/xml")

    def do_PUT(self):
        if MODE == "refuse":
            return self.refuse()
        if MODE == "imds" and self.path == "/latest/api/token":
            if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                return self.answer(400, "missing TTL", "text/plain")
            return self.answer(200, IMDS_TOKEN, "text/plain")
        self.answer(404, "{}")

    def do_GET(self):
        if MODE == "refuse":
            return self.refuse()
        if MODE == "container":
            if self.path != "/credentials":
                return self.answer(404, "{}")
            if self.headers.get("Authorization") != sys.argv[2]:
                return self.answer(401, '{"message": "wrong authorization token"}')
            return self.answer(200, json.dumps({
                "AccessKeyId": "ASIACONTAINER", "SecretAccessKey": "container-secret",
                "Token": "container-session-token", "Expiration": expiration(60)}))
        if MODE == "imds":
            if self.headers.get("X-aws-ec2-metadata-token") != IMDS_TOKEN:
                return self.answer(401, "", "text/plain")
            if self.path == "/latest/meta-data/iam/security-credentials/":
                if sys.argv[2:] == ["no-role"]:
                    return self.answer(404, "", "text/plain")
                return self.answer(200, "test-role", "text/plain")
            if self.path == "/latest/meta-data/iam/security-credentials/test-role":
                return self.answer(200, json.dumps({
                    "Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": "ASIAIMDS",
                    "SecretAccessKey": "imds-secret", "Token": "imds-session-token-2",
                    "Expiration": expiration(60)}))
        self.answer(404, "{}")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
