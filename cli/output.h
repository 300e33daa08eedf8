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

// {"url":...,"key":...,"size":...,"updated":...,"version":...,"crc32c":...,
// "crc32c_from":..., "digest":{"algorithm":...,"value":...,"from":...}, "md5":...},
// the checksums only where the object has them; with `verified_by` (spool
// stat, not a listing, which shows no checksums) also
// "verified_by":{"algorithm":...,"from":...} or null.
std::string ObjectJson(std::string_view url, const ObjectInfo& info, bool verified_by = false);

}  // namespace spool::cli
