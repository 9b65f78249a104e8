#pragma once
// Deterministic pseudo-random values in [-1, 1) from an index (splitmix64),
// so every rank can build any part of a test array without communicating.
#include <cstdint>

inline double hash_unit(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}
