// The JSON documents of the Cloud Storage JSON API and Google's OAuth2
// endpoints, parsed and printed through protobuf's JSON mapping (messages in
// proto/gcs_json.proto). Unknown fields are ignored when parsing, so newer
// API fields never break spool. No hand-written JSON parsing.
//
// Parse errors are InvalidArgument naming the document kind. Pure functions,
// thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "spool/core/status.h"
#include "spool/gcs/resources.h"

namespace spool::gcs {

Result<ObjectMetadata> ParseObject(std::string_view json);
Result<ObjectListPage> ParseObjectList(std::string_view json);
Result<RewriteProgress> ParseRewriteResponse(std::string_view json);
Result<CredentialsFile> ParseCredentialsFile(std::string_view json);
Result<TokenResponse> ParseTokenResponse(std::string_view json);

// The JSON API's error document; nullopt when `json` is not one.
std::optional<ServiceError> ParseServiceError(std::string_view json);
// An OAuth2 error ({"error": "invalid_grant", "error_description": ...}) as
// "invalid_grant: description"; nullopt when `json` is not one.
std::optional<std::string> ParseOAuthError(std::string_view json);

// Request bodies.
std::string NewObjectJson(const NewObject& object);
std::string NewBucketJson(std::string_view name);
std::string JwtHeaderJson(std::string_view key_id);
std::string JwtClaimsJson(const JwtClaims& claims);

}  // namespace spool::gcs
