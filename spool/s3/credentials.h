// AWS credentials and the interface every way of obtaining them implements.
//
// Providers (explicit keys, environment, shared files, web identity, container,
// instance metadata) live in their own headers; the chain that tries them in
// the AWS SDK order is in credential_chain.h. Credentials never appear in logs
// or error messages: only the access key id may be named.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "spool/core/status.h"

namespace spool::s3 {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty for long-term keys
  // When temporary credentials stop working; nullopt for long-term keys.
  std::optional<std::chrono::system_clock::time_point> expiration;

  // No key at all: requests go unsigned (public buckets, --no-sign-request).
  bool anonymous() const { return access_key_id.empty(); }
};

// Thread-safe source of credentials. Get() may block (files, HTTP) and must
// be cheap when called again while the last answer is still fresh.
class CredentialsProvider {
 public:
  virtual ~CredentialsProvider() = default;
  // NotFound means "this source is not configured" (the chain moves on);
  // any other error means the source is configured but failed.
  virtual Result<Credentials> Get() = 0;
  // Where the credentials come from, for messages: "environment",
  // "profile dev in /home/u/.aws/credentials", "web identity (STS)", ...
  virtual std::string Name() const = 0;
};

// Always answers `credentials` (explicit keys given in code or options).
class StaticCredentialsProvider : public CredentialsProvider {
 public:
  StaticCredentialsProvider(Credentials credentials, std::string name)
      : credentials_(std::move(credentials)), name_(std::move(name)) {}
  Result<Credentials> Get() override { return credentials_; }
  std::string Name() const override { return name_; }

 private:
  Credentials credentials_;
  std::string name_;
};

}  // namespace spool::s3
