// The AWS shared configuration files: ~/.aws/config ("[profile dev]"
// sections) and ~/.aws/credentials ("[dev]" sections), located as the AWS
// SDKs do (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, HOME), and the
// profile in use (explicit, AWS_PROFILE, else "default").
//
// Nested settings ("s3 =" followed by indented "addressing_style = path")
// appear as "s3.addressing_style". Settings from the credentials file win
// over the config file's. Files are read on every call (they may change
// between refreshes); thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "spool/core/env.h"
#include "spool/core/status.h"

namespace spool::s3 {

struct ProfileFiles {
  std::string config_file;
  std::string credentials_file;
};

ProfileFiles LocateProfileFiles(const Env& env);
// `explicit_profile` if non-empty, else AWS_PROFILE, else "default".
std::string ProfileName(const Env& env, const std::string& explicit_profile);

using ProfileSettings = std::map<std::string, std::string>;

// The merged settings of `profile`: nullopt when neither file names it.
// Missing files are fine; an unreadable file is an error naming it.
Result<std::optional<ProfileSettings>> LoadProfile(const ProfileFiles& files, const std::string& profile);

// Parses one file's text: section name -> settings. Section names are as
// written inside the brackets ("profile dev", "default").
std::map<std::string, ProfileSettings> ParseIni(const std::string& text);

}  // namespace spool::s3
