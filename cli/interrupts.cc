#include "cli/interrupts.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace spool::cli {
namespace {

constexpr unsigned char kStop = 0;  // not a signal number: ends the watcher

// Written by the handler, so plain atomics only.
std::atomic<int> signal_pipe{-1};
std::atomic<int> signals_seen{0};

void OnSignal(int signal_number) {
  if (signals_seen.fetch_add(1) > 0) _exit(128 + signal_number);  // the second one: now
  const int saved_errno = errno;
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  const int fd = signal_pipe.load();
  if (fd >= 0) (void)!::write(fd, &byte, 1);
  errno = saved_errno;
}

sigset_t InterruptSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

Interrupts::Interrupts() {
  if (::pipe2(pipe_, O_CLOEXEC) != 0) return;  // no pipe: signals keep their default action
  signals_seen.store(0);
  signal_pipe.store(pipe_[1]);
  const sigset_t signals = InterruptSignals();
  pthread_sigmask(SIG_BLOCK, &signals, &previous_mask_);
  watcher_ = std::thread([this, signals] {
    pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);  // the one thread they reach
    Watch();
  });
  struct sigaction action {};
  action.sa_handler = &OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

Interrupts::~Interrupts() {
  if (!watcher_.joinable()) return;
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  signal_pipe.store(-1);
  const unsigned char stop = kStop;
  (void)!::write(pipe_[1], &stop, 1);
  watcher_.join();
  ::close(pipe_[0]);
  ::close(pipe_[1]);
  pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
}

void Interrupts::Watch() {
  for (;;) {
    unsigned char byte = kStop;
    const ssize_t got = ::read(pipe_[0], &byte, 1);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0 || byte == kStop) return;
    int none = 0;
    signal_.compare_exchange_strong(none, byte);
    source_.Cancel();
  }
}

const char* SignalName(int signal_number) {
  switch (signal_number) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "a signal";
  }
}

}  // namespace spool::cli
