#include "driftscan/mpi/dft/dft_geometry.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "driftscan/core/error.hpp"

namespace driftscan::mpi {

std::int64_t Box3::count() const {
  std::int64_t c = 1;
  for (int d = 0; d < 3; ++d) c *= std::max<std::int64_t>(0, hi[d] - lo[d]);
  return c;
}

Box3 Box3::intersect(const Box3& other) const {
  Box3 b;
  for (int d = 0; d < 3; ++d) {
    b.lo[d] = std::max(lo[d], other.lo[d]);
    b.hi[d] = std::max(b.lo[d], std::min(hi[d], other.hi[d]));
  }
  return b;
}

std::string Box3::to_string() const {
  std::ostringstream s;
  for (int d = 0; d < 3; ++d) s << (d ? "x" : "") << '[' << lo[d] << ',' << hi[d] << ')';
  return s.str();
}

Extent3 box_strides(const Box3& box, const AxisOrder& order) {
  Extent3 stride{0, 0, 0};
  std::int64_t s = 1;
  for (int k = 2; k >= 0; --k) {
    stride[order[k]] = s;
    s *= std::max<std::int64_t>(1, box.size(order[k]));
  }
  return stride;
}

Range block_range(std::int64_t n, int parts, int index) {
  const std::int64_t base = n / parts, extra = n % parts;
  const std::int64_t lo = index * base + std::min<std::int64_t>(index, extra);
  return {lo, lo + base + (index < extra ? 1 : 0)};
}

Range sub_range(Range outer, int parts, int index) {
  Range r = block_range(outer.hi - outer.lo, parts, index);
  return {outer.lo + r.lo, outer.lo + r.hi};
}

std::string to_string(Decomposition d) {
  switch (d) {
    case Decomposition::slab_pencil: return "slab-pencil";
    case Decomposition::pencil: return "pencil-pencil-pencil";
    case Decomposition::volumetric: return "volumetric";
    case Decomposition::automatic: return "auto";
  }
  return "?";
}

Decomposition parse_decomposition(const std::string& name) {
  if (name == "slab" || name == "slab-pencil") return Decomposition::slab_pencil;
  if (name == "pencil" || name == "pencil-pencil-pencil") return Decomposition::pencil;
  if (name == "volumetric" || name == "brick") return Decomposition::volumetric;
  if (name == "auto") return Decomposition::automatic;
  throw bad_input("unknown DFT decomposition '" + name +
                  "' (expected slab-pencil, pencil-pencil-pencil, volumetric or auto)");
}

int grid_rank(Decomposition d) {
  switch (d) {
    case Decomposition::slab_pencil: return 1;
    case Decomposition::pencil: return 2;
    case Decomposition::volumetric: return 3;
    case Decomposition::automatic: return 0;
  }
  return 0;
}

namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Surface of the largest box of a split (what a rank sends and receives scales with it).
std::int64_t surface(std::int64_t a, std::int64_t b, std::int64_t c) { return a * b + b * c + a * c; }
}  // namespace

std::vector<int> min_surface_grid(Decomposition d, const Extent3& n, int ranks) {
  std::vector<int> best;
  std::int64_t best_surface = std::numeric_limits<std::int64_t>::max();
  switch (d) {
    case Decomposition::slab_pencil: return {ranks};
    case Decomposition::pencil:
      for (int p0 = ranks; p0 >= 1; --p0) {
        if (ranks % p0) continue;
        const int p1 = ranks / p0;
        const std::int64_t s = surface(ceil_div(n[0], p0), ceil_div(n[1], p1), n[2]);
        if (s < best_surface) best_surface = s, best = {p0, p1};
      }
      return best;
    case Decomposition::volumetric:
      for (int p0 = ranks; p0 >= 1; --p0) {
        if (ranks % p0) continue;
        for (int p1 = ranks / p0; p1 >= 1; --p1) {
          if ((ranks / p0) % p1) continue;
          const int p2 = ranks / p0 / p1;
          const std::int64_t s = surface(ceil_div(n[0], p0), ceil_div(n[1], p1), ceil_div(n[2], p2));
          if (s < best_surface) best_surface = s, best = {p0, p1, p2};
        }
      }
      return best;
    case Decomposition::automatic: break;
  }
  return min_surface_grid(choose_decomposition(n, ranks), n, ranks);
}

Decomposition choose_decomposition(const Extent3& n, int ranks) {
  // The paper's finding: one all-to-all (slab) wins at few processes; pencils
  // are needed once slabs would leave ranks empty.
  return (ranks <= n[0] && ranks <= n[1]) ? Decomposition::slab_pencil : Decomposition::pencil;
}

int stage_count(Decomposition d) {
  switch (d) {
    case Decomposition::slab_pencil: return 2;
    case Decomposition::pencil: return 3;
    case Decomposition::volumetric: return 4;
    case Decomposition::automatic: break;
  }
  return 0;
}

std::vector<int> stage_axes(Decomposition d, int stage, bool slab_axis2_last) {
  switch (d) {
    // Axis 1 last: its FFT writes the all-to-all blocks contiguously (the
    // receiver unpacks). Axis 2 last: its FFT writes each destination's block
    // row-major, the blocks arrive as one box. The plan times both.
    case Decomposition::slab_pencil:
      if (stage != 0) return {0};
      return slab_axis2_last ? std::vector<int>{1, 2} : std::vector<int>{2, 1};
    case Decomposition::pencil: return {2 - stage};
    case Decomposition::volumetric:
      if (stage == 0) return {};
      return {3 - stage};
    case Decomposition::automatic: break;
  }
  return {};
}

std::vector<int> stage_comm_dims(Decomposition d, int stage) {
  switch (d) {
    case Decomposition::slab_pencil: return {0};
    case Decomposition::pencil: return stage == 1 ? std::vector<int>{1} : std::vector<int>{0};
    case Decomposition::volumetric:
      if (stage == 1) return {2};
      if (stage == 2) return {1, 2};
      return {0};
    case Decomposition::automatic: break;
  }
  return {};
}

Box3 stage_box(Decomposition d, int stage, const std::vector<int>& g, const std::vector<int>& c, const Extent3& n) {
  Range r[3] = {{0, n[0]}, {0, n[1]}, {0, n[2]}};
  switch (d) {
    case Decomposition::slab_pencil: r[stage == 0 ? 0 : 1] = block_range(n[stage == 0 ? 0 : 1], g[0], c[0]); break;
    case Decomposition::pencil:
      if (stage == 0) r[0] = block_range(n[0], g[0], c[0]), r[1] = block_range(n[1], g[1], c[1]);
      if (stage == 1) r[0] = block_range(n[0], g[0], c[0]), r[2] = block_range(n[2], g[1], c[1]);
      if (stage == 2) r[1] = block_range(n[1], g[0], c[0]), r[2] = block_range(n[2], g[1], c[1]);
      break;
    case Decomposition::volumetric: {
      const int p12 = g[1] * g[2], c12 = c[1] * g[2] + c[2];
      if (stage == 0) {
        for (int a = 0; a < 3; ++a) r[a] = block_range(n[a], g[a], c[a]);
      } else if (stage == 1) {
        r[0] = block_range(n[0], g[0], c[0]);
        r[1] = sub_range(block_range(n[1], g[1], c[1]), g[2], c[2]);
      } else if (stage == 2) {
        r[0] = block_range(n[0], g[0], c[0]);
        r[2] = block_range(n[2], p12, c12);
      } else {
        r[1] = block_range(n[1], g[0], c[0]);
        r[2] = block_range(n[2], p12, c12);
      }
      break;
    }
    case Decomposition::automatic: break;
  }
  Box3 b;
  for (int a = 0; a < 3; ++a) b.lo[a] = r[a].lo, b.hi[a] = r[a].hi;
  return b;
}

}  // namespace driftscan::mpi
