#include "spool/gcs/json.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>

#include <string>

#include "spool/core/crc32c.h"
#include "spool/gcs/proto/gcs_json.pb.h"

namespace spool::gcs {
namespace {

namespace pb = google::protobuf;

template <typename Message>
Result<Message> Parse(std::string_view json, std::string_view what) {
  Message message;
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = pb::util::JsonStringToMessage(pb::StringPiece(json.data(), json.size()), &message, options);
  if (!status.ok()) {
    return InvalidArgumentError("cannot parse " + std::string(what) + " JSON: " + std::string(status.message()));
  }
  return message;
}

std::string Print(const pb::Message& message) {
  std::string out;
  pb::util::JsonPrintOptions options;
  (void)pb::util::MessageToJsonString(message, &out, options);  // cannot fail for these messages
  return out;
}

std::chrono::system_clock::time_point ToTimePoint(const pb::Timestamp& t) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(pb::util::TimeUtil::TimestampToNanoseconds(t))));
}

ObjectMetadata FromMessage(const json::Object& m) {
  ObjectMetadata object;
  object.bucket = m.bucket();
  object.name = m.name();
  object.generation = m.generation();
  object.metageneration = m.metageneration();
  object.size = m.size();
  object.content_type = m.content_type();
  uint32_t crc = 0;
  if (!m.crc32c().empty() && crc32c::FromBase64(m.crc32c(), &crc)) object.crc32c = crc;
  object.md5_base64 = m.md5_hash();
  if (m.has_updated()) object.updated = ToTimePoint(m.updated());
  object.metadata.insert(m.metadata().begin(), m.metadata().end());
  return object;
}

}  // namespace

Result<ObjectMetadata> ParseObject(std::string_view json) {
  SPOOL_ASSIGN_OR_RETURN(auto message, Parse<json::Object>(json, "object resource"));
  return FromMessage(message);
}

Result<ObjectListPage> ParseObjectList(std::string_view json) {
  SPOOL_ASSIGN_OR_RETURN(auto message, Parse<json::ObjectList>(json, "objects.list response"));
  ObjectListPage page;
  page.items.reserve(message.items_size());
  for (const auto& item : message.items()) page.items.push_back(FromMessage(item));
  page.prefixes.assign(message.prefixes().begin(), message.prefixes().end());
  page.next_page_token = message.next_page_token();
  return page;
}

Result<RewriteProgress> ParseRewriteResponse(std::string_view json) {
  SPOOL_ASSIGN_OR_RETURN(auto message, Parse<json::RewriteResponse>(json, "objects.rewrite response"));
  RewriteProgress progress;
  progress.done = message.done();
  progress.total_bytes_rewritten = message.total_bytes_rewritten();
  progress.object_size = message.object_size();
  progress.rewrite_token = message.rewrite_token();
  if (message.has_resource()) progress.resource = FromMessage(message.resource());
  return progress;
}

Result<CredentialsFile> ParseCredentialsFile(std::string_view json) {
  SPOOL_ASSIGN_OR_RETURN(auto m, Parse<json::CredentialsFile>(json, "credentials file"));
  CredentialsFile file;
  file.type = m.type();
  file.project_id = m.project_id();
  file.private_key_id = m.private_key_id();
  file.private_key = m.private_key();
  file.client_email = m.client_email();
  file.client_id = m.client_id();
  file.client_secret = m.client_secret();
  file.refresh_token = m.refresh_token();
  file.token_uri = m.token_uri();
  return file;
}

Result<TokenResponse> ParseTokenResponse(std::string_view json) {
  SPOOL_ASSIGN_OR_RETURN(auto m, Parse<json::TokenResponse>(json, "OAuth2 token response"));
  if (m.access_token().empty()) return InvalidArgumentError("OAuth2 token response has no access_token");
  return TokenResponse{m.access_token(), m.expires_in(), m.token_type()};
}

std::optional<ServiceError> ParseServiceError(std::string_view json) {
  auto parsed = Parse<json::ErrorResponse>(json, "error");
  if (!parsed.ok() || !parsed->has_error()) return std::nullopt;
  const auto& body = parsed->error();
  ServiceError error;
  error.code = body.code();
  error.message = body.message();
  if (body.errors_size() > 0) error.reason = body.errors(0).reason();
  if (error.reason.empty()) error.reason = body.status();
  return error;
}

std::optional<std::string> ParseOAuthError(std::string_view json) {
  auto parsed = Parse<json::OAuthError>(json, "OAuth2 error");
  if (!parsed.ok() || parsed->error().empty()) return std::nullopt;
  std::string text = parsed->error();
  if (!parsed->error_description().empty()) text += ": " + parsed->error_description();
  return text;
}

std::string NewObjectJson(const NewObject& object) {
  json::Object m;
  m.set_name(object.name);
  m.set_content_type(object.content_type);
  if (object.crc32c) m.set_crc32c(crc32c::ToBase64(*object.crc32c));
  return Print(m);
}

std::string NewBucketJson(std::string_view name) {
  json::Bucket m;
  m.set_name(std::string(name));
  return Print(m);
}

std::string JwtHeaderJson(std::string_view key_id) {
  json::JwtHeader m;
  m.set_alg("RS256");
  m.set_typ("JWT");
  m.set_kid(std::string(key_id));
  return Print(m);
}

std::string JwtClaimsJson(const JwtClaims& claims) {
  json::JwtClaims m;
  m.set_iss(claims.issuer);
  m.set_scope(claims.scope);
  m.set_aud(claims.audience);
  m.set_iat(static_cast<uint32_t>(claims.issued_at));
  m.set_exp(static_cast<uint32_t>(claims.expires_at));
  m.set_sub(claims.subject);
  return Print(m);
}

}  // namespace spool::gcs
