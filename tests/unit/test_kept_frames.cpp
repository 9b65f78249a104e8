// KeptFrames: the frames a reader going over the series again and again
// finds decoded, within a byte budget, and every frame the source's.
#include "driftscan/core/kept_frames.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "driftscan/core/frame_cache.hpp"
#include "driftscan/core/frame_source.hpp"

namespace driftscan {
namespace {

Frame numbered_frame(int k) {
  Frame f(8, 6);
  for (std::size_t i = 0; i < f.pixels.size(); ++i) f.pixels[i] = static_cast<float>(100 * k) + static_cast<float>(i);
  return f;
}

// Frames held in memory that count how often they were read (what a
// decoder would have decoded).
class CountedFrames : public FrameVector {
 public:
  explicit CountedFrames(int n) {
    for (int k = 0; k < n; ++k) push_back(numbered_frame(k));
  }
  Frame frame(std::size_t k) const override {
    ++reads;
    return FrameVector::frame(k);
  }
  mutable std::atomic<int> reads{0};
};

std::size_t frame_bytes() { return FrameCache::bytes_of(numbered_frame(0)); }

// The correction's cycle over the series: a least-recently-used cache
// smaller than the series never hits; kept frames are found on every pass.
TEST(KeptFrames, CyclesOverTheSeriesFindTheFramesThatFit) {
  const CountedFrames source(5);
  const KeptFrames kept(source, 2 * frame_bytes() + frame_bytes() / 2);
  std::vector<std::shared_ptr<const Frame>> first(5);
  for (int pass = 0; pass < 3; ++pass)
    for (std::size_t k = 0; k < 5; ++k) {
      const std::shared_ptr<const Frame> f = kept.shared_frame(k);
      EXPECT_EQ(f->pixels, numbered_frame(static_cast<int>(k)).pixels) << "pass " << pass << " frame " << k;
      if (pass == 0) first[k] = f;
      if (k < 2) {
        EXPECT_EQ(f.get(), first[k].get()) << "frame " << k << " is kept: the same frame, not a copy";
      }
    }
  EXPECT_EQ(kept.cache().count(), 2u);
  EXPECT_LE(kept.cache().size_bytes(), kept.cache().capacity_bytes());
  EXPECT_EQ(source.reads, 2 + 3 * 3);  // frames 0 and 1 read once, the other three on every pass
  EXPECT_EQ(kept.cache().hits(), 2u * 2u);
  EXPECT_EQ(kept.frame(4).pixels, numbered_frame(4).pixels);  // frame() too: the source's values
  EXPECT_EQ(kept.frame_count(), 5u);
  EXPECT_EQ(kept.width(), 8);
  EXPECT_EQ(kept.height(), 6);

  FrameCache lru(2 * frame_bytes() + frame_bytes() / 2);  // the same budget, least recent evicted
  std::size_t hits = 0;
  for (int pass = 0; pass < 3; ++pass)
    for (std::size_t k = 0; k < 5; ++k) {
      if (lru.find(k)) {
        ++hits;
      } else {
        lru.insert(k, std::make_shared<const Frame>(numbered_frame(static_cast<int>(k))));
      }
    }
  EXPECT_EQ(hits, 0u);
}

TEST(KeptFrames, NoBudgetKeepsNothingAndReadsTheSource) {
  const CountedFrames source(3);
  const KeptFrames kept(source, 0);
  for (std::size_t k = 0; k < 3; ++k)
    EXPECT_EQ(kept.shared_frame(k)->pixels, numbered_frame(static_cast<int>(k)).pixels);
  EXPECT_EQ(kept.shared_frame(0)->pixels, numbered_frame(0).pixels);
  EXPECT_EQ(kept.cache().count(), 0u);
  EXPECT_EQ(source.reads, 4);
}

// Eviction::none: a full cache keeps what it holds; replacing a key it
// holds still works.
TEST(FrameCache, WithoutEvictionAFullCacheKeepsWhatItHolds) {
  FrameCache cache(2 * frame_bytes(), FrameCache::Eviction::none);
  for (int k = 0; k < 4; ++k) cache.insert(std::size_t(k), std::make_shared<const Frame>(numbered_frame(k)));
  EXPECT_EQ(cache.count(), 2u);
  ASSERT_TRUE(cache.find(0));
  ASSERT_TRUE(cache.find(1));
  EXPECT_FALSE(cache.find(2));
  EXPECT_FALSE(cache.find(3));
  cache.insert(1, std::make_shared<const Frame>(numbered_frame(7)));
  EXPECT_EQ(cache.find(1)->pixels, numbered_frame(7).pixels);
  EXPECT_EQ(cache.count(), 2u);
}

}  // namespace
}  // namespace driftscan
