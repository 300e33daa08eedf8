// Environment and shared-file credentials, including credential_process.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "spool/s3/credential_providers.h"
#include "spool/s3/flat_json.h"
#include "spool/s3/profile_files.h"
#include "spool/s3/xml.h"

namespace spool::s3 {
namespace {

class EnvironmentProvider : public CredentialsProvider {
 public:
  explicit EnvironmentProvider(Env env) : env_(std::move(env)) {}

  Result<Credentials> Get() override {
    auto id = env_.Get("AWS_ACCESS_KEY_ID");
    auto secret = env_.Get("AWS_SECRET_ACCESS_KEY");
    if (!id && !secret) return NotFoundError("AWS_ACCESS_KEY_ID is not set");
    if (!id || !secret) {
      return InvalidArgumentError(std::string(id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID") +
                                  " is not set while " + (id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY") +
                                  " is; set both");
    }
    return Credentials{*id, *secret, env_.Get("AWS_SESSION_TOKEN").value_or(""), std::nullopt};
  }
  std::string Name() const override { return "environment"; }

 private:
  Env env_;
};

// Runs `command` with the shell and returns its standard output. The child
// starts with no signal blocked and SIGINT/SIGTERM at their default actions
// (a signal mask survives exec, and the spool command blocks both in its
// threads: cli/interrupts.h), so a Ctrl-C reaches the helper too.
Result<std::string> RunCommand(const std::string& command, const std::string& profile) {
  const std::string failed_to_start = "cannot start the credential_process of profile " + profile;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return UnavailableError(failed_to_start + ": " + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);  // dup2 clears close-on-exec
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, interrupts;
  sigemptyset(&none);
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &interrupts);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, "/bin/sh", &actions, &attributes, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(out[0]);
    return UnavailableError(failed_to_start + ": " + std::strerror(spawned));
  }
  std::string output;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return PermissionDeniedError("the credential_process of AWS profile " + profile + " failed (exit status " +
                                 std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                 "); run it by hand to see why");
  }
  return output;
}

Result<Credentials> FromProcessOutput(const std::string& output, const std::string& profile) {
  auto json = ParseFlatJson(output);
  if (!json.ok()) return json.status().WithContext("credential_process of AWS profile " + profile);
  auto field = [&](const char* name) {
    auto it = json->find(name);
    return it == json->end() ? std::string() : it->second;
  };
  if (field("Version") != "1") {
    return InvalidArgumentError("the credential_process of AWS profile " + profile + " must print \"Version\": 1");
  }
  Credentials credentials{field("AccessKeyId"), field("SecretAccessKey"), field("SessionToken"), std::nullopt};
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    return InvalidArgumentError("the credential_process of AWS profile " + profile +
                                " printed no AccessKeyId/SecretAccessKey");
  }
  if (!field("Expiration").empty()) credentials.expiration = ParseIso8601(field("Expiration"));
  return credentials;
}

class ProfileProvider : public CredentialsProvider {
 public:
  ProfileProvider(Env env, std::string profile) : env_(std::move(env)), explicit_profile_(std::move(profile)) {}

  Result<Credentials> Get() override {
    const std::string profile = ProfileName(env_, explicit_profile_);
    const ProfileFiles files = LocateProfileFiles(env_);
    SPOOL_ASSIGN_OR_RETURN(auto settings, LoadProfile(files, profile));
    if (!settings) return NotFoundError("no AWS profile " + profile + " in " + files.credentials_file);
    auto get = [&](const char* key) {
      auto it = settings->find(key);
      return it == settings->end() ? std::string() : it->second;
    };
    if (!get("aws_access_key_id").empty()) {
      if (get("aws_secret_access_key").empty()) {
        return InvalidArgumentError("AWS profile " + profile + " has aws_access_key_id but no aws_secret_access_key");
      }
      return Credentials{get("aws_access_key_id"), get("aws_secret_access_key"), get("aws_session_token"),
                         std::nullopt};
    }
    if (!get("credential_process").empty()) {
      SPOOL_ASSIGN_OR_RETURN(std::string output, RunCommand(get("credential_process"), profile));
      return FromProcessOutput(output, profile);
    }
    return NotFoundError("AWS profile " + profile + " has no keys or credential_process");
  }
  std::string Name() const override { return "profile " + ProfileName(env_, explicit_profile_); }

 private:
  Env env_;
  std::string explicit_profile_;
};

}  // namespace

std::shared_ptr<CredentialsProvider> MakeEnvironmentCredentials(Env env) {
  return std::make_shared<EnvironmentProvider>(std::move(env));
}

std::shared_ptr<CredentialsProvider> MakeProfileCredentials(Env env, std::string profile) {
  // credential_process answers may expire: cache and refresh them.
  return MakeRefreshingCredentials(std::make_shared<ProfileProvider>(std::move(env), std::move(profile)));
}

}  // namespace spool::s3
