// The second process of gcs_resumable_test: continues a resumable upload
// from the state another process saved, and commits it.
//
//   gcs_resume_helper ENDPOINT BUCKET KEY STATE_FILE TOTAL_SIZE
//
// Appends the test pattern from the session's committed offset up to
// TOTAL_SIZE and closes. Exit status 0 on success; the error on stderr.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "spool/gcs/gcs_store.h"
#include "tests/gcs/test_server.h"

int main(int argc, char** argv) {
  using namespace spool;
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s ENDPOINT BUCKET KEY STATE_FILE TOTAL_SIZE\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[4]);
  std::stringstream text;
  text << in.rdbuf();
  auto state = gcs::ResumableUploadState::Parse(text.str());
  if (!state.ok()) {
    std::fprintf(stderr, "%s\n", state.status().ToString().c_str());
    return 1;
  }
  gcs::GcsStoreOptions options;
  options.bucket = argv[2];
  options.endpoint = argv[1];
  options.anonymous = true;
  options.chunk_size = 8 << 20;
  auto store = gcs::GcsStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  auto writer = (*store)->ResumeWrite(argv[3], *state);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
    return 1;
  }
  const uint64_t total = std::stoull(argv[5]);
  std::string block;
  for (uint64_t offset = (*writer)->bytes_appended(); offset < total;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(4 << 20, total - offset));
    block.resize(n);
    gcs::testing::FillPattern(offset, block);
    if (Status status = (*writer)->Append(block); !status.ok()) {
      std::fprintf(stderr, "%s\n", status.ToString().c_str());
      return 1;
    }
    offset += n;
  }
  auto info = (*writer)->Close();
  if (!info.ok()) {
    std::fprintf(stderr, "%s\n", info.status().ToString().c_str());
    return 1;
  }
  std::printf("committed %llu bytes, generation %s\n", static_cast<unsigned long long>(info->size),
              info->version.c_str());
  return 0;
}
