// The loader's random numbers: SplitMix64, chosen because its output is
// fully specified (unlike std:: distributions, which differ between standard
// libraries), so a seed gives the same shard order and shuffle on every
// platform and in every release. The state is one integer, cheap to store.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace spool::loader {

class Prng {
 public:
  explicit Prng(uint64_t state = 0) : state_(state) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) for bound >= 1 (multiply-shift; the bias is below
  // 2^-32 for every bound a loader sees).
  uint64_t Below(uint64_t bound) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * bound) >> 64);
  }
  uint64_t state() const { return state_; }

 private:
  uint64_t state_;
};

// A seed for one purpose ("shard order of epoch 3", "shuffle of worker 5 in
// epoch 3") derived from the user's seed, so streams never overlap.
inline uint64_t DeriveSeed(std::initializer_list<uint64_t> parts) {
  Prng mix(0x5ee1c0de5ee1c0deull);
  uint64_t h = mix.Next();
  for (uint64_t part : parts) {
    Prng step(h ^ part);
    h = step.Next();
  }
  return h;
}

}  // namespace spool::loader
