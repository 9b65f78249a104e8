#pragma once
// Geometry of the distributed 3-D DFT: index boxes, balanced block splits
// (uneven sizes and empty blocks allowed), process grids and the layouts
// ("stages") each decomposition passes through.
//
// Global arrays are n0 x n1 x n2, axis 2 fastest (C order). Every rank owns
// one box of it per stage; user-facing arrays are stored row-major inside the
// box: element (i0, i1, i2) at ((i0-lo0)*e1 + (i1-lo1))*e2 + (i2-lo2), where
// e_d = hi_d - lo_d.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace driftscan::mpi {

using Extent3 = std::array<std::int64_t, 3>;
// A memory order: axis order[0] slowest ... order[2] fastest.
using AxisOrder = std::array<int, 3>;
inline constexpr AxisOrder row_major_order{0, 1, 2};

// Half-open index box [lo, hi) in the global array.
struct Box3 {
  Extent3 lo{0, 0, 0};
  Extent3 hi{0, 0, 0};

  std::int64_t size(int axis) const { return hi[axis] - lo[axis]; }
  std::int64_t count() const;
  bool empty() const { return count() == 0; }
  Box3 intersect(const Box3& other) const;
  bool operator==(const Box3& other) const { return lo == other.lo && hi == other.hi; }
  bool operator!=(const Box3& other) const { return !(*this == other); }
  std::string to_string() const;  // "[0,8)x[0,4)x[0,3)"
};

// Element strides of `box` stored in memory order `order` (densely packed).
Extent3 box_strides(const Box3& box, const AxisOrder& order);

struct Range {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};
// Balanced split of [0, n) into `parts` blocks: the first n % parts blocks get
// one more element; blocks are empty when parts > n.
Range block_range(std::int64_t n, int parts, int index);
// Block `index` of `parts` inside `outer` (a hierarchical split).
Range sub_range(Range outer, int parts, int index);

enum class Decomposition { slab_pencil, pencil, volumetric, automatic };
std::string to_string(Decomposition d);
// Accepts "slab", "slab-pencil", "pencil", "pencil-pencil-pencil",
// "volumetric", "auto"; throws driftscan::Error otherwise.
Decomposition parse_decomposition(const std::string& name);
// Number of process-grid dimensions a decomposition uses (1, 2 or 3).
int grid_rank(Decomposition d);

// Process grid for `d` on `ranks` processes minimising the surface of the
// input boxes (heFFTe's minimum-surface rule: the surface is what crosses the
// network). Ties go to more processes on the slower axes (longer contiguous
// runs in the row-major local boxes).
std::vector<int> min_surface_grid(Decomposition d, const Extent3& n, int ranks);
// Slab-pencil while every rank gets a slab (ranks <= n0 and n1), else pencils.
Decomposition choose_decomposition(const Extent3& n, int ranks);

// The layouts a decomposition visits, in forward order (stage 0 = natural
// input layout, last stage = transposed output layout):
//   slab-pencil  grid (P):        S0 a0/P (FFT a1,a2)  S1 a1/P (FFT a0)
//   pencil       grid (p0,p1):    S0 a0/p0,a1/p1 (a2)  S1 a0/p0,a2/p1 (a1)
//                                 S2 a1/p0,a2/p1 (a0)
//   volumetric   grid (p0,p1,p2): S0 brick a0/p0,a1/p1,a2/p2 (none)
//                                 S1 a0/p0, a1/(p1 then p2) (a2)
//                                 S2 a0/p0, a2/(p1*p2) (a1)
//                                 S3 a1/p0, a2/(p1*p2) (a0)
// Reshape into stage s (s > 0) runs on the sub-communicator of the grid
// dimensions listed by stage_comm_dims(d, s).
int stage_count(Decomposition d);
// FFT axes of a stage in execution order (slab stage 0: {2, 1}, or {1, 2}
// with slab_axis2_last).
std::vector<int> stage_axes(Decomposition d, int stage, bool slab_axis2_last = false);
std::vector<int> stage_comm_dims(Decomposition d, int stage);
Box3 stage_box(Decomposition d, int stage, const std::vector<int>& grid, const std::vector<int>& coords,
               const Extent3& n);

}  // namespace driftscan::mpi
