#include "spool/s3/profile_files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace spool::s3 {
namespace {

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

// The file's text; nullopt when it does not exist.
Result<std::optional<std::string>> ReadIfExists(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return std::optional<std::string>();
    return InvalidArgumentError("cannot read the AWS configuration file " + path + ": " + std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  return std::optional<std::string>(text.str());
}

}  // namespace

ProfileFiles LocateProfileFiles(const Env& env) {
  const std::string home = env.Get("HOME").value_or("");
  return ProfileFiles{env.Get("AWS_CONFIG_FILE").value_or(home + "/.aws/config"),
                      env.Get("AWS_SHARED_CREDENTIALS_FILE").value_or(home + "/.aws/credentials")};
}

std::string ProfileName(const Env& env, const std::string& explicit_profile) {
  if (!explicit_profile.empty()) return explicit_profile;
  return env.Get("AWS_PROFILE").value_or("default");
}

std::map<std::string, ProfileSettings> ParseIni(const std::string& text) {
  std::map<std::string, ProfileSettings> sections;
  ProfileSettings* section = nullptr;
  std::string parent;  // the key whose indented sub-settings follow ("s3")
  std::istringstream lines(text);
  std::string raw;
  while (std::getline(lines, raw)) {
    const bool indented = !raw.empty() && (raw[0] == ' ' || raw[0] == '\t');
    std::string line = Trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = &sections[Trim(line.substr(1, line.size() - 2))];
      parent.clear();
      continue;
    }
    size_t equals = line.find('=');
    if (section == nullptr || equals == std::string::npos) continue;
    std::string key = Trim(line.substr(0, equals));
    std::string value = Trim(line.substr(equals + 1));
    if (indented && !parent.empty()) {
      (*section)[parent + "." + key] = value;
    } else if (value.empty()) {
      parent = key;  // "s3 =" opens a nested block
    } else {
      parent.clear();
      (*section)[key] = value;
    }
  }
  return sections;
}

Result<std::optional<ProfileSettings>> LoadProfile(const ProfileFiles& files, const std::string& profile) {
  std::optional<ProfileSettings> merged;
  SPOOL_ASSIGN_OR_RETURN(auto config_text, ReadIfExists(files.config_file));
  if (config_text) {
    auto sections = ParseIni(*config_text);
    // In the config file a profile is "[profile name]", except "[default]".
    auto it = sections.find("profile " + profile);
    if (it == sections.end() && profile == "default") it = sections.find("default");
    if (it != sections.end()) merged = it->second;
  }
  SPOOL_ASSIGN_OR_RETURN(auto credentials_text, ReadIfExists(files.credentials_file));
  if (credentials_text) {
    auto sections = ParseIni(*credentials_text);
    auto it = sections.find(profile);
    if (it != sections.end()) {
      if (!merged) merged.emplace();
      for (const auto& [key, value] : it->second) (*merged)[key] = value;
    }
  }
  return merged;
}

}  // namespace spool::s3
