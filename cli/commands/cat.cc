// spool cat URL [--range A-B]
#include <charconv>
#include <cstdio>
#include <memory>

#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "spool/core/storage/transfer.h"
#include "spool/core/storage/verify.h"

namespace spool::cli {

namespace {

constexpr uint64_t kChunkSize = 32 << 20;  // read in parallel parts, written in order

struct CatOptions {
  std::string url;
  std::string range;
};

struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = 0;  // exclusive
};

bool ParseNumber(std::string_view text, uint64_t* value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

// "A-B" (bytes A to B inclusive, as in HTTP), "A-" (from A to the end) or
// "-N" (the last N bytes), against an object of `size` bytes.
Result<ByteRange> ParseRange(std::string_view text, uint64_t size, const std::string& url) {
  auto malformed = [&] {
    return InvalidArgumentError("--range \"" + std::string(text) +
                                "\": write A-B (bytes A to B, inclusive), A- (from A to the end) or -N (the last N bytes)");
  };
  size_t dash = text.find('-');
  if (dash == std::string_view::npos) return malformed();
  std::string_view first = text.substr(0, dash);
  std::string_view last = text.substr(dash + 1);
  uint64_t a = 0;
  uint64_t b = 0;
  if (first.empty()) {
    if (!ParseNumber(last, &b)) return malformed();
    return ByteRange{size - std::min(b, size), size};
  }
  if (!ParseNumber(first, &a) || (!last.empty() && !ParseNumber(last, &b))) return malformed();
  if (!last.empty() && b < a) return malformed();
  if (a > size) {
    return OutOfRangeError("--range " + std::string(text) + ": " + url + " has only " + std::to_string(size) + " bytes");
  }
  uint64_t end = last.empty() ? size : std::min(b + 1, size);
  return ByteRange{a, end};
}

Status RunCat(const CatOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, Open(options.url, global));
  const std::string url = location.store->Describe(location.key);
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> object, location.store->OpenRead(location.key));
  const uint64_t size = object->info().size;
  ByteRange range{0, size};
  if (!options.range.empty()) {
    SPOOL_ASSIGN_OR_RETURN(range, ParseRange(options.range, size, url));
  }
  // Parts as the store's reader splits them: each one GET.
  const TransferOptions transfer;
  std::string buffer(std::min(kChunkSize, range.end - range.begin), '\0');
  // A whole object is checked against the CRC32C its store keeps (or its
  // uploader stored), else its other checksum (docs/integrity.md). The bytes
  // are on standard output by then, so a mismatch can only fail the command
  // (exit 3), as a broken pipe would. An object read in one request was
  // checked by a reader that verifies whole reads before anything was written.
  const bool whole = range.begin == 0 && range.end == size;
  const bool one_read = size <= object->ranged_reads().part_size && object->verifies_whole_reads();
  std::optional<ChecksumVerifier> verifier;
  if (whole && !one_read) {
    if (std::optional<StoredDigest> expected = ReadChecksum(object->info())) verifier.emplace(*expected, url);
  }
  for (uint64_t offset = range.begin; offset < range.end;) {
    std::span<char> chunk(buffer.data(), std::min<uint64_t>(buffer.size(), range.end - offset));
    SPOOL_ASSIGN_OR_RETURN(size_t n, ReadParallel(*object, offset, chunk, transfer));
    if (n == 0) return DataLossError(url + " ended at byte " + std::to_string(offset) + " before its size");
    if (verifier) verifier->Update(buffer.data(), n);
    if (std::fwrite(buffer.data(), 1, n, stdout) != n) {
      return UnavailableError("writing " + url + " to standard output failed");
    }
    offset += n;
  }
  if (verifier) {
    std::fflush(stdout);
    return verifier->Finish("what was written to standard output is damaged");
  }
  return OkStatus();
}

}  // namespace

Command AddCatCommand(CLI::App& spool, const GlobalOptions& global) {
  auto options = std::make_shared<CatOptions>();
  CLI::App* app = spool.add_subcommand("cat", "Write an object (or a byte range of it) to standard output");
  app->add_option("url", options->url, "The object's URL or path")->required();
  app->add_option("--range", options->range, "Bytes A-B (inclusive), A- or -N (the last N)");
  app->footer("Example: spool cat --range 0-1023 s3://my-bucket/shards/train-00000-of-00016 | xxd | head\n");
  return {app, [options, &global] { return RunCat(*options, global); }};
}

}  // namespace spool::cli
