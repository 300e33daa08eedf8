#include "spool/checkpoint/stats.h"

#include "spool/metrics/metrics_writer.h"

namespace spool::checkpoint {
namespace internal {

CheckpointStats StatsBlock::Snapshot() const {
  CheckpointStats out;
  out.saves = saves.load();
  out.save_failures = save_failures.load();
  out.uploaded_files = uploaded_files.load();
  out.uploaded_bytes = uploaded_bytes.load();
  out.restores = restores.load();
  out.restore_failures = restore_failures.load();
  out.restored_bytes = restored_bytes.load();
  if (const int64_t step = last_saved_step.load(); step >= 0) out.last_saved_step = step;
  out.save_seconds = save.Snapshot();
  out.blocked_seconds = blocked.Snapshot();
  out.upload_seconds = upload.Snapshot();
  out.commit_seconds = commit.Snapshot();
  out.restore_seconds = restore.Snapshot();
  out.verify_seconds = verify.Snapshot();
  return out;
}

}  // namespace internal

CheckpointStats CheckpointManager::Stats() const { return stats_->Snapshot(); }

void CheckpointManager::RegisterMetrics(bool with_requests) {
  metrics_ = metrics::MetricsRegistry::Global().Add([this, with_requests](metrics::MetricsWriter& writer) {
    const CheckpointStats s = Stats();
    const metrics::Labels none;
    auto counter = [&](const char* name, const char* help, uint64_t value) {
      writer.Counter(name, help, none, static_cast<double>(value));
    };
    counter("spool_checkpoint_saves_total", "saves that succeeded (a rank other than 0: its part written)", s.saves);
    counter("spool_checkpoint_save_failures_total", "saves that failed; nothing of them was committed",
            s.save_failures);
    counter("spool_checkpoint_uploaded_files_total", "files uploaded by this process's saves", s.uploaded_files);
    counter("spool_checkpoint_uploaded_bytes_total", "bytes uploaded by this process's saves", s.uploaded_bytes);
    counter("spool_checkpoint_restores_total", "restores that succeeded", s.restores);
    counter("spool_checkpoint_restore_failures_total", "restores that failed; the target folder was left as it was",
            s.restore_failures);
    counter("spool_checkpoint_restored_bytes_total", "bytes restored", s.restored_bytes);
    if (s.last_saved_step) {
      writer.Gauge("spool_checkpoint_last_saved_step", "the step of the last successful save", none,
                   static_cast<double>(*s.last_saved_step));
    }
    writer.Histogram("spool_checkpoint_save_seconds", "a whole save: uploads, their verification, the commit", none,
                     s.save_seconds);
    writer.Histogram("spool_checkpoint_blocked_seconds",
                     "how long Save, SaveAsync or SaveBeforeDeadline kept the training loop waiting", none,
                     s.blocked_seconds);
    writer.Histogram("spool_checkpoint_upload_seconds", "this rank's files uploaded and confirmed (size, CRC32C)",
                     none, s.upload_seconds);
    writer.Histogram("spool_checkpoint_commit_seconds",
                     "from this rank's files durable to the step committed (rank 0: waiting for every part)", none,
                     s.commit_seconds);
    writer.Histogram("spool_checkpoint_restore_seconds", "a restore: download, CRC32C of every file, swap into place",
                     none, s.restore_seconds);
    writer.Histogram("spool_checkpoint_verify_seconds", "Verify(): every file read back and checked", none,
                     s.verify_seconds);
    if (with_requests) metrics::WriteRequestMetrics(writer, Requests(), {{"owner", "checkpoint"}});
  });
}

}  // namespace spool::checkpoint
