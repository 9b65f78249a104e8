#include "driftscan/mpi/dft/dft_reshape.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>

#include "driftscan/core/error.hpp"

namespace driftscan::mpi {

StridedView StridedView::sub(const Box3& sub_box) const {
  StridedView v = *this;
  v.box = sub_box;
  for (int d = 0; d < 3; ++d) v.offset += (sub_box.lo[d] - box.lo[d]) * stride[d];
  return v;
}

AxisOrder StridedView::order() const {
  AxisOrder o{0, 1, 2};
  // Axes of extent 1 do not constrain the order; rank them by stride anyway
  // but keep the stable axis order for ties.
  std::stable_sort(o.begin(), o.end(), [&](int a, int b) { return stride[a] > stride[b]; });
  return o;
}

namespace {
template <std::size_t E>
void copy_elements(const char* s, std::int64_t ss, char* d, std::int64_t ds, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) std::memcpy(d + i * ds * E, s + i * ss * E, E);
}
}  // namespace

void copy_box(const char* src, const StridedView& sv, char* dst, const StridedView& dv, std::size_t elem, int threads) {
  if (sv.box.empty()) return;
  // Loop in the destination's memory order; the innermost axis moves runs.
  const AxisOrder o = dv.order();
  const int a = o[0], b = o[1], c = o[2];
  const std::int64_t na = dv.box.size(a), nb = dv.box.size(b), nc = dv.box.size(c);
  const std::int64_t sa = sv.stride[a], sb = sv.stride[b], sc = sv.stride[c];
  const std::int64_t da = dv.stride[a], db = dv.stride[b], dc = dv.stride[c];
  const bool runs = (sc == 1 && dc == 1) || nc == 1;
  const char* s0 = src + sv.offset * static_cast<std::int64_t>(elem);
  char* d0 = dst + dv.offset * static_cast<std::int64_t>(elem);
  const std::int64_t E = static_cast<std::int64_t>(elem);
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t i = 0; i < na; ++i) {
    for (std::int64_t j = 0; j < nb; ++j) {
      const char* s = s0 + (i * sa + j * sb) * E;
      char* d = d0 + (i * da + j * db) * E;
      if (runs) std::memcpy(d, s, static_cast<std::size_t>(nc * E));
      else if (elem == 16) copy_elements<16>(s, sc, d, dc, nc);
      else if (elem == 8) copy_elements<8>(s, sc, d, dc, nc);
      else copy_elements<4>(s, sc, d, dc, nc);
    }
  }
}

ExchangeCounts exchange_counts(const std::vector<Box3>& src, const std::vector<Box3>& dst, int me,
                               int doubles_per_elem) {
  const int p = static_cast<int>(src.size());
  ExchangeCounts x;
  x.send_counts.resize(p);
  x.send_displs.resize(p);
  x.recv_counts.resize(p);
  x.recv_displs.resize(p);
  auto to_int = [](std::int64_t v) {
    if (v > INT_MAX)
      throw bad_input("DFT block of " + std::to_string(v) + " scalars exceeds MPI's int counts: use more ranks");
    return static_cast<int>(v);
  };
  std::int64_t first = -1;
  bool even = true;
  for (int r = 0; r < p; ++r) {
    for (int s = 0; s < p; ++s) {
      const std::int64_t c = src[r].intersect(dst[s]).count() * doubles_per_elem;
      x.total_scalars += c;
      if (first < 0) first = c;
      if (c != first) even = false;
    }
  }
  int sd = 0, rd = 0;
  for (int s = 0; s < p; ++s) {
    x.send_counts[s] = to_int(src[me].intersect(dst[s]).count() * doubles_per_elem);
    x.send_displs[s] = sd;
    sd = to_int(static_cast<std::int64_t>(sd) + x.send_counts[s]);
    x.recv_counts[s] = to_int(src[s].intersect(dst[me]).count() * doubles_per_elem);
    x.recv_displs[s] = rd;
    rd = to_int(static_cast<std::int64_t>(rd) + x.recv_counts[s]);
  }
  x.even = even;
  x.even_count = even ? static_cast<int>(first) : 0;
  x.me = me;
  x.send_span = sd;
  x.recv_span = rd;
  return x;
}

void ExchangeCounts::grow_blocks(const std::vector<std::int64_t>& send_extra,
                                 const std::vector<std::int64_t>& recv_extra) {
  std::int64_t sd = 0, rd = 0;
  for (std::size_t j = 0; j < send_counts.size(); ++j) {
    const std::int64_t sc = send_counts[j] + send_extra[j], rc = recv_counts[j] + recv_extra[j];
    if (sd + sc > INT_MAX || rd + rc > INT_MAX)
      throw bad_input("DFT exchange exceeds MPI's int counts: use more ranks");
    send_counts[j] = static_cast<int>(sc), recv_counts[j] = static_cast<int>(rc);
    send_displs[j] = static_cast<int>(sd), recv_displs[j] = static_cast<int>(rd);
    sd += sc, rd += rc;
  }
  send_span = sd, recv_span = rd;
  even = false;
}

void ExchangeCounts::copy_own_block_outside_mpi() {
  if (me < 0 || send_counts[me] == 0) return;
  own_block = send_counts[me];
  send_counts[me] = recv_counts[me] = 0;
  even = false;
}

void run_exchange(const ExchangeCounts& x, const void* send, void* recv, MPI_Comm comm) {
  void* s = const_cast<void*>(send);
  if (x.own_block > 0) {
    int bytes = 0;
    MPI_Type_size(x.scalar, &bytes);
    std::memcpy(static_cast<char*>(recv) + static_cast<std::size_t>(x.recv_displs[x.me]) * bytes,
                static_cast<const char*>(send) + static_cast<std::size_t>(x.send_displs[x.me]) * bytes,
                static_cast<std::size_t>(x.own_block) * bytes);
  }
  if (x.even) MPI_Alltoall(s, x.even_count, x.scalar, recv, x.even_count, x.scalar, comm);
  else
    MPI_Alltoallv(s, x.send_counts.data(), x.send_displs.data(), x.scalar, recv, x.recv_counts.data(),
                  x.recv_displs.data(), x.scalar, comm);
}

BoxRedistribution::BoxRedistribution(MPI_Comm comm, const Box3& src_box, const AxisOrder& src_order,
                                     const Box3& dst_box, const AxisOrder& dst_order, int doubles_per_elem, int threads)
    : comm_(comm),
      threads_(threads),
      elem_(static_cast<std::size_t>(doubles_per_elem) * sizeof(double)),
      src_order_(src_order) {
  int p = 1, me = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  std::int64_t mine[12];
  for (int d = 0; d < 3; ++d) {
    mine[d] = src_box.lo[d], mine[3 + d] = src_box.hi[d];
    mine[6 + d] = dst_box.lo[d], mine[9 + d] = dst_box.hi[d];
  }
  std::vector<std::int64_t> all(12 * static_cast<std::size_t>(p));
  MPI_Allgather(mine, 12, MPI_INT64_T, all.data(), 12, MPI_INT64_T, comm);
  std::vector<Box3> src(p), dst(p);
  for (int r = 0; r < p; ++r) {
    for (int d = 0; d < 3; ++d) {
      src[r].lo[d] = all[12 * r + d], src[r].hi[d] = all[12 * r + 3 + d];
      dst[r].lo[d] = all[12 * r + 6 + d], dst[r].hi[d] = all[12 * r + 9 + d];
    }
  }
  counts_ = exchange_counts(src, dst, me, doubles_per_elem);
  const StridedView sv = StridedView::dense(0, src_box, src_order);
  const StridedView dv = StridedView::dense(0, dst_box, dst_order);
  for (int r = 0; r < p; ++r) {
    const Box3 out = src_box.intersect(dst[r]);
    const Box3 in = src[r].intersect(dst_box);
    pack_src_.push_back(sv.sub(out));
    send_boxes_.push_back(out);
    unpack_dst_.push_back(dv.sub(in));
    recv_boxes_.push_back(in);
  }
  send_.resize(static_cast<std::size_t>(src_box.count()) * doubles_per_elem);
  recv_.resize(static_cast<std::size_t>(dst_box.count()) * doubles_per_elem);
}

void BoxRedistribution::execute(const void* src, void* dst) {
  const int p = static_cast<int>(send_boxes_.size());
  const std::int64_t dpe = static_cast<std::int64_t>(elem_ / sizeof(double));
  // Blocks travel in the source's memory order.
  for (int r = 0; r < p; ++r) {
    const StridedView block = StridedView::dense(counts_.send_displs[r] / dpe, send_boxes_[r], src_order_);
    copy_box(static_cast<const char*>(src), pack_src_[r], reinterpret_cast<char*>(send_.data()), block, elem_,
             threads_);
  }
  run_exchange(counts_, send_.data(), recv_.data(), comm_);
  for (int r = 0; r < p; ++r) {
    const StridedView block = StridedView::dense(counts_.recv_displs[r] / dpe, recv_boxes_[r], src_order_);
    copy_box(reinterpret_cast<const char*>(recv_.data()), block, static_cast<char*>(dst), unpack_dst_[r], elem_,
             threads_);
  }
}

}  // namespace driftscan::mpi
