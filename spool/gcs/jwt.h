// The signed JWT a service account exchanges for an access token (RFC 7523,
// "urn:ietf:params:oauth:grant-type:jwt-bearer"): base64url(header) "."
// base64url(claims) "." base64url(RS256 signature), signed with the key
// file's PEM private key through OpenSSL. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "spool/core/status.h"
#include "spool/gcs/resources.h"

namespace spool::gcs {

// URL-safe base64 without padding (RFC 7515 section 2).
std::string Base64UrlEncode(std::string_view data);

// The compact JWS for `claims`, signed with `private_key_pem` (PKCS#8 or
// PKCS#1 PEM, as in Google's key files). `key_id` goes to the header's
// "kid" (may be empty). InvalidArgument if the key cannot be read; the
// message never contains the key.
Result<std::string> MakeSignedJwt(const JwtClaims& claims, std::string_view private_key_pem,
                                  std::string_view key_id);

}  // namespace spool::gcs
