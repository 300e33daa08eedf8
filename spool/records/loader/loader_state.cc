#include "spool/records/loader/loader_state.h"

#include <charconv>
#include <sstream>

namespace spool::loader {
namespace {

constexpr std::string_view kMagic = "spool-loader/1";

bool ParseU64(std::string_view text, uint64_t* value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string LoaderState::Encode() const {
  std::ostringstream out;
  out << kMagic << " seed=" << seed << " epoch=" << epoch << " position=" << position << " worker=" << worker
      << " workers=" << workers;
  if (partitions != 0) out << " partitions=" << partitions;
  if (!fingerprint.empty()) out << " fingerprint=" << fingerprint;
  if (!truncated.empty()) {
    out << " truncated=";
    for (size_t i = 0; i < truncated.size(); ++i) {
      out << (i ? "," : "") << truncated[i].shard << ':' << truncated[i].records;
    }
  }
  return out.str();
}

Result<LoaderState> LoaderState::Decode(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("loader state '" + std::string(text) + "' is not valid (" + std::string(why) +
                                "); pass the string LoaderState::Encode() produced");
  };
  std::istringstream in{std::string(text)};
  std::string word;
  if (!(in >> word) || word != kMagic) return bad("unknown format");
  LoaderState state;
  bool seen[5] = {};
  while (in >> word) {
    size_t eq = word.find('=');
    if (eq == std::string::npos) return bad("expected name=value");
    std::string_view name = std::string_view(word).substr(0, eq);
    std::string_view value = std::string_view(word).substr(eq + 1);
    uint64_t* fields[] = {&state.seed, &state.epoch, &state.position, &state.worker, &state.workers};
    const char* names[] = {"seed", "epoch", "position", "worker", "workers"};
    bool known = false;
    for (int i = 0; i < 5; ++i) {
      if (name == names[i]) {
        if (!ParseU64(value, fields[i])) return bad(std::string(name) + " is not a number");
        seen[i] = known = true;
      }
    }
    if (name == "partitions") {
      if (!ParseU64(value, &state.partitions)) return bad("partitions is not a number");
      known = true;
    }
    if (name == "fingerprint") {
      if (value.empty() || value.find_first_not_of("0123456789abcdef") != std::string_view::npos) {
        return bad("fingerprint is not lower-case hex");
      }
      state.fingerprint = std::string(value);
      known = true;
    }
    if (name == "truncated") {
      known = true;
      std::string_view rest = value;
      while (!rest.empty()) {
        size_t comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        size_t colon = item.find(':');
        uint64_t shard = 0, records = 0;
        if (colon == std::string_view::npos || !ParseU64(item.substr(0, colon), &shard) ||
            !ParseU64(item.substr(colon + 1), &records) || shard > UINT32_MAX) {
          return bad("truncated entries are shard:records");
        }
        state.truncated.push_back({static_cast<uint32_t>(shard), records});
      }
    }
    if (!known) return bad("unknown field " + std::string(name));
  }
  for (bool s : seen) {
    if (!s) return bad("a field is missing");
  }
  if (state.workers == 0 || state.worker >= state.workers) return bad("worker outside workers");
  if (state.partitions != 0 && state.partitions % state.workers != 0) return bad("workers must divide partitions");
  return state;
}

}  // namespace spool::loader
