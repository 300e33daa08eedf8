// The sources of AWS credentials, each a CredentialsProvider (credentials.h),
// and the default chain that tries them in the AWS SDK order:
//
//   1. explicit keys (code or options)
//   2. environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
//   3. shared files: the profile (explicit, AWS_PROFILE, "default") in
//      AWS_SHARED_CREDENTIALS_FILE / ~/.aws/credentials and AWS_CONFIG_FILE /
//      ~/.aws/config: static keys, or credential_process
//   4. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (or the
//      profile's web_identity_token_file + role_arn) via STS
//      AssumeRoleWithWebIdentity (EKS IRSA); the token file is re-read at
//      every refresh
//   5. container: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI with
//      AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE) (ECS, EKS Pod Identity)
//   6. EC2 instance metadata (IMDSv2: token PUT, then role credentials), with
//      1 s timeouts so a laptop does not hang; AWS_EC2_METADATA_DISABLED=true
//      skips it
//
// A provider answers NotFound when its source is not configured; the chain
// then tries the next. Remote sources (STS, container, instance metadata)
// send one request per fetch and do not retry: a 5xx or a connection error
// is Unavailable, which the store's retry loop retries along with the request
// that needed the credentials (core/retry.h). A source that is configured but
// refuses (an STS or container 4xx, an unreadable token file) is
// Unauthenticated; so is the chain when no source is configured. Temporary credentials are cached and refreshed
// 5 minutes before they expire by one thread while the others keep using the
// still-valid ones (no stampede). All providers are thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "spool/core/env.h"
#include "spool/core/http/transport.h"
#include "spool/s3/credentials.h"

namespace spool::s3 {

std::shared_ptr<CredentialsProvider> MakeEnvironmentCredentials(Env env);
std::shared_ptr<CredentialsProvider> MakeProfileCredentials(Env env, std::string profile);

// `http` is used for STS; the STS endpoint is AWS_ENDPOINT_URL_STS, else
// https://sts.<region>.amazonaws.com.
std::shared_ptr<CredentialsProvider> MakeWebIdentityCredentials(Env env, std::string profile, std::string region,
                                                                std::shared_ptr<HttpTransport> http);
std::shared_ptr<CredentialsProvider> MakeContainerCredentials(Env env, std::shared_ptr<HttpTransport> http);
// The metadata endpoint is AWS_EC2_METADATA_SERVICE_ENDPOINT, else
// http://169.254.169.254.
std::shared_ptr<CredentialsProvider> MakeInstanceMetadataCredentials(Env env, std::shared_ptr<HttpTransport> http);

// Caches what `inner` returns and refreshes it `refresh_ahead` before its
// expiration; one refresh at a time, others keep the still-valid answer.
// `now` is injectable for tests.
std::shared_ptr<CredentialsProvider> MakeRefreshingCredentials(
    std::shared_ptr<CredentialsProvider> inner, std::chrono::seconds refresh_ahead = std::chrono::minutes(5),
    std::function<std::chrono::system_clock::time_point()> now = {});

// Tries `providers` in order; remembers the first that answers. When none is
// configured: Unauthenticated listing what was tried and how to give
// credentials; that answer stands for 30 s (no search per request), then the
// next request searches again (credentials that arrive late are found). A
// provider's error other than NotFound (an IMDS or STS that is there but
// failing: Unavailable) is returned as is and not remembered, so the
// request's retry loop retries it. `now` is injectable for tests.
std::shared_ptr<CredentialsProvider> MakeChain(std::vector<std::shared_ptr<CredentialsProvider>> providers,
                                               std::function<std::chrono::steady_clock::time_point()> now = {});

struct ChainOptions {
  std::string access_key_id;  // explicit keys, when given
  std::string secret_access_key;
  std::string session_token;
  std::string profile;
  std::string region;  // for STS
};
// The default chain above. `http` carries STS, container and IMDS requests.
std::shared_ptr<CredentialsProvider> MakeDefaultChain(const ChainOptions& options, Env env,
                                                      std::shared_ptr<HttpTransport> http);

}  // namespace spool::s3
