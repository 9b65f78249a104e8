// The distributed DFT plan compiles the decomposition's chain of layouts into
// a flat list of steps (local FFT, copy, exchange) over six buffers: the
// user's input and output and four internal ones. Packing and unpacking are
// fused into the FFTs whenever the block structure allows:
//  (a) the last FFT of a stage writes each destination's block straight into
//      the send buffer (one guru plan per block) when the transform axis is
//      not split among the destinations;
//  (b) otherwise, when the destinations split only the transform axis, the
//      FFT writes with that axis slowest, so the blocks come out contiguous;
//  (c) on the receiving side no unpack is needed when the received blocks,
//      concatenated, are already the new box in some memory order (the next
//      FFT reads any strides).
// Only what cannot be fused becomes an explicit strided copy. Blocks are
// padded by a cache line per slice, and the plan's variants (own block,
// slab FFT order, in-place-then-pack, final FFT through a work buffer) are
// timed by the constructor; docs/distributed-dft.md says why each exists.
//
// The decisions (the stages visited; for each exchange which of (a)-(c), the
// padding, the own block) are the plan logic, dft_plan_logic.cpp; here they
// become steps, which are then chunked, planned with FFTW and run.
#include "driftscan/mpi/dft/dft_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <sstream>

#include <omp.h>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/dft/dft_plan_logic.hpp"
#include "driftscan/mpi/dft/dft_reshape.hpp"

namespace driftscan::mpi {

using namespace dft;  // the plan logic: buffers, stage plan, exchange choices

std::string to_string(DftLayout l) { return l == DftLayout::natural ? "natural" : "transposed"; }

DftLayout parse_layout(const std::string& name) {
  if (name == "natural") return DftLayout::natural;
  if (name == "transposed") return DftLayout::transposed;
  throw bad_input("unknown DFT layout '" + name + "' (expected natural or transposed)");
}

DftTimes& DftTimes::operator+=(const DftTimes& o) {
  fft += o.fft, pack += o.pack, alltoall += o.alltoall, unpack += o.unpack, total += o.total;
  return *this;
}

void agree_on_errors(MPI_Comm comm, const std::string& local_error) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  struct {
    int bad;
    int rank;
  } mine{local_error.empty() ? 0 : 1, rank}, worst{0, 0};
  MPI_Allreduce(&mine, &worst, 1, MPI_2INT, MPI_MAXLOC, comm);
  if (!worst.bad) return;
  std::string msg = local_error;
  int len = static_cast<int>(msg.size());
  MPI_Bcast(&len, 1, MPI_INT, worst.rank, comm);
  msg.resize(static_cast<std::size_t>(len));
  MPI_Bcast(msg.data(), len, MPI_CHAR, worst.rank, comm);
  throw bad_input(msg);
}

namespace {

enum Phase { ph_fft = 0, ph_pack = 1, ph_alltoall = 2, ph_unpack = 3 };

// FftDesc::axis of a transform over all three axes at once (one rank).
constexpr int whole_array = -1;

struct FftDesc {
  FftKind kind = FftKind::c2c;
  int axis = 0;        // or whole_array
  std::int64_t n = 0;  // logical length
};

struct Step {
  enum Kind { fft, copy, exchange, scale } kind = copy;
  Phase phase = ph_fft;
  int src = IN, dst = OUT;
  StridedView src_view, dst_view;
  // fft
  FftDesc desc;
  bool src_real = false, dst_real = false;
  LocalFft* plan = nullptr;
  // exchange
  int comm = -1;
  ExchangeCounts counts;
  // copy: element bytes; scale: count of real scalars and factor
  std::size_t elem = 16;
  std::int64_t scalars = 0;
  double factor = 1.0;
};

// Where the data is now. `order` is carried explicitly (not derived from the
// strides, which tie on axes of extent 1 and would differ between ranks).
struct Cursor {
  int buf = IN;
  StridedView view;
  bool real = false;
  AxisOrder order = row_major_order;
};

std::size_t view_end_bytes(const StridedView& v, std::size_t elem) {
  if (v.box.empty()) return 0;
  std::int64_t last = v.offset;
  for (int d = 0; d < 3; ++d) last += (v.box.size(d) - 1) * v.stride[d];
  return static_cast<std::size_t>(last + 1) * elem;
}

// Where the received blocks are unpacked to: the new box, row-major when it
// is the output, else in the blocks' order.
StridedView unpack_view(const ExchangeShape& x, const ExchangeChoice& c) {
  return StridedView::dense(0, x.next_box, x.next_is_final ? row_major_order : c.sigma);
}

}  // namespace

struct DftPlan::Impl {
  ~Impl();
  MPI_Comm world = MPI_COMM_NULL;  // the caller's communicator (not owned)
  MPI_Comm cart = MPI_COMM_NULL;
  std::vector<MPI_Comm> comms;                 // sub-communicators (and cart itself) used by exchanges
  std::vector<std::vector<int>> comm_members;  // cart ranks of each comm, in comm order
  int rank = 0, size = 1;
  DftOptions opt;
  Decomposition decomp = Decomposition::slab_pencil;
  std::vector<int> grid;
  std::vector<std::vector<int>> coords;  // of every cart rank
  Extent3 n_real{0, 0, 0}, n_cplx{0, 0, 0};
  Box3 in_box, out_box;
  bool in_real = false, out_real = false;
  std::vector<Step> steps;
  std::deque<LocalFft> plans;  // stable addresses
  std::vector<std::size_t> need = std::vector<std::size_t>(NBUF, 0);
  FftwBuffer buffers[NBUF];
  std::vector<DftExchangeInfo> exchange_info;

  std::size_t rb = 8;                                             // bytes of a real scalar: 4 (single) or 8 (double)
  std::size_t eb(bool real) const { return real ? rb : 2 * rb; }  // bytes of an element
  MPI_Datatype scalar_type() const { return rb == 4 ? MPI_FLOAT : MPI_DOUBLE; }
  Extent3 dims(bool real) const { return real ? n_real : n_cplx; }
  Box3 box_of(int stage, int cart_rank, bool real) const {
    return stage_box(decomp, stage, grid, coords[cart_rank], dims(real));
  }

  int comm_for(const std::vector<int>& keep) {
    // keep empty: the whole cart communicator
    std::vector<int> members;
    const int nd = static_cast<int>(grid.size());
    if (keep.empty()) {
      for (int r = 0; r < size; ++r) members.push_back(r);
    } else {
      int count = 1;
      for (int k : keep) count *= grid[k];
      for (int j = 0; j < count; ++j) {
        std::vector<int> c = coords[rank];
        int rem = j;
        for (int k = static_cast<int>(keep.size()) - 1; k >= 0; --k) {
          c[keep[k]] = rem % grid[keep[k]];
          rem /= grid[keep[k]];
        }
        int r = 0;
        for (int d = 0; d < nd; ++d) r = r * grid[d] + c[d];
        members.push_back(r);
      }
    }
    MPI_Comm c = MPI_COMM_NULL;
    if (keep.empty()) {
      MPI_Comm_dup(cart, &c);
    } else {
      std::vector<int> remain(nd, 0);
      for (int k : keep) remain[k] = 1;
      MPI_Cart_sub(cart, remain.data(), &c);
    }
    comms.push_back(c);
    comm_members.push_back(members);
    return static_cast<int>(comms.size()) - 1;
  }

  void use(int buf, const StridedView& v, std::size_t elem) {
    need[buf] = std::max(need[buf], view_end_bytes(v, elem));
  }

  // Global agreement (every rank of the plan) on a locally evaluated condition.
  bool all(bool local) const {
    int v = local ? 1 : 0, r = 0;
    MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_MIN, cart);
    return r == 1;
  }
  // `axis` when every rank of the plan gives the same one, else -1.
  int same_axis(int axis) const {
    int qs[2] = {axis, -axis}, r[2] = {0, 0};
    MPI_Allreduce(qs, r, 2, MPI_INT, MPI_MAX, cart);
    return r[0] == -r[1] ? axis : -1;
  }
  Consensus consensus() const {
    return {[this](bool local) { return all(local); }, [this](int axis) { return same_axis(axis); }};
  }

  void add_fft(const FftDesc& d, const Cursor& src, int dst_buf, const StridedView& dst_view, bool dst_real) {
    if (src.view.box.empty()) return;
    Step s;
    s.kind = Step::fft;
    s.phase = ph_fft;
    s.desc = d;
    s.src = src.buf, s.src_view = src.view, s.src_real = src.real;
    s.dst = dst_buf, s.dst_view = dst_view, s.dst_real = dst_real;
    use(s.src, s.src_view, eb(src.real));
    use(s.dst, s.dst_view, eb(dst_real));
    steps.push_back(s);
  }

  void add_copy(Phase ph, int src, const StridedView& sv, int dst, const StridedView& dv, bool real) {
    if (sv.box.empty()) return;
    Step s;
    s.kind = Step::copy;
    s.phase = ph;
    s.src = src, s.src_view = sv, s.dst = dst, s.dst_view = dv;
    s.elem = eb(real);
    use(src, sv, s.elem);
    use(dst, dv, s.elem);
    steps.push_back(s);
  }

  FftKind kind_for(int axis, bool real_now) const {
    if (!opt.real_to_complex || axis != 2) return FftKind::c2c;
    if (opt.direction == DftDirection::forward) return real_now ? FftKind::r2c : FftKind::c2c;
    return FftKind::c2r;
  }

  // The data once `d` has run on `cur` (or as it is when !has_fft): real or
  // complex, and its box (the axis-2 extent changes for r2c and c2r).
  static bool real_after(const Cursor& cur, bool has_fft, const FftDesc& d) {
    if (!has_fft) return cur.real;
    return d.kind == FftKind::c2r ? true : d.kind == FftKind::r2c ? false : cur.real;
  }
  Box3 box_after(const Cursor& cur, bool has_fft, const FftDesc& d) const {
    Box3 after = cur.view.box;
    if (has_fft && d.kind != FftKind::c2c) {
      const Extent3 nn = dims(real_after(cur, has_fft, d));
      after.lo[2] = 0, after.hi[2] = nn[2];
    }
    return after;
  }

  // Runs `d` on `cur` in place when it can (FFTW is fastest with equal
  // strides in and out), else into a free work buffer in `order`.
  Cursor add_local_fft(const Cursor& cur, const FftDesc& d, const AxisOrder& order) {
    const bool real = real_after(cur, true, d);
    const bool in_place = cur.buf != IN && d.kind == FftKind::c2c;
    const int out_buf = in_place ? cur.buf : free_work(cur.buf);
    const StridedView ov = in_place ? cur.view : StridedView::dense(0, box_after(cur, true, d), order);
    add_fft(d, cur, out_buf, ov, real);
    return {out_buf, ov, real, order};
  }

  // Applies `d` (or the identity when !has_fft) to `cur`, which holds this
  // rank's box of stage `stage`, and delivers the result to stage
  // `next_stage` through an exchange on comm `ci`, or to OUT when
  // next_stage < 0 (the end of the plan). The FFT is fused into the
  // exchange's packing whenever the blocks allow.
  void deliver(Cursor& cur, int stage, bool has_fft, const FftDesc& d, int next_stage, bool next_is_final, int ci) {
    if (next_stage < 0) return deliver_to_output(cur, has_fft, d);
    const ExchangeShape x = exchange_shape(cur, stage, has_fft, d, next_stage, next_is_final, ci);
    if (all(x.src.size() == 1)) return reorder_locally(cur, has_fft, d, x);
    const ExchangeChoice c = choose_exchange(x, opt, consensus());
    const ExchangeCounts counts = exchange_counts_for(x, c, scalar_type());
    fill_send_buffer(cur, has_fft, d, x, c, counts);
    add_exchange(x, c, counts, ci);
    cur = receive(x, c, counts);
  }

  // The end of the plan: into OUT, row-major.
  void deliver_to_output(Cursor& cur, bool has_fft, const FftDesc& d) {
    if (!has_fft && cur.buf == OUT) return;
    const bool real = real_after(cur, has_fft, d);
    const StridedView ov = StridedView::dense(0, box_after(cur, has_fft, d), row_major_order);
    if (has_fft && opt.final_through_work) {
      // The FFT writes cache-sized chunks of a work buffer (the chunking of
      // local runs shrinks it), each then copied to the output: the output's
      // large strides along the transform axis cost the FFT more than the copy.
      if (cur.buf != IN && d.kind == FftKind::c2c) {
        // In place (same strides in and out, which FFTW handles best), then copied.
        add_fft(d, cur, cur.buf, cur.view, real);
        add_copy(ph_unpack, cur.buf, cur.view, OUT, ov, real);
      } else {
        const int w = free_work(cur.buf);
        add_fft(d, cur, w, ov, real);
        add_copy(ph_unpack, w, ov, OUT, ov, real);
      }
    } else if (has_fft) add_fft(d, cur, OUT, ov, real);
    else add_copy(ph_unpack, cur.buf, cur.view, OUT, ov, real);
    cur = {OUT, ov, real, row_major_order};
  }

  // The boxes of an exchange on comm `ci` from `stage` to `next_stage`.
  ExchangeShape exchange_shape(const Cursor& cur, int stage, bool has_fft, const FftDesc& d, int next_stage,
                               bool next_is_final, int ci) const {
    const bool real = real_after(cur, has_fft, d);
    const std::vector<int>& members = comm_members[ci];
    const int p = static_cast<int>(members.size());
    ExchangeShape x;
    for (int j = 0; j < p; ++j)
      if (members[j] == rank) x.me = j;
    x.src.resize(p), x.dst.resize(p), x.sends.resize(p), x.recvs.resize(p);
    for (int j = 0; j < p; ++j) {
      x.src[j] = box_of(stage, members[j], real);
      x.dst[j] = box_of(next_stage, members[j], real);
    }
    x.after = box_after(cur, has_fft, d);
    x.next_box = x.dst[x.me];
    // Blocks this rank sends (I_s) and receives (J_r).
    for (int j = 0; j < p; ++j) x.sends[j] = x.after.intersect(x.dst[j]), x.recvs[j] = x.src[j].intersect(x.next_box);
    x.has_fft = has_fft;
    x.fft_axis = d.axis;
    x.fft_c2c = d.kind == FftKind::c2c;
    x.cur_buf = cur.buf;
    x.cur_order = cur.order;
    x.next_is_final = next_is_final;
    x.scalars_per_elem = real ? 1 : 2;
    x.scalar_bytes = rb;
    return x;
  }

  // A size-1 communicator: the box stays; only the memory order may change.
  void reorder_locally(Cursor& cur, bool has_fft, const FftDesc& d, const ExchangeShape& x) {
    if (x.next_box != x.after) throw failure("DFT plan: inconsistent local reshape");
    if (!has_fft) return;
    if (x.next_is_final) {
      const bool real = real_after(cur, has_fft, d);
      const StridedView ov = StridedView::dense(0, x.after, row_major_order);
      add_fft(d, cur, OUT, ov, real);
      cur = {OUT, ov, real, row_major_order};
      return;
    }
    cur = add_local_fft(cur, d, cur.order);
  }

  // The steps filling the send buffer (and writing blocks that skip MPI).
  void fill_send_buffer(const Cursor& cur, bool has_fft, const FftDesc& d, const ExchangeShape& x,
                        const ExchangeChoice& c, const ExchangeCounts& counts) {
    const bool real = x.scalars_per_elem == 1;
    // Input view for an output part: same ranges except along the transform axis.
    auto src_part = [&](const Box3& part) {
      Box3 b = part;
      b.lo[d.axis] = cur.view.box.lo[d.axis], b.hi[d.axis] = cur.view.box.hi[d.axis];
      return cur.view.sub(b);
    };
    // Where block j is written: the send buffer, or for the own block its
    // place in the receive buffer or in the unpacked result.
    auto block_target = [&](int j) -> std::pair<int, StridedView> {
      if (c.self_to_unpacked && j == x.me) return {c.unpack_buf, unpack_view(x, c).sub(x.recvs[j])};
      if (c.self_direct && j == x.me)
        return {c.recv_buf, c.block_view(counts.recv_displs[j] / x.scalars_per_elem, x.recvs[j])};
      return {SEND, c.block_view(counts.send_displs[j] / x.scalars_per_elem, x.sends[j])};
    };
    const int p = static_cast<int>(x.sends.size());
    switch (c.how) {
      case ExchangeChoice::fused_blocks:
        for (int j = 0; j < p; ++j) {
          if (x.sends[j].empty()) continue;
          Cursor part{cur.buf, src_part(x.sends[j]), cur.real, cur.order};
          const auto [buf, view] = block_target(j);
          add_fft(d, part, buf, view, real);
        }
        break;
      case ExchangeChoice::fused_slowest: add_fft(d, cur, SEND, c.block_view(0, x.after), real); break;
      case ExchangeChoice::send_as_is: break;
      case ExchangeChoice::pack: {
        const Cursor packed = has_fft ? add_local_fft(cur, d, c.sigma) : cur;
        for (int j = 0; j < p; ++j) {
          const auto [buf, view] = block_target(j);
          add_copy(ph_pack, packed.buf, packed.view.sub(x.sends[j]), buf, view, real);
        }
        break;
      }
    }
  }

  void add_exchange(const ExchangeShape& x, const ExchangeChoice& c, const ExchangeCounts& counts, int ci) {
    Step s;
    s.kind = Step::exchange;
    s.phase = ph_alltoall;
    s.src = c.send_buf, s.dst = c.recv_buf, s.comm = ci, s.counts = counts;
    steps.push_back(s);
    exchange_info.push_back(
        {static_cast<int>(x.src.size()), counts.total_scalars * static_cast<std::int64_t>(rb), counts.even});
  }

  // Where the data is after the exchange: received as the new box (the
  // output itself, or a buffer the next FFTs read in the blocks' order), or
  // unpacked.
  Cursor receive(const ExchangeShape& x, const ExchangeChoice& c, const ExchangeCounts& counts) {
    const bool real = x.scalars_per_elem == 1;
    if (c.direct_out) return {OUT, StridedView::dense(0, x.next_box, row_major_order), real, row_major_order};
    if (!c.unpack_needed) return {c.recv_buf, c.block_view(0, x.next_box), real, c.sigma};
    const StridedView uv = unpack_view(x, c);
    for (int j = 0; j < static_cast<int>(x.recvs.size()); ++j) {
      if (j == x.me && c.self_to_unpacked) continue;
      if (j == x.me && c.own_from_send)
        add_copy(ph_unpack, SEND, c.block_view(counts.send_displs[j] / x.scalars_per_elem, x.sends[j]), c.unpack_buf,
                 uv.sub(x.recvs[j]), real);
      else
        add_copy(ph_unpack, c.recv_buf, c.block_view(counts.recv_displs[j] / x.scalars_per_elem, x.recvs[j]),
                 c.unpack_buf, uv.sub(x.recvs[j]), real);
    }
    return {c.unpack_buf, uv, real, x.next_is_final ? row_major_order : c.sigma};
  }

  void add_normalize() {
    if (!opt.normalize) return;
    Step s;
    s.kind = Step::scale;
    s.phase = ph_fft;
    s.scalars = out_box.count() * (out_real ? 1 : 2);
    s.factor = 1.0 / (static_cast<double>(n_real[0]) * n_real[1] * n_real[2]);
    steps.push_back(s);
  }

  // Compiles the steps: the stage plan (plan logic), then each visit's FFTs,
  // the last of them delivered to the next visit through its exchange.
  void compile() {
    if (size == 1) {
      // One rank: every layout is the whole array, row-major; FFTW's own
      // multi-dimensional plan beats three batched 1-D passes.
      const bool fwd = opt.direction == DftDirection::forward;
      in_real = opt.real_to_complex && fwd;
      out_real = opt.real_to_complex && !fwd;
      in_box = Box3{{0, 0, 0}, dims(in_real)};
      out_box = Box3{{0, 0, 0}, dims(out_real)};
      const FftKind kind = !opt.real_to_complex ? FftKind::c2c : fwd ? FftKind::r2c : FftKind::c2r;
      Cursor cur{IN, StridedView::dense(0, in_box, row_major_order), in_real, row_major_order};
      if (kind == FftKind::c2r) {
        // FFTW cannot preserve the input of a multi-dimensional c2r: work on a copy.
        add_copy(ph_pack, IN, cur.view, W0, cur.view, false);
        cur.buf = W0;
      }
      add_fft(FftDesc{kind, whole_array, 0}, cur, OUT, StridedView::dense(0, out_box, row_major_order), out_real);
      add_normalize();
      return;
    }
    const StagePlan plan = plan_stages(decomp, opt);
    // The sub-communicator of every exchange, created in visit order (collective).
    std::vector<int> comm_of;
    for (const StageVisit& v : plan.visits) comm_of.push_back(v.exchange ? comm_for(v.comm_dims) : -1);

    in_real = opt.real_to_complex && opt.direction == DftDirection::forward;
    out_real = opt.real_to_complex && opt.direction == DftDirection::backward;
    in_box = box_of(plan.visits.front().stage, rank, in_real);
    out_box = box_of(plan.out_stage, rank, out_real);

    Cursor cur{IN, StridedView::dense(0, in_box, row_major_order), in_real, row_major_order};
    for (std::size_t i = 0; i < plan.visits.size(); ++i) {
      const StageVisit& v = plan.visits[i];
      auto fft = [&](int axis) { return FftDesc{kind_for(axis, cur.real), axis, n_real[axis]}; };
      for (std::size_t k = 0; k + 1 < v.axes.size(); ++k) cur = add_local_fft(cur, fft(v.axes[k]), cur.order);
      const bool has_fft = !v.axes.empty();
      const FftDesc last = has_fft ? fft(v.axes.back()) : FftDesc{};
      if (i + 1 < plan.visits.size())
        deliver(cur, v.stage, has_fft, last, plan.visits[i + 1].stage, plan.next_is_final(i), comm_of[i + 1]);
      else deliver(cur, v.stage, has_fft, last, -1, true, -1);
    }
    if (cur.buf != OUT) throw failure("DFT plan: result not delivered to the output");
    add_normalize();
  }

  // Splits each run of local steps (the FFTs of a stage, the local reshapes
  // and unpack copies around them) into chunks of planes along an axis none
  // of its FFTs transforms, so that a chunk passes through all of them while
  // it is in cache. A single strided FFT gains too: FFTW does much better on
  // a plane at a time than on one huge-stride batch. Intermediates that are
  // created and consumed inside the run shrink to one chunk.
  void chunk_local_runs() {
    for (const Step& s : steps)
      if (s.kind == Step::fft && s.desc.axis == whole_array) return;  // one rank: FFTW's 3-D plan does it all
    std::vector<Step> result;
    std::size_t i = 0;
    while (i < steps.size()) {
      std::size_t j = i;
      bool any_fft = false;
      while (j < steps.size() && (steps[j].kind == Step::fft || steps[j].kind == Step::copy))
        any_fft = any_fft || steps[j].kind == Step::fft, ++j;
      if (!any_fft) {
        const std::size_t end = std::max(j, i + 1);
        for (; i < end; ++i) result.push_back(steps[i]);
        continue;
      }
      // A run that transforms all three axes (a stage pair joined by a local
      // reshape) is cut where a third axis would join.
      while (i < j) {
        std::size_t e = i;
        bool axes[3] = {false, false, false};
        int n_axes = 0;
        for (; e < j; ++e) {
          if (steps[e].kind != Step::fft) continue;
          const int a = steps[e].desc.axis;
          if (!axes[a] && n_axes == 2) break;
          if (!axes[a]) axes[a] = true, ++n_axes;
        }
        std::vector<Step> group(steps.begin() + static_cast<std::ptrdiff_t>(i),
                                steps.begin() + static_cast<std::ptrdiff_t>(e));
        std::vector<Step> after(steps.begin() + static_cast<std::ptrdiff_t>(e), steps.end());
        chunk_group(group, after, result);
        i = e;
      }
    }
    steps = std::move(result);
  }

  static bool read_later(int buf, const std::vector<Step>& after) {
    for (const Step& s : after) {
      if (s.kind == Step::scale) continue;
      if (s.src == buf) return true;
      if (s.dst == buf) return false;
    }
    return false;
  }

  // Where coordinate (0,0,0) of a view would sit: views with equal origin and
  // strides put every element of a buffer at the same place.
  static std::int64_t origin(const StridedView& v) {
    std::int64_t o = v.offset;
    for (int d = 0; d < 3; ++d) o -= v.box.lo[d] * v.stride[d];
    return o;
  }
  static bool same_mapping(const StridedView& a, const StridedView& b) {
    return a.stride == b.stride && origin(a) == origin(b);
  }

  void chunk_group(const std::vector<Step>& group, const std::vector<Step>& after, std::vector<Step>& out) {
    auto keep = [&] { out.insert(out.end(), group.begin(), group.end()); };
    bool used[3] = {false, false, false};
    const Step* first_fft = nullptr;
    for (const Step& s : group)
      if (s.kind == Step::fft) {
        if (s.desc.axis == whole_array) return keep();
        used[s.desc.axis] = true;
        if (!first_fft) first_fft = &s;
      }
    if (!first_fft) return keep();
    // Chunk along the untransformed axis with the largest stride in the first FFT's input.
    int c = -1;
    for (int a = 0; a < 3; ++a)
      if (!used[a] && (c < 0 || first_fft->src_view.stride[a] > first_fft->src_view.stride[c])) c = a;
    if (c < 0) return keep();
    std::int64_t lo = first_fft->src_view.box.lo[c], hi = first_fft->src_view.box.hi[c];
    for (const Step& s : group)
      for (const StridedView* v : {&s.src_view, &s.dst_view})
        if (!v->box.empty()) lo = std::min(lo, v->box.lo[c]), hi = std::max(hi, v->box.hi[c]);
    if (hi - lo < 2) return keep();
    // A buffer both read and written in the run must map every element to one
    // place in all its views, or a chunk could overwrite what a later chunk reads.
    std::map<int, std::vector<const StridedView*>> views;
    std::map<int, bool> read, written;
    std::map<int, std::size_t> elem_bytes;
    for (const Step& s : group) {
      views[s.src].push_back(&s.src_view);
      views[s.dst].push_back(&s.dst_view);
      read[s.src] = true;
      written[s.dst] = true;
      elem_bytes[s.src] = s.kind == Step::fft ? eb(s.src_real) : s.elem;
      elem_bytes[s.dst] = s.kind == Step::fft ? eb(s.dst_real) : s.elem;
    }
    for (const auto& [b, vs] : views)
      if (read[b] && written[b])
        for (const StridedView* v : vs)
          if (!same_mapping(*v, *vs.front())) return keep();
    // Intermediates created and consumed inside the run: one chunk's worth.
    std::map<int, StridedView> full;
    for (const Step& s : group) {
      const int b = s.dst;
      if (b == IN || b == OUT || b == SEND || full.count(b) || !read[b]) continue;
      bool created = false;
      for (const Step& g : group)
        if (g.src == b || g.dst == b) {
          created = g.src != b;
          break;
        }
      if (!created || group.back().dst == b || read_later(b, after)) continue;
      // The dense box all its views tile (same mapping, so one order).
      StridedView u = *views[b].front();
      for (const StridedView* v : views[b])
        for (int d = 0; d < 3; ++d)
          if (!v->box.empty())
            u.box.lo[d] = std::min(u.box.lo[d], v->box.lo[d]), u.box.hi[d] = std::max(u.box.hi[d], v->box.hi[d]);
      full[b] = u;
    }
    std::map<int, AxisOrder> order;
    for (const auto& [b, v] : full) order[b] = v.order();

    const std::int64_t plane =
        std::max<std::int64_t>(
            1, first_fft->src_view.box.count() / std::max<std::int64_t>(1, first_fft->src_view.box.size(c))) *
        static_cast<std::int64_t>(2 * rb);
    const std::int64_t planes = std::max<std::int64_t>(1, static_cast<std::int64_t>(opt.chunk_bytes) / plane);
    for (std::int64_t k = lo; k < hi; k += planes) {
      for (const Step& s : group) {
        auto restrict_view = [&](const StridedView& v, int buf) -> StridedView {
          Box3 b = v.box;
          b.lo[c] = std::max(b.lo[c], k), b.hi[c] = std::min(b.hi[c], k + planes);
          if (b.hi[c] < b.lo[c]) b.hi[c] = b.lo[c];
          if (!full.count(buf) || b.empty()) return v.sub(b);
          Box3 chunk = full[buf].box;
          chunk.lo[c] = std::max(chunk.lo[c], k), chunk.hi[c] = std::min(chunk.hi[c], k + planes);
          // One cache line of padding per slice when slices are whole
          // pages: a power-of-two stride would put a column in one cache set.
          StridedView cv = StridedView::dense(0, chunk, order[buf]);
          const int slow = order[buf][0];
          const std::int64_t slice_bytes = cv.stride[slow] * static_cast<std::int64_t>(elem_bytes[buf]);
          if (chunk.size(slow) > 1 && slice_bytes % 4096 == 0)
            cv.stride[slow] += 64 / static_cast<std::int64_t>(elem_bytes[buf]);
          return cv.sub(b);
        };
        Step t = s;
        t.src_view = restrict_view(s.src_view, s.src);
        t.dst_view = restrict_view(s.dst_view, s.dst);
        if (t.src_view.box.empty()) continue;
        out.push_back(t);
      }
    }
    for (const auto& [b, v] : full) shrunk.push_back(b);
  }

  std::vector<int> shrunk;

  void allocate_and_plan() {
    chunk_local_runs();
    // Buffer sizes from the final steps (compacted intermediates are small).
    for (int b : shrunk) need[b] = 0;
    for (const Step& s : steps) {
      switch (s.kind) {
        case Step::fft:
          use(s.src, s.src_view, eb(s.src_real));
          use(s.dst, s.dst_view, eb(s.dst_real));
          break;
        case Step::copy:
          use(s.src, s.src_view, s.elem);
          use(s.dst, s.dst_view, s.elem);
          break;
        case Step::exchange: {
          need[s.src] = std::max(need[s.src], static_cast<std::size_t>(s.counts.send_span) * rb);
          need[s.dst] = std::max(need[s.dst], static_cast<std::size_t>(s.counts.recv_span) * rb);
          break;
        }
        case Step::scale: break;
      }
    }
    // FFTs that read the user's input or write the user's output are planned
    // on a stand-in internal buffer of the same alignment.
    for (Step& s : steps) {
      if (s.kind != Step::fft) continue;
      const auto [sb, db] = planning_buffers(s);
      use(sb, s.src_view, eb(s.src_real));
      use(db, s.dst_view, eb(s.dst_real));
    }
    for (int b = W0; b < NBUF; ++b) buffers[b] = FftwBuffer(need[b]);
    const int sign = opt.direction == DftDirection::forward ? FFTW_FORWARD : FFTW_BACKWARD;
    // Steps of one shape share a plan (chunks differ only by offsets).
    std::map<std::vector<std::int64_t>, std::size_t> shapes;
    std::vector<std::size_t> which;
    for (Step& s : steps) {
      if (s.kind != Step::fft) continue;
      const std::size_t se = eb(s.src_real), de = eb(s.dst_real);
      if (s.desc.axis == whole_array) {
        std::vector<FftDim> dims3;
        dims3.reserve(3);
        for (int a = 0; a < 3; ++a) dims3.push_back({n_real[a], s.src_view.stride[a], s.dst_view.stride[a]});
        const auto [sb, db] = planning_buffers(s);
        plans.emplace_back(s.desc.kind, sign, dims3, std::vector<FftDim>{}, buffers[sb].data(), buffers[db].data(),
                           opt.planner, opt.threads, s.src == IN, rb == 4);
        which.push_back(plans.size() - 1);
        continue;
      }
      const int t = s.desc.axis;
      FftDim tr{s.desc.n, s.src_view.stride[t], s.dst_view.stride[t]};
      std::vector<FftDim> batch;
      for (int a = 0; a < 3; ++a)
        if (a != t && s.src_view.box.size(a) > 1)
          batch.push_back({s.src_view.box.size(a), s.src_view.stride[a], s.dst_view.stride[a]});
      const bool in_place = s.src == s.dst && s.src_view.offset * se == s.dst_view.offset * de;
      std::vector<std::int64_t> key = {static_cast<std::int64_t>(s.desc.kind),
                                       tr.n,
                                       tr.in_stride,
                                       tr.out_stride,
                                       in_place,
                                       s.src == IN,
                                       static_cast<std::int64_t>((s.src_view.offset * se) % 64),
                                       static_cast<std::int64_t>((s.dst_view.offset * de) % 64)};
      for (const FftDim& b : batch) key.insert(key.end(), {b.n, b.in_stride, b.out_stride});
      auto it = shapes.find(key);
      if (it == shapes.end()) {
        const auto [sb, db] = planning_buffers(s);
        char* ip = buffers[sb].data() + s.src_view.offset * se;
        char* op = buffers[db].data() + s.dst_view.offset * de;
        plans.emplace_back(s.desc.kind, sign, tr, batch, ip, op, opt.planner, opt.threads, s.src == IN, rb == 4);
        it = shapes.emplace(key, plans.size() - 1).first;
      }
      which.push_back(it->second);
    }
    std::size_t k = 0;
    for (Step& s : steps)
      if (s.kind == Step::fft) s.plan = &plans[which[k++]];
  }

  // Internal buffers to plan a step on: the user's arrays are replaced by
  // stand-ins distinct from the step's other buffer.
  static std::pair<int, int> planning_buffers(const Step& s) {
    int sb = s.src, db = s.dst;
    auto pick = [](int avoid1, int avoid2) -> int {
      for (int b : {W0, W1, SEND, RECV})
        if (b != avoid1 && b != avoid2) return b;
      return W0;
    };
    if (sb == IN) sb = pick(db, db);
    if (db == OUT) db = pick(sb, s.src);
    return {sb, db};
  }

  template <class T>
  void scale_scalars(T* p, std::int64_t n, T f) const {
#pragma omp parallel for schedule(static) num_threads(opt.threads) if (opt.threads > 1)
    for (std::int64_t i = 0; i < n; ++i) p[i] *= f;
  }

  DftTimes run(const void* in, void* out) {
    char* ptr[NBUF];
    ptr[IN] = static_cast<char*>(const_cast<void*>(in));
    ptr[OUT] = static_cast<char*>(out);
    for (int b = W0; b < NBUF; ++b) ptr[b] = buffers[b].data();
    double t[4] = {0, 0, 0, 0};
    const double t0 = MPI_Wtime();
    for (const Step& s : steps) {
      const double a = MPI_Wtime();
      switch (s.kind) {
        case Step::fft:
          s.plan->execute(ptr[s.src] + s.src_view.offset * (eb(s.src_real)),
                          ptr[s.dst] + s.dst_view.offset * (eb(s.dst_real)));
          break;
        case Step::copy: copy_box(ptr[s.src], s.src_view, ptr[s.dst], s.dst_view, s.elem, opt.threads); break;
        case Step::exchange: run_exchange(s.counts, ptr[s.src], ptr[s.dst], comms[s.comm]); break;
        case Step::scale: {
          if (rb == 4) scale_scalars(reinterpret_cast<float*>(ptr[OUT]), s.scalars, static_cast<float>(s.factor));
          else scale_scalars(reinterpret_cast<double*>(ptr[OUT]), s.scalars, s.factor);
          break;
        }
      }
      t[s.phase] += MPI_Wtime() - a;
    }
    DftTimes r;
    r.fft = t[ph_fft], r.pack = t[ph_pack], r.alltoall = t[ph_alltoall], r.unpack = t[ph_unpack];
    r.total = MPI_Wtime() - t0;
    return r;
  }

  DftTimes execute(const void* in, std::size_t in_count, bool in_is_real, void* out, std::size_t out_count,
                   bool out_is_real, bool single) {
    std::string err;
    const char* kind = in_real ? "real" : "complex";
    const char* okind = out_real ? "real" : "complex";
    if (single != (rb == 4))
      err = std::string("distributed DFT: this plan is ") + (rb == 4 ? "single" : "double") +
            " precision, execute() was given " + (single ? "single" : "double") + "-precision arrays";
    else if (in_is_real != in_real || out_is_real != out_real)
      err = std::string("distributed DFT: this plan maps ") + kind + " input to " + okind + " output";
    else if (in_count != static_cast<std::size_t>(in_box.count()))
      err = "distributed DFT: rank " + std::to_string(rank) + " was given an input of " + std::to_string(in_count) +
            " elements, its box " + in_box.to_string() + " holds " + std::to_string(in_box.count());
    else if (out_count != static_cast<std::size_t>(out_box.count()))
      err = "distributed DFT: rank " + std::to_string(rank) + " was given an output of " + std::to_string(out_count) +
            " elements, its box " + out_box.to_string() + " holds " + std::to_string(out_box.count());
    else if ((in_count && !in) || (out_count && !out))
      err = "distributed DFT: rank " + std::to_string(rank) + " was given a null buffer";
    else if ((in_count && !fftw_aligned(in, rb == 4)) || (out_count && !fftw_aligned(out, rb == 4)))
      err = "distributed DFT: rank " + std::to_string(rank) + " was given a buffer not aligned to 16 bytes";
    else if (in_count && out_count && in == out)
      err = "distributed DFT: in-place execution is not supported (input and output are one buffer)";
    agree_on_errors(world, err);
    return run(in, out);
  }
};

namespace {

// Builds one variant of the plan (collective): Cartesian grid, the compiled
// steps, buffers and FFTW plans.
std::unique_ptr<DftPlan::Impl> build_impl(MPI_Comm comm, const DftOptions& o, Decomposition decomp,
                                          const std::vector<int>& grid) {
  auto impl = std::make_unique<DftPlan::Impl>();
  DftPlan::Impl& m = *impl;
  m.world = comm;
  m.opt = o;
  m.rb = o.precision == DftPrecision::single ? 4 : 8;
  MPI_Comm_size(comm, &m.size);
  m.decomp = decomp;
  m.grid = grid;
  m.n_real = o.size;
  m.n_cplx = o.size;
  if (o.real_to_complex) m.n_cplx[2] = o.size[2] / 2 + 1;
  const int nd = static_cast<int>(m.grid.size());
  std::vector<int> periods(nd, 0);
  MPI_Cart_create(comm, nd, m.grid.data(), periods.data(), 0, &m.cart);
  int cart_rank = 0;
  MPI_Comm_rank(m.cart, &cart_rank);
  m.rank = cart_rank;
  m.coords.assign(m.size, std::vector<int>(nd, 0));
  for (int r = 0; r < m.size; ++r) MPI_Cart_coords(m.cart, r, nd, m.coords[r].data());
  m.compile();
  // Allocation and FFTW planning can fail on one rank only: tell everyone.
  std::string plan_error;
  try {
    m.allocate_and_plan();
  } catch (const std::exception& ex) {
    plan_error = ex.what();
  }
  agree_on_errors(comm, plan_error);
  return impl;
}

// Seconds of the slowest rank for one execute, best of a few (collective).
double time_variant(DftPlan::Impl& m) {
  const std::size_t in_bytes = static_cast<std::size_t>(m.in_box.count()) * m.eb(m.in_real);
  const std::size_t out_bytes = static_cast<std::size_t>(m.out_box.count()) * m.eb(m.out_real);
  FftwBuffer in(in_bytes), out(out_bytes);
  if (in_bytes) std::memset(in.data(), 0, in_bytes);
  double best = 1e300;
  for (int k = 0; k < 4; ++k) {
    MPI_Barrier(m.world);
    const double a = MPI_Wtime();
    m.run(in.data(), out.data());
    double t = MPI_Wtime() - a, slowest = 0;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, m.world);
    if (k > 0) best = std::min(best, slowest);  // the first run warms caches
  }
  return best;
}

}  // namespace

DftPlan::Impl::~Impl() {
  for (MPI_Comm& c : comms)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  if (cart != MPI_COMM_NULL) MPI_Comm_free(&cart);
}

DftPlan::DftPlan(MPI_Comm comm, const DftOptions& o) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  Decomposition decomp = Decomposition::slab_pencil;
  std::vector<int> grid;

  // Validate everything on every rank before any other communication.
  std::ostringstream e;
  if (o.size[0] < 1 || o.size[1] < 1 || o.size[2] < 1) {
    e << "distributed DFT: size " << o.size[0] << "x" << o.size[1] << "x" << o.size[2] << " has an empty dimension";
  } else if (o.threads < 1) {
    e << "distributed DFT: threads must be at least 1 (got " << o.threads << ")";
  } else if (o.real_to_complex && o.direction == DftDirection::forward && o.input_layout != DftLayout::natural) {
    e << "distributed DFT: a real-to-complex transform takes natural input";
  } else if (o.real_to_complex && o.direction == DftDirection::backward && o.output_layout != DftLayout::natural) {
    e << "distributed DFT: a complex-to-real transform gives natural output";
  } else {
    decomp = o.decomposition == Decomposition::automatic ? choose_decomposition(o.size, size) : o.decomposition;
    const int gr = grid_rank(decomp);
    if (o.grid.empty()) {
      grid = min_surface_grid(decomp, o.size, size);
    } else if (static_cast<int>(o.grid.size()) != gr) {
      e << "distributed DFT: " << to_string(decomp) << " needs a " << gr << "-D process grid, got " << o.grid.size()
        << " dimension(s)";
    } else {
      long long prod = 1;
      bool positive = true;
      for (int g : o.grid) prod *= g, positive = positive && g >= 1;
      std::string gs;
      for (std::size_t i = 0; i < o.grid.size(); ++i) gs += (i ? "x" : "") + std::to_string(o.grid[i]);
      if (!positive || prod != size)
        e << "distributed DFT: process grid " << gs << " does not fit " << size << " ranks";
      else grid = o.grid;
    }
  }
  agree_on_errors(comm, e.str());

  if (!o.autotune || o.planner == FftPlanner::estimate || size == 1) {  // one rank: a single FFTW plan
    impl_ = build_impl(comm, o, decomp, grid);
    return;
  }
  // As FFTW does among its algorithms: build the variants, time each on this
  // machine, keep the fastest. The variants differ in how much copying the
  // exchanges need and in the strides of the local FFTs; which wins depends
  // on the cache sizes and the MPI transport.
  // The final transform writes the output itself only when the output is the
  // decomposition's last stage (transposed forward, natural backward).
  const bool ends_in_fft = (o.direction == DftDirection::forward) == (o.output_layout == DftLayout::transposed);
  std::vector<DftOptions> variants;
  for (bool direct : {false, true})
    for (bool a2last : {false, true})
      for (bool via_work : {false, true})
        for (bool pack : {false, true}) {
          if (a2last && decomp != Decomposition::slab_pencil) continue;
          if (via_work && !ends_in_fft) continue;
          DftOptions v = o;
          v.local_block_direct = direct;
          v.slab_axis2_last = a2last;
          v.final_through_work = via_work;
          v.pack_after_fft = pack;
          variants.push_back(v);
        }
  double best = 1e300;
  for (const DftOptions& v : variants) {
    auto candidate = build_impl(comm, v, decomp, grid);
    const double t = time_variant(*candidate);
    if (t < best) best = t, impl_ = std::move(candidate);
  }
}

DftPlan::~DftPlan() = default;

std::string DftPlan::variant_string() const {
  const DftOptions& o = impl_->opt;
  if (impl_->size == 1) return "one-rank-fftw-3d";
  std::string s = o.local_block_direct ? "own-block-direct" : "own-block-copied";
  if (impl_->decomp == Decomposition::slab_pencil) s += o.slab_axis2_last ? ",axis2-last" : ",axis1-last";
  if (o.final_through_work) s += ",final-through-work";
  if (o.pack_after_fft) s += ",pack-after-fft";
  return s;
}

DftTimes DftPlan::execute(const cplx* in, std::size_t ni, cplx* out, std::size_t no) {
  return impl_->execute(in, ni, false, out, no, false, false);
}
DftTimes DftPlan::execute(const double* in, std::size_t ni, cplx* out, std::size_t no) {
  return impl_->execute(in, ni, true, out, no, false, false);
}
DftTimes DftPlan::execute(const cplx* in, std::size_t ni, double* out, std::size_t no) {
  return impl_->execute(in, ni, false, out, no, true, false);
}
DftTimes DftPlan::execute(const cplxf* in, std::size_t ni, cplxf* out, std::size_t no) {
  return impl_->execute(in, ni, false, out, no, false, true);
}
DftTimes DftPlan::execute(const float* in, std::size_t ni, cplxf* out, std::size_t no) {
  return impl_->execute(in, ni, true, out, no, false, true);
}
DftTimes DftPlan::execute(const cplxf* in, std::size_t ni, float* out, std::size_t no) {
  return impl_->execute(in, ni, false, out, no, true, true);
}

const Box3& DftPlan::input_box() const { return impl_->in_box; }
const Box3& DftPlan::output_box() const { return impl_->out_box; }
Decomposition DftPlan::decomposition() const { return impl_->decomp; }
const std::vector<int>& DftPlan::grid() const { return impl_->grid; }
std::string DftPlan::grid_string() const {
  std::string s;
  for (std::size_t i = 0; i < impl_->grid.size(); ++i) s += (i ? "x" : "") + std::to_string(impl_->grid[i]);
  return s;
}
const std::vector<DftExchangeInfo>& DftPlan::exchanges() const { return impl_->exchange_info; }
const DftOptions& DftPlan::options() const { return impl_->opt; }

}  // namespace driftscan::mpi
