#include "spool/gcs/credentials.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "spool/gcs/json.h"

namespace spool::gcs {
namespace {

class AnonymousCredentials : public Credentials {
 public:
  Result<std::string> AuthorizationHeader() override { return std::string(); }
  std::string Describe() const override { return "anonymous (no credentials)"; }
};

class TokenCredentials : public Credentials {
 public:
  TokenCredentials(TokenCache::Fetch fetch, std::string description)
      : cache_(std::move(fetch)), description_(std::move(description)) {}

  Result<std::string> AuthorizationHeader() override {
    SPOOL_ASSIGN_OR_RETURN(std::string token, cache_.Get());
    return "Bearer " + token;
  }
  void Invalidate() override { cache_.Invalidate(); }
  std::string Describe() const override { return description_; }

 private:
  TokenCache cache_;
  std::string description_;
};

}  // namespace

std::shared_ptr<Credentials> MakeAnonymousCredentials() { return std::make_shared<AnonymousCredentials>(); }

std::shared_ptr<Credentials> MakeTokenCredentials(TokenCache::Fetch fetch, std::string description) {
  return std::make_shared<TokenCredentials>(std::move(fetch), std::move(description));
}

Result<std::shared_ptr<Credentials>> LoadCredentialsFile(const std::string& path, std::string origin,
                                                         std::shared_ptr<HttpTransport> transport) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    // Unauthenticated, not NotFound: the credentials are missing, not the
    // object the caller asked for.
    return UnauthenticatedError("cannot read the Google credentials file " + path + " (" + origin +
                                "): check that the path is right and readable");
  }
  std::stringstream contents;
  contents << in.rdbuf();
  auto file = ParseCredentialsFile(contents.str());
  if (!file.ok()) {
    return InvalidArgumentError("the Google credentials file " + path + " (" + origin +
                                ") is not a JSON key file: download it again from the console");
  }
  if (file->type == "service_account") {
    return MakeServiceAccountCredentials(*file, std::move(origin), std::move(transport));
  }
  if (file->type == "authorized_user") {
    return MakeAuthorizedUserCredentials(*file, std::move(origin), std::move(transport));
  }
  return UnimplementedError("the Google credentials file " + path + " (" + origin + ") has type \"" + file->type +
                            "\"; spool supports service_account and authorized_user files (on GKE, use Workload "
                            "Identity through the metadata server instead)");
}

}  // namespace spool::gcs
