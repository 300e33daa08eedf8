// AWS Signature Version 4: canonical request, string to sign, signing key,
// the Authorization header and presigned URLs.
//
// The functions are pure (time is an argument) and thread-safe. Paths are
// canonicalised the S3 way: the caller's path is encoded once and never
// normalised (".." and "//" are kept), as S3 requires.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spool/s3/credentials.h"

namespace spool::s3 {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// A request as SigV4 sees it.
struct SignableRequest {
  std::string method;        // "GET", "PUT", ...
  std::string encoded_path;  // already URI-encoded: "/bucket/my%20key"
  KeyValues query;           // decoded names and values, any order
  KeyValues headers;         // every header to sign, Host included
  std::string payload_hash;  // hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"
};

struct SigningScope {
  std::string region;   // "us-east-1"
  std::string service;  // "s3", "sts"
};

inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
inline constexpr std::string_view kEmptyPayloadHash =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// RFC 3986 encoding as SigV4 wants it: unreserved characters stay, the rest
// become %XY (upper-case hex); '/' stays when !encode_slash (paths).
std::string UriEncode(std::string_view text, bool encode_slash);

// "20150830T123600Z" and "20150830".
std::string AmzDate(std::chrono::system_clock::time_point time);

std::string CanonicalQueryString(const KeyValues& query);
// "host;x-amz-date": lower-case names, sorted, de-duplicated.
std::string SignedHeaderNames(const KeyValues& headers);
std::string CanonicalRequest(const SignableRequest& request);
// "20150830/us-east-1/service/aws4_request".
std::string CredentialScope(std::string_view amz_date, const SigningScope& scope);
std::string StringToSign(std::string_view amz_date, const SigningScope& scope,
                         std::string_view canonical_request);
// Hex signature of `string_to_sign` with the key derived from the secret.
std::string Signature(std::string_view secret_access_key, std::string_view amz_date,
                      const SigningScope& scope, std::string_view string_to_sign);

// Signs `request` for header authentication: adds x-amz-date (and
// x-amz-security-token for temporary credentials) to its headers, then
// returns the Authorization header value. The caller sends every header of
// `request` as is.
std::string SignHeaders(SignableRequest& request, const Credentials& credentials,
                        const SigningScope& scope, std::chrono::system_clock::time_point now);

// Presigns `request` (its headers must include Host): appends the X-Amz-*
// parameters and the signature to its query, valid for `expires`. The payload
// is UNSIGNED-PAYLOAD. Returns the canonical query string to put after '?'.
std::string Presign(SignableRequest& request, const Credentials& credentials, const SigningScope& scope,
                    std::chrono::system_clock::time_point now, std::chrono::seconds expires);

}  // namespace spool::s3
