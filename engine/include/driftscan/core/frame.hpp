#pragma once
// A Frame is one image of a series in the engine's working type (float32,
// row-major, pixel (x, y) at index y * width + x, pixel centres at integer
// coordinates). Every reader converts to it; every algorithm consumes it.
#include <cstddef>
#include <vector>

namespace driftscan {

struct Frame {
  int width = 0;
  int height = 0;
  std::vector<float> pixels;

  Frame() = default;
  Frame(int w, int h, float fill = 0.0f)
      : width(w), height(h), pixels(static_cast<std::size_t>(w) * static_cast<std::size_t>(h), fill) {}

  bool empty() const { return pixels.empty(); }
  std::size_t size() const { return pixels.size(); }
  float& at(int x, int y) { return pixels[static_cast<std::size_t>(y) * width + x]; }
  float at(int x, int y) const { return pixels[static_cast<std::size_t>(y) * width + x]; }
  float* row(int y) { return pixels.data() + static_cast<std::size_t>(y) * width; }
  const float* row(int y) const { return pixels.data() + static_cast<std::size_t>(y) * width; }
};

}  // namespace driftscan
