#include "driftscan/core/frame_cache.hpp"

namespace driftscan {

FrameCache::FrameCache(std::size_t capacity_bytes, Eviction eviction)
    : capacity_(capacity_bytes), eviction_(eviction) {}

std::shared_ptr<const Frame> FrameCache::find(std::size_t key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = where_.find(key);
  if (it == where_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->frame;
}

void FrameCache::insert(std::size_t key, std::shared_ptr<const Frame> frame) {
  if (!frame) return;
  std::size_t bytes = bytes_of(*frame);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = where_.find(key);
  if (it != where_.end()) {
    bytes_ -= bytes_of(*it->second->frame);
    lru_.erase(it->second);
    where_.erase(it);
  }
  if (bytes > capacity_) return;
  if (eviction_ == Eviction::none && bytes_ + bytes > capacity_) return;  // full: keeps what it holds
  evict_to(capacity_ - bytes);
  lru_.push_front(Entry{key, std::move(frame)});
  where_[key] = lru_.begin();
  bytes_ += bytes;
}

void FrameCache::evict_to(std::size_t budget) {
  while (bytes_ > budget && !lru_.empty()) {
    const Entry& last = lru_.back();
    bytes_ -= bytes_of(*last.frame);
    where_.erase(last.key);
    lru_.pop_back();
  }
}

void FrameCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  where_.clear();
  bytes_ = 0;
}

std::size_t FrameCache::size_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}
std::size_t FrameCache::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}
std::size_t FrameCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}
std::size_t FrameCache::misses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misses_;
}

}  // namespace driftscan
