// The distributed DFT's plan logic: see dft_plan_logic.hpp. The reasons for
// each choice (measured on the development machine) are in
// docs/distributed-dft.md.
#include "driftscan/mpi/dft/dft_plan_logic.hpp"

#include <algorithm>

namespace driftscan::mpi::dft {

namespace {

// Do the nonempty `parts` (in order) tile `whole` along `axis` only, each
// spanning `whole` in the other axes?
bool tiles_along(const Box3& whole, const std::vector<Box3>& parts, int axis) {
  std::int64_t next = whole.lo[axis];
  for (const Box3& p : parts) {
    if (p.empty()) continue;
    for (int d = 0; d < 3; ++d)
      if (d != axis && (p.lo[d] != whole.lo[d] || p.hi[d] != whole.hi[d])) return false;
    if (p.lo[axis] != next) return false;
    next = p.hi[axis];
  }
  return whole.empty() || next == whole.hi[axis];
}

AxisOrder with_first(int first, const AxisOrder& rest_from) {
  AxisOrder o{first, 0, 0};
  int k = 1;
  for (int a : rest_from)
    if (a != first) o[k++] = a;
  return o;
}

}  // namespace

StagePlan plan_stages(Decomposition decomp, const DftOptions& opt) {
  const int K = stage_count(decomp);
  const bool real = opt.real_to_complex;
  const bool fwd = opt.direction == DftDirection::forward;
  // A complex-to-real transform from natural input first goes to the last
  // stage (its FFTs run from the last stage back, the c2r last of all).
  const bool prefix = opt.input_layout == DftLayout::natural && real && !fwd;
  const bool from_end = opt.input_layout == DftLayout::transposed || prefix;
  StagePlan plan;
  if (prefix) plan.visits.push_back({0, {}, false, {}});
  for (int k = 0; k < K; ++k) {
    const int stage = from_end ? K - 1 - k : k;
    StageVisit v{stage, stage_axes(decomp, stage, opt.slab_axis2_last), false, {}};
    if (k > 0) {
      const int previous = plan.visits.back().stage;
      v.exchange = true;
      v.comm_dims = stage_comm_dims(decomp, std::max(stage, previous));
    } else if (prefix) {
      v.exchange = true;
    }
    std::vector<int>& axes = v.axes;
    if (real && std::find(axes.begin(), axes.end(), 2) != axes.end()) {
      // r2c must come first (the data is real), c2r last (the result is real).
      axes.erase(std::find(axes.begin(), axes.end(), 2));
      if (fwd) axes.insert(axes.begin(), 2);
      else axes.push_back(2);
    }
    plan.visits.push_back(v);
  }
  plan.out_stage = opt.output_layout == DftLayout::natural ? 0 : K - 1;
  if (plan.visits.back().stage != plan.out_stage) plan.visits.push_back({plan.out_stage, {}, true, {}});
  return plan;
}

ExchangeChoice choose_exchange(const ExchangeShape& x, const DftOptions& opt, const Consensus& agree) {
  using How = ExchangeChoice::How;
  const int p = static_cast<int>(x.src.size());
  ExchangeChoice c;

  // The axis along which the members' source boxes differ (the receivers'
  // block axis); -1 when none or several, or not the same on every rank.
  int q = -1, nq = 0;
  for (int a = 0; a < 3; ++a) {
    bool differs = false;
    for (int j = 1; j < p; ++j)
      if (x.src[j].lo[a] != x.src[0].lo[a] || x.src[j].hi[a] != x.src[0].hi[a]) differs = true;
    if (differs) q = a, ++nq;
  }
  if (nq != 1) q = -1;
  q = agree.same_axis(q);
  const AxisOrder target = x.next_is_final ? row_major_order : x.cur_order;

  bool a_ok = true;  // transform axis whole in every block
  if (x.has_fft)
    for (const Box3& s : x.sends)
      if (!s.empty() && s.size(x.fft_axis) != x.after.size(x.fft_axis)) a_ok = false;
  a_ok = agree.all(a_ok);
  const bool b_ok = x.has_fft && agree.all(tiles_along(x.after, x.sends, x.fft_axis));
  const bool contiguous_now = !x.has_fft && agree.all(tiles_along(x.after, x.sends, x.cur_order[0]));

  // How the send buffer is filled and in which block order.
  auto recv_is_box = [&](const AxisOrder& o) { return agree.all(tiles_along(x.next_box, x.recvs, o[0])); };
  c.sigma = x.cur_order;
  if (x.has_fft) {
    AxisOrder sa = c.sigma;
    bool a_box = false;
    if (a_ok) {
      if (q >= 0 && (!x.next_is_final || q == 0)) sa = with_first(q, target);
      else sa = target;
      a_box = recv_is_box(sa);
    }
    if (a_ok && a_box) c.how = How::fused_blocks, c.sigma = sa;
    else if (b_ok) c.how = How::fused_slowest, c.sigma = with_first(x.fft_axis, target);
    else if (a_ok) c.how = How::fused_blocks, c.sigma = sa;
    else c.how = How::pack, c.sigma = x.cur_order;
    // Variant: the FFT in place (FFTW is fastest with equal strides in and
    // out), then packed into the same block layout.
    if (opt.pack_after_fft && x.cur_buf != IN && x.fft_c2c) c.how = How::pack;
  } else if (contiguous_now) {
    c.how = How::send_as_is;
  } else {
    c.how = How::pack;  // sigma keeps the source's contiguous runs
  }

  c.send_buf = c.how == How::send_as_is ? x.cur_buf : SEND;
  // Where the blocks land, and whether they need unpacking.
  c.box_now = recv_is_box(c.sigma);
  c.direct_out =
      x.next_is_final && c.box_now && box_strides(x.next_box, c.sigma) == box_strides(x.next_box, row_major_order);
  // Blocks are written with one cache line of padding after every slice
  // along sigma[0] (sender and receiver agree: the pad is global). Slices
  // of a power-of-two size put a column's elements in one cache set; the
  // next FFT along sigma[0] then misses on every access (measured on 256^3:
  // that FFT 26% faster with the pad).
  {
    const Box3& nb = x.next_box;
    const std::int64_t slice = nb.size(c.sigma[1]) * nb.size(c.sigma[2]);
    const auto eb = static_cast<std::int64_t>(x.elem_bytes());
    const bool big = nb.empty() || (slice * eb >= 4096 && nb.size(c.sigma[0]) > 1);
    // Collective on every rank (direct_out is a local finding).
    if (agree.all(c.how != How::send_as_is && !c.direct_out && big)) c.pad = 64 / eb;
  }
  c.recv_buf = c.direct_out ? OUT : (c.send_buf == RECV ? free_work(x.cur_buf) : RECV);
  // Optionally the own block skips MPI: written straight to where it is received.
  // (Not when the data being sent sits in the receive buffer itself.)
  c.self_direct =
      opt.local_block_direct && (c.how == How::fused_blocks || c.how == How::pack) && x.cur_buf != c.recv_buf;
  // Where unpacked blocks go (when the received blocks are not yet the new
  // box). Into the user's output, the own block, written directly, goes
  // straight there instead. (Not into a work buffer: the chunking of local
  // runs would take a buffer first written by the unpack for a scratch.)
  c.unpack_needed = !c.direct_out && !(c.box_now && !x.next_is_final);
  c.unpack_buf = x.next_is_final ? OUT : free_work(c.recv_buf);
  c.self_to_unpacked = c.self_direct && c.unpack_needed && x.next_is_final && x.cur_buf != OUT;
  // Otherwise, when the blocks are unpacked into the output anyway, the own
  // block is copied from the send buffer straight to its place there (one
  // copy instead of a memcpy to the receive buffer and an unpack). Not into
  // a work buffer: the next stage's FFTs write the send buffer, and a copy
  // reading it in the same run would stop that run being chunked.
  c.own_from_send = agree.all(!c.self_direct && c.unpack_needed && c.how != How::send_as_is && x.next_is_final);
  return c;
}

ExchangeCounts exchange_counts_for(const ExchangeShape& x, const ExchangeChoice& c, MPI_Datatype scalar) {
  const int p = static_cast<int>(x.src.size());
  ExchangeCounts counts = exchange_counts(x.src, x.dst, x.me, x.scalars_per_elem);
  counts.scalar = scalar;
  if (c.pad) {
    std::vector<std::int64_t> send_extra(p, 0), recv_extra(p, 0);
    for (int j = 0; j < p; ++j) {
      if (!x.sends[j].empty()) send_extra[j] = x.sends[j].size(c.sigma[0]) * c.pad * x.scalars_per_elem;
      if (!x.recvs[j].empty()) recv_extra[j] = x.recvs[j].size(c.sigma[0]) * c.pad * x.scalars_per_elem;
    }
    counts.grow_blocks(send_extra, recv_extra);
  }
  if (c.self_direct || c.own_from_send) {
    counts.send_counts[x.me] = counts.recv_counts[x.me] = 0;
    counts.even = false;
  } else if (static_cast<std::int64_t>(counts.send_counts[x.me]) * static_cast<std::int64_t>(x.scalar_bytes) >=
             ExchangeCounts::own_copy_threshold_bytes) {
    // Uniform across ranks where it matters: an even exchange has one block size.
    counts.copy_own_block_outside_mpi();
  }
  return counts;
}

StridedView ExchangeChoice::block_view(std::int64_t offset, const Box3& b) const {
  StridedView v = StridedView::dense(offset, b, sigma);
  if (b.size(sigma[0]) > 1) v.stride[sigma[0]] += pad;
  return v;
}

}  // namespace driftscan::mpi::dft
