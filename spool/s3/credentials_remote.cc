// Credentials fetched over HTTP: STS AssumeRoleWithWebIdentity, the container
// credentials endpoint and EC2 instance metadata (IMDSv2).
#include <fstream>
#include <optional>
#include <sstream>

#include "spool/s3/config.h"
#include "spool/s3/credential_providers.h"
#include "spool/s3/flat_json.h"
#include "spool/s3/profile_files.h"
#include "spool/s3/sigv4.h"
#include "spool/s3/xml.h"

namespace spool::s3 {
namespace {

Result<std::string> ReadTokenFile(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) return UnauthenticatedError("cannot read the " + what + " " + path + "; check that it is mounted");
  std::stringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  return token;
}

// Credentials from the JSON that container and instance metadata endpoints send.
Result<Credentials> FromJson(const std::string& body, const std::string& source) {
  auto json = ParseFlatJson(body);
  if (!json.ok()) return json.status().WithContext(source);
  auto field = [&](const char* name) {
    auto it = json->find(name);
    return it == json->end() ? std::string() : it->second;
  };
  if (!field("Code").empty() && field("Code") != "Success") {
    return UnavailableError(source + " answered Code " + field("Code") + ": " + field("Message"));
  }
  Credentials credentials{field("AccessKeyId"), field("SecretAccessKey"), field("Token"),
                          ParseIso8601(field("Expiration"))};
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    return InvalidArgumentError(source + " answered without AccessKeyId/SecretAccessKey");
  }
  return credentials;
}

// A refusal (4xx) is an authentication error, not retried: Unauthenticated
// when the source does not accept what this machine presented, and
// PermissionDenied for a 403 (it knows the caller and refuses). A 5xx is
// Unavailable, which the caller's retry loop retries.
StatusCode CodeForCredentialFailure(int http_status) {
  if (http_status >= 500) return StatusCode::kUnavailable;
  return http_status == 403 ? StatusCode::kPermissionDenied : StatusCode::kUnauthenticated;
}

Status HttpFailure(const std::string& source, const HttpResponse& response) {
  Status status(
      CodeForCredentialFailure(response.status),
      source + " answered HTTP " + std::to_string(response.status) + ": " + response.error_body.substr(0, 200));
  return status.WithRemote(RemoteError{response.status, "", ""});
}

// One exchange with a credential endpoint: a single attempt. Retrying is the
// caller's loop's job (core/retry.h), so that a request never multiplies its
// attempts by a credential source's.
Result<HttpResponse> SendOnce(HttpTransport& http, const HttpRequest& request, std::string* body,
                              const std::string& source) {
  body->clear();
  StringSink sink(body);
  auto response = http.Send(request, &sink);
  if (!response.ok()) return response.status().WithContext(source);
  return response;
}

// The container endpoint may be plain http only on this machine or on the
// addresses ECS and EKS Pod Identity use, as the AWS SDKs require.
bool AllowedContainerEndpoint(const Endpoint& endpoint) {
  if (endpoint.scheme == "https") return true;
  for (const char* host : {"127.0.0.1", "localhost", "[::1]", "169.254.170.2", "169.254.170.23", "[fd00:ec2::23]"}) {
    if (endpoint.host == host) return true;
  }
  return false;
}

std::string FormEncode(const KeyValues& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    if (!out.empty()) out += "&";
    out += UriEncode(name, true) + "=" + UriEncode(value, true);
  }
  return out;
}

class WebIdentityProvider : public CredentialsProvider {
 public:
  WebIdentityProvider(Env env, std::string profile, std::string region, std::shared_ptr<HttpTransport> http)
      : env_(std::move(env)), profile_(std::move(profile)), region_(std::move(region)), http_(std::move(http)) {}

  Result<Credentials> Get() override {
    std::string token_file = env_.Get("AWS_WEB_IDENTITY_TOKEN_FILE").value_or("");
    std::string role_arn = env_.Get("AWS_ROLE_ARN").value_or("");
    std::string session = env_.Get("AWS_ROLE_SESSION_NAME").value_or("");
    if (token_file.empty()) {
      auto settings = LoadProfile(LocateProfileFiles(env_), ProfileName(env_, profile_));
      if (settings.ok() && *settings) {
        auto get = [&](const char* key) {
          auto it = (*settings)->find(key);
          return it == (*settings)->end() ? std::string() : it->second;
        };
        token_file = get("web_identity_token_file");
        role_arn = get("role_arn");
        session = get("role_session_name");
      }
    }
    if (token_file.empty()) return NotFoundError("AWS_WEB_IDENTITY_TOKEN_FILE is not set");
    if (role_arn.empty()) {
      return InvalidArgumentError("AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not; set both");
    }
    if (session.empty()) session = "spool-" + std::to_string(std::time(nullptr));
    // Re-read at every refresh: Kubernetes rotates the projected token.
    SPOOL_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(token_file, "web identity token file"));

    std::string endpoint = env_.Get("AWS_ENDPOINT_URL_STS").value_or("");
    if (endpoint.empty()) {
      std::string region = !region_.empty()
                               ? region_
                               : env_.Get("AWS_REGION").value_or(env_.Get("AWS_DEFAULT_REGION").value_or("us-east-1"));
      endpoint = "https://sts." + region + ".amazonaws.com";
    }
    SPOOL_ASSIGN_OR_RETURN(Endpoint parsed, ParseEndpoint(endpoint));
    const std::string form = FormEncode({{"Action", "AssumeRoleWithWebIdentity"},
                                         {"Version", "2011-06-15"},
                                         {"RoleArn", role_arn},
                                         {"RoleSessionName", session},
                                         {"WebIdentityToken", token}});
    HttpRequest request;
    request.method = "POST";
    request.url = parsed.ToString() + "/";
    request.headers.Add("Content-Type", "application/x-www-form-urlencoded");
    request.body = form;
    std::string body;
    const std::string source = "STS AssumeRoleWithWebIdentity at " + parsed.ToString() + " for " + role_arn;
    SPOOL_ASSIGN_OR_RETURN(HttpResponse response, SendOnce(*http_, request, &body, source));
    if (!response.ok()) {
      if (auto error = ParseStsError(response.error_body)) {
        // InvalidIdentityToken, ExpiredTokenException: Unauthenticated;
        // AccessDenied (the role does not trust this identity):
        // PermissionDenied. 5xx and IDPCommunicationError: retried.
        StatusCode code = error->code == "IDPCommunicationError" ? StatusCode::kUnavailable
                                                                 : CodeForCredentialFailure(response.status);
        return Status(code, source + ": " + error->code + ": " + error->message)
            .WithRemote(RemoteError{response.status, error->code, error->request_id});
      }
      return HttpFailure(source, response);
    }
    auto credentials = ParseStsCredentials(body);
    if (!credentials.ok()) return credentials.status().WithContext(source);
    return credentials;
  }
  std::string Name() const override { return "web identity (STS AssumeRoleWithWebIdentity)"; }

 private:
  Env env_;
  std::string profile_;
  std::string region_;
  std::shared_ptr<HttpTransport> http_;
};

class ContainerProvider : public CredentialsProvider {
 public:
  ContainerProvider(Env env, std::shared_ptr<HttpTransport> http) : env_(std::move(env)), http_(std::move(http)) {}

  Result<Credentials> Get() override {
    std::string url;
    if (auto relative = env_.Get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
      url = "http://169.254.170.2" + *relative;
    } else if (auto full = env_.Get("AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
      url = *full;
      const size_t path = url.find('/', url.find("://") == std::string::npos ? 0 : url.find("://") + 3);
      auto endpoint = ParseEndpoint(url.substr(0, path));
      if (!endpoint.ok() || !AllowedContainerEndpoint(*endpoint)) {
        return InvalidArgumentError("AWS_CONTAINER_CREDENTIALS_FULL_URI " + url +
                                    " must be https, or http on a loopback or the ECS/EKS link-local address");
      }
    } else {
      return NotFoundError("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/_FULL_URI are not set");
    }
    HttpRequest request;
    request.url = url;
    request.total_timeout = std::chrono::seconds(5);
    if (auto file = env_.Get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
      SPOOL_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(*file, "container authorization token file"));
      request.headers.Add("Authorization", token);
    } else if (auto token = env_.Get("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
      request.headers.Add("Authorization", *token);
    }
    const std::string source = "the container credentials endpoint " + url;
    std::string body;
    auto response = SendOnce(*http_, request, &body, source);
    if (!response.ok()) return response.status();
    if (!response->ok()) return HttpFailure(source, *response);
    return FromJson(body, source);
  }
  std::string Name() const override { return "container credentials"; }

 private:
  Env env_;
  std::shared_ptr<HttpTransport> http_;
};

class InstanceMetadataProvider : public CredentialsProvider {
 public:
  InstanceMetadataProvider(Env env, std::shared_ptr<HttpTransport> http)
      : env_(std::move(env)), http_(std::move(http)) {}

  Result<Credentials> Get() override {
    if (env_.Get("AWS_EC2_METADATA_DISABLED").value_or("") == "true") {
      return NotFoundError("AWS_EC2_METADATA_DISABLED is true");
    }
    std::string base = env_.Get("AWS_EC2_METADATA_SERVICE_ENDPOINT").value_or("http://169.254.169.254");
    while (!base.empty() && base.back() == '/') base.pop_back();
    const std::string source = "the EC2 instance metadata service at " + base;

    HttpRequest token_request = Request("PUT", base + "/latest/api/token");
    token_request.headers.Add("X-aws-ec2-metadata-token-ttl-seconds", "21600");
    std::string token;
    StringSink token_sink(&token);
    auto response = http_->Send(token_request, &token_sink);
    // No answer, or one from something else (a proxy): not on EC2.
    if (!response.ok()) return NotFoundError("no instance metadata service at " + base);
    // An IMDS that is there but busy (throttled, restarting): Unavailable,
    // which the request's retry loop retries, not "no credentials" (the
    // chain would then give up on the instance role).
    if (response->status == 429 || response->status >= 500) {
      return UnavailableError(source + " answered HTTP " + std::to_string(response->status) +
                              " to the session-token request");
    }
    if (!response->ok()) {
      return NotFoundError("no usable instance metadata service at " + base + " (token request answered HTTP " +
                           std::to_string(response->status) + ")");
    }

    std::string role;
    SPOOL_RETURN_IF_ERROR(Fetch(base + "/latest/meta-data/iam/security-credentials/", token, source, &role));
    role = role.substr(0, role.find('\n'));
    if (role.empty()) return NotFoundError("the instance has no IAM role");
    std::string body;
    SPOOL_RETURN_IF_ERROR(Fetch(base + "/latest/meta-data/iam/security-credentials/" + role, token, source, &body));
    return FromJson(body, source);
  }
  std::string Name() const override { return "EC2 instance metadata"; }

 private:
  static HttpRequest Request(const char* method, std::string url) {
    HttpRequest request;
    request.method = method;
    request.url = std::move(url);
    request.total_timeout = std::chrono::seconds(1);  // never hang where there is no IMDS
    return request;
  }

  Status Fetch(const std::string& url, const std::string& token, const std::string& source, std::string* body) {
    HttpRequest request = Request("GET", url);
    request.headers.Add("X-aws-ec2-metadata-token", token);
    StringSink sink(body);
    auto response = http_->Send(request, &sink);
    if (!response.ok()) return response.status().WithContext(source);
    if (!response->ok()) return HttpFailure(source, *response);
    return OkStatus();
  }

  Env env_;
  std::shared_ptr<HttpTransport> http_;
};

}  // namespace

std::shared_ptr<CredentialsProvider> MakeWebIdentityCredentials(Env env, std::string profile, std::string region,
                                                                std::shared_ptr<HttpTransport> http) {
  return MakeRefreshingCredentials(
      std::make_shared<WebIdentityProvider>(std::move(env), std::move(profile), std::move(region), std::move(http)));
}

std::shared_ptr<CredentialsProvider> MakeContainerCredentials(Env env, std::shared_ptr<HttpTransport> http) {
  return MakeRefreshingCredentials(std::make_shared<ContainerProvider>(std::move(env), std::move(http)));
}

std::shared_ptr<CredentialsProvider> MakeInstanceMetadataCredentials(Env env, std::shared_ptr<HttpTransport> http) {
  return MakeRefreshingCredentials(std::make_shared<InstanceMetadataProvider>(std::move(env), std::move(http)));
}

}  // namespace spool::s3
