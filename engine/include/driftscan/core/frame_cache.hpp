#pragma once
// Least-recently-used frames, bounded in bytes of pixel data: what lets a
// reader serve repeated requests (a frame used by two neighbouring pair
// registrations, the reference frame) without ever holding a long series.
// Thread-safe. A frame larger than the whole budget is simply not kept.
// With Eviction::none a full cache keeps what it holds and takes nothing
// more: for a reader that goes over the series in order again and again,
// where evicting the least recent frame would evict the next one asked for
// (an LRU cache smaller than the cycle never hits on it).
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "driftscan/core/frame.hpp"

namespace driftscan {

class FrameCache {
 public:
  enum class Eviction { least_recent, none };
  explicit FrameCache(std::size_t capacity_bytes, Eviction eviction = Eviction::least_recent);

  // The cached frame, or nullptr (and counts a miss).
  std::shared_ptr<const Frame> find(std::size_t key);
  // Stores `frame` under `key` (replacing), evicting the least recently used.
  void insert(std::size_t key, std::shared_ptr<const Frame> frame);
  void clear();

  std::size_t capacity_bytes() const { return capacity_; }
  std::size_t size_bytes() const;  // pixel bytes held now
  std::size_t count() const;       // frames held now
  std::size_t hits() const;
  std::size_t misses() const;

  static std::size_t bytes_of(const Frame& f) { return f.pixels.size() * sizeof(float); }

 private:
  struct Entry {
    std::size_t key;
    std::shared_ptr<const Frame> frame;
  };
  void evict_to(std::size_t budget);  // caller holds mutex_

  const std::size_t capacity_;
  const Eviction eviction_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // front = most recent
  std::unordered_map<std::size_t, std::list<Entry>::iterator> where_;
  std::size_t bytes_ = 0;
  std::size_t hits_ = 0, misses_ = 0;
};

}  // namespace driftscan
