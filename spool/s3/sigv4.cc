#include "spool/s3/sigv4.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>

#include "spool/core/strings.h"
#include "spool/s3/crypto.h"

namespace spool::s3 {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";

// Trims the value and collapses runs of spaces, as canonical headers require.
std::string CanonicalHeaderValue(std::string_view value) {
  std::string out;
  bool in_space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      in_space = true;
      continue;
    }
    if (in_space && !out.empty()) out.push_back(' ');
    in_space = false;
    out.push_back(c);
  }
  return out;
}

// Lower-case name -> comma-joined values, sorted by name.
std::map<std::string, std::string> CanonicalHeaderMap(const KeyValues& headers) {
  std::map<std::string, std::string> map;
  for (const auto& [name, value] : headers) {
    std::string& joined = map[AsciiToLower(name)];
    if (!joined.empty()) joined.push_back(',');
    joined += CanonicalHeaderValue(value);
  }
  return map;
}

std::string DateOnly(std::string_view amz_date) { return std::string(amz_date.substr(0, 8)); }

std::string Authorization(const Credentials& credentials, std::string_view amz_date, const SigningScope& scope,
                          std::string_view signed_headers, std::string_view signature) {
  std::string out(kAlgorithm);
  out += " Credential=" + credentials.access_key_id + "/" + CredentialScope(amz_date, scope);
  out += ", SignedHeaders=";
  out += signed_headers;
  out += ", Signature=";
  out += signature;
  return out;
}

}  // namespace

std::string UriEncode(std::string_view text, bool encode_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    bool unreserved = std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved || (c == '/' && !encode_slash)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

std::string AmzDate(std::chrono::system_clock::time_point time) {
  std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y%m%dT%H%M%SZ", &tm);
  return buffer;
}

std::string CanonicalQueryString(const KeyValues& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) encoded.emplace_back(UriEncode(name, true), UriEncode(value, true));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name + "=" + value;
  }
  return out;
}

std::string SignedHeaderNames(const KeyValues& headers) {
  std::string out;
  for (const auto& entry : CanonicalHeaderMap(headers)) {
    if (!out.empty()) out.push_back(';');
    out += entry.first;
  }
  return out;
}

std::string CanonicalRequest(const SignableRequest& request) {
  std::string out = request.method;
  out += '\n';
  out += request.encoded_path.empty() ? std::string_view("/") : std::string_view(request.encoded_path);
  out += '\n';
  out += CanonicalQueryString(request.query) + "\n";
  for (const auto& [name, value] : CanonicalHeaderMap(request.headers)) out += name + ":" + value + "\n";
  out += '\n';
  out += SignedHeaderNames(request.headers);
  out += '\n';
  out += request.payload_hash;
  return out;
}

std::string CredentialScope(std::string_view amz_date, const SigningScope& scope) {
  return DateOnly(amz_date) + "/" + scope.region + "/" + scope.service + "/aws4_request";
}

std::string StringToSign(std::string_view amz_date, const SigningScope& scope,
                         std::string_view canonical_request) {
  std::string out(kAlgorithm);
  out += "\n";
  out += amz_date;
  out += '\n';
  out += CredentialScope(amz_date, scope);
  out += '\n';
  out += Sha256Hex(canonical_request);
  return out;
}

std::string Signature(std::string_view secret_access_key, std::string_view amz_date, const SigningScope& scope,
                      std::string_view string_to_sign) {
  std::string key = HmacSha256("AWS4" + std::string(secret_access_key), DateOnly(amz_date));
  key = HmacSha256(key, scope.region);
  key = HmacSha256(key, scope.service);
  key = HmacSha256(key, "aws4_request");
  return HexEncode(HmacSha256(key, string_to_sign));
}

std::string SignHeaders(SignableRequest& request, const Credentials& credentials, const SigningScope& scope,
                        std::chrono::system_clock::time_point now) {
  const std::string amz_date = AmzDate(now);
  request.headers.emplace_back("x-amz-date", amz_date);
  if (!credentials.session_token.empty()) {
    request.headers.emplace_back("x-amz-security-token", credentials.session_token);
  }
  const std::string string_to_sign = StringToSign(amz_date, scope, CanonicalRequest(request));
  return Authorization(credentials, amz_date, scope, SignedHeaderNames(request.headers),
                       Signature(credentials.secret_access_key, amz_date, scope, string_to_sign));
}

std::string Presign(SignableRequest& request, const Credentials& credentials, const SigningScope& scope,
                    std::chrono::system_clock::time_point now, std::chrono::seconds expires) {
  const std::string amz_date = AmzDate(now);
  request.payload_hash = std::string(kUnsignedPayload);
  request.query.emplace_back("X-Amz-Algorithm", std::string(kAlgorithm));
  request.query.emplace_back("X-Amz-Credential", credentials.access_key_id + "/" + CredentialScope(amz_date, scope));
  request.query.emplace_back("X-Amz-Date", amz_date);
  request.query.emplace_back("X-Amz-Expires", std::to_string(expires.count()));
  if (!credentials.session_token.empty()) request.query.emplace_back("X-Amz-Security-Token", credentials.session_token);
  request.query.emplace_back("X-Amz-SignedHeaders", SignedHeaderNames(request.headers));
  const std::string string_to_sign = StringToSign(amz_date, scope, CanonicalRequest(request));
  request.query.emplace_back("X-Amz-Signature",
                             Signature(credentials.secret_access_key, amz_date, scope, string_to_sign));
  return CanonicalQueryString(request.query);
}

}  // namespace spool::s3
