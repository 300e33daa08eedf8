// How spool prints: error lines, object lines, JSON.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"

namespace spool::cli {

// "spool: <message>" on stderr (the message without its code name).
void PrintError(const Status& status);
void PrintError(std::string_view message);

// "spool: warning: <message>" on stderr: something the command left out
// and still succeeds without.
void PrintWarning(std::string_view message);

// A line on stdout.
void PrintLine(std::string_view line);

// A JSON string literal, quotes included.
std::string JsonString(std::string_view text);

// "2026-11-22T01:02:03Z".
std::string FormatTimestamp(std::chrono::system_clock::time_point time);

// The size column of `ls -l`: bytes, or "1.5 GiB" when human.
std::string FormatSize(uint64_t bytes, bool human);

// {"url":...,"key":...,"size":...,"updated":...,"version":...,"crc32c":...}
std::string ObjectJson(std::string_view url, const ObjectInfo& info);

}  // namespace spool::cli
