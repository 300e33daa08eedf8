#include "spool/s3/config.h"

#include <arpa/inet.h>

#include <algorithm>

#include "spool/core/strings.h"
#include "spool/s3/crypto.h"
#include "spool/s3/profile_files.h"

namespace spool::s3 {
namespace {

bool IsIpAddress(const std::string& host) {
  unsigned char buffer[16];
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
  return inet_pton(AF_INET, bare.c_str(), buffer) == 1 || inet_pton(AF_INET6, bare.c_str(), buffer) == 1;
}

std::optional<std::string> Setting(const std::optional<ProfileSettings>& profile, const std::string& key) {
  if (!profile) return std::nullopt;
  auto it = profile->find(key);
  if (it == profile->end() || it->second.empty()) return std::nullopt;
  return it->second;
}

// The first non-empty of the values, with where it came from.
struct Sourced {
  std::string value;
  std::string source;
};
std::optional<Sourced> FirstOf(std::initializer_list<std::pair<std::optional<std::string>, std::string>> candidates) {
  for (const auto& [value, source] : candidates) {
    if (value && !value->empty()) return Sourced{*value, source};
  }
  return std::nullopt;
}

std::optional<std::string> NonEmpty(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return text;
}

}  // namespace

std::string Endpoint::HostHeader() const {
  if (port == 0) return host;
  return host + ":" + std::to_string(port);
}

std::string Endpoint::ToString() const { return scheme + "://" + HostHeader(); }

Result<Endpoint> ParseEndpoint(const std::string& text) {
  auto invalid = [&] {
    return InvalidArgumentError("the S3 endpoint \"" + text +
                                "\" is not a URL like https://s3.example.com or http://127.0.0.1:9000");
  };
  size_t scheme_end = text.find("://");
  if (scheme_end == std::string::npos) return invalid();
  Endpoint endpoint;
  endpoint.scheme = AsciiToLower(std::string_view(text).substr(0, scheme_end));
  if (endpoint.scheme != "http" && endpoint.scheme != "https") return invalid();
  std::string authority = text.substr(scheme_end + 3);
  size_t slash = authority.find('/');
  if (slash != std::string::npos) {
    if (authority.find_first_not_of('/', slash) != std::string::npos) {
      return InvalidArgumentError("the S3 endpoint \"" + text + "\" has a path; give only scheme://host[:port]");
    }
    authority.resize(slash);
  }
  size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
    std::string port = authority.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return invalid();
    endpoint.port = std::stoi(port);
    authority.resize(colon);
  }
  if (authority.empty()) return invalid();
  endpoint.host = authority;
  const int default_port = endpoint.scheme == "https" ? 443 : 80;
  if (endpoint.port == default_port) endpoint.port = 0;
  return endpoint;
}

uint64_t DefaultPartSize(uint64_t expected_size) {
  const uint64_t needed = (expected_size + kMaxParts - 1) / kMaxParts;
  const uint64_t rounded = (needed + (1ull << 20) - 1) & ~((1ull << 20) - 1);
  return std::clamp(rounded, kDefaultPartSize, kMaxPartSize);
}

Result<ResolvedConfig> ResolveConfig(const S3Options& options, const std::string& bucket, const Env& env) {
  ResolvedConfig config;
  config.profile = ProfileName(env, options.profile);
  SPOOL_ASSIGN_OR_RETURN(auto profile, LoadProfile(LocateProfileFiles(env), config.profile));
  if (!options.profile.empty() && !profile) {
    return InvalidArgumentError("the AWS profile \"" + config.profile +
                                "\" is in neither ~/.aws/config nor ~/.aws/credentials (AWS_CONFIG_FILE, "
                                "AWS_SHARED_CREDENTIALS_FILE); check its name");
  }

  config.region = FirstOf({{NonEmpty(options.region), "the region option"},
                           {env.Get("AWS_REGION"), "AWS_REGION"},
                           {env.Get("AWS_DEFAULT_REGION"), "AWS_DEFAULT_REGION"},
                           {Setting(profile, "region"), "profile " + config.profile}})
                      .value_or(Sourced{"us-east-1", "default"})
                      .value;

  auto endpoint_text = FirstOf({{NonEmpty(options.endpoint_url), "the endpoint option"},
                                {env.Get("AWS_ENDPOINT_URL_S3"), "AWS_ENDPOINT_URL_S3"},
                                {env.Get("AWS_ENDPOINT_URL"), "AWS_ENDPOINT_URL"},
                                {Setting(profile, "s3.endpoint_url"), "profile " + config.profile},
                                {Setting(profile, "endpoint_url"), "profile " + config.profile}});
  if (endpoint_text) {
    auto endpoint = ParseEndpoint(endpoint_text->value);
    if (!endpoint.ok()) return endpoint.status().WithContext("from " + endpoint_text->source);
    config.endpoint = *endpoint;
    config.custom_endpoint = true;
  } else {
    config.endpoint = Endpoint{"https", "s3." + config.region + ".amazonaws.com", 0};
  }

  AddressingStyle addressing = options.addressing;
  if (addressing == AddressingStyle::kAuto) {
    const std::string style = Setting(profile, "s3.addressing_style").value_or("auto");
    if (style == "path") addressing = AddressingStyle::kPath;
    if (style == "virtual") addressing = AddressingStyle::kVirtual;
  }
  if (addressing == AddressingStyle::kAuto) {
    config.path_style = config.custom_endpoint || IsIpAddress(config.endpoint.host) ||
                        bucket.find('.') != std::string::npos;
  } else {
    config.path_style = addressing == AddressingStyle::kPath;
  }

  switch (options.payload_signing) {
    case PayloadSigning::kSigned: config.sign_payload = true; break;
    case PayloadSigning::kUnsigned: config.sign_payload = false; break;
    case PayloadSigning::kAuto:
      config.sign_payload = config.endpoint.scheme == "http" || HasSha256Instructions();
      break;
  }

  config.ca_bundle = FirstOf({{NonEmpty(options.ca_bundle), "option"},
                              {env.Get("AWS_CA_BUNDLE"), "AWS_CA_BUNDLE"},
                              {Setting(profile, "ca_bundle"), "profile"}})
                         .value_or(Sourced{})
                         .value;
  config.anonymous = options.anonymous;
  config.part_size = options.part_size;
  if (config.part_size != 0 && (config.part_size < kMinPartSize || config.part_size > kMaxPartSize)) {
    return InvalidArgumentError("the S3 part size " + std::to_string(config.part_size) +
                                " is outside S3's limits of 5 MiB to 5 GiB");
  }
  config.concurrency = options.concurrency > 0 ? options.concurrency : kDefaultConcurrency;
  config.retry = options.retry;
  return config;
}

}  // namespace spool::s3
