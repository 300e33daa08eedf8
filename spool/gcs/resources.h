// The Cloud Storage resources spool works with, as plain values (what the
// JSON API documents parse into; see json.h). Copyable, no invariants.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace spool::gcs {

// objects resource: https://cloud.google.com/storage/docs/json_api/v1/objects
struct ObjectMetadata {
  std::string bucket;
  std::string name;
  int64_t generation = 0;
  int64_t metageneration = 0;
  uint64_t size = 0;
  std::string content_type;
  std::optional<uint32_t> crc32c;
  std::string md5_base64;
  std::chrono::system_clock::time_point updated{};
  std::map<std::string, std::string> metadata;
};

// One page of objects.list.
struct ObjectListPage {
  std::vector<ObjectMetadata> items;
  std::vector<std::string> prefixes;
  std::string next_page_token;
};

// The answer to one objects.rewrite call.
struct RewriteProgress {
  bool done = false;
  uint64_t total_bytes_rewritten = 0;
  uint64_t object_size = 0;
  std::string rewrite_token;
  std::optional<ObjectMetadata> resource;  // set when done
};

// {"error": {...}} of a failed JSON API call.
struct ServiceError {
  int code = 0;
  std::string message;
  std::string reason;  // errors[0].reason, e.g. "notFound", "conditionNotMet"
};

// A service_account key file or an authorized_user file.
struct CredentialsFile {
  std::string type;  // "service_account", "authorized_user", ...
  std::string project_id;
  std::string private_key_id;
  std::string private_key;  // PEM
  std::string client_email;
  std::string client_id;
  std::string client_secret;
  std::string refresh_token;
  std::string token_uri;  // empty: Google's default
};

// An OAuth2 token endpoint's (or the metadata server's) answer.
struct TokenResponse {
  std::string access_token;
  int64_t expires_in = 0;  // seconds
  std::string token_type;
};

// What a new object's metadata says in an upload request.
struct NewObject {
  std::string name;
  std::string content_type;
  std::optional<uint32_t> crc32c;  // checked by the service before commit
};

// The claims of a service account's JWT assertion (RFC 7523).
struct JwtClaims {
  std::string issuer;    // the service account's email
  std::string scope;     // space-separated OAuth2 scopes
  std::string audience;  // the token_uri
  int64_t issued_at = 0;  // seconds since the epoch
  int64_t expires_at = 0;
  std::string subject;    // empty unless impersonating a user
};

}  // namespace spool::gcs
