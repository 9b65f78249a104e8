#pragma once
// The global phase of the distributed scan: an inclusive scan over ranks of
// one partial result per rank, for an associative operator that need not be
// commutative and need not have an identity (a rank without elements holds an
// empty partial). Four algorithms, selectable, all giving the same result:
//
//   mpi-scan        MPI_Scan with a user-defined, non-commutative MPI_Op;
//   dissemination   Hillis–Steele / recursive doubling: ⌈log2 P⌉ rounds, every
//                   rank combines in every round (most work, least depth);
//   blelloch        the tree scan (Brent–Kung inclusive form): up-sweep and
//                   down-sweep over a binary tree, ≤ 2 applications per rank;
//   ladner-fischer  pairs combined first, a Sklansky (divide-and-conquer) scan
//                   over the pair results, then the remaining ranks filled in:
//                   depth ⌈log2 P⌉ + 1 with about half the fan-out.
//
// Only the calling (master) thread communicates (MPI_THREAD_FUNNELED).
// Operator failures travel as failed partials, so every rank completes every
// message; check the result with agree_on_failure().
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <mpi.h>

#include "driftscan/mpi/runtime/collectives.hpp"
#include "driftscan/mpi/runtime/idle_wait.hpp"
#include "driftscan/mpi/scan/scan_element_codec.hpp"
#include "driftscan/mpi/scan/scan_partial.hpp"

namespace driftscan::mpi {

enum class GlobalScanAlgorithm { mpi_scan, dissemination, blelloch, ladner_fischer };

const char* to_string(GlobalScanAlgorithm algorithm);
// Accepts the names above; throws bad_input naming the accepted ones otherwise.
GlobalScanAlgorithm global_scan_algorithm_from_string(const std::string& name);
const std::vector<GlobalScanAlgorithm>& all_global_scan_algorithms();
// Roughly how many operator applications in sequence stand between the
// ranks' sums and rank r's exclusive prefix (what its final phase waits for):
// 0 on ranks 0 and 1, about log2 r with the logarithmic algorithms, r − 1
// along MPI_Scan's chain. A hint for stealing between ranks, not a bound.
double applications_before_exclusive(GlobalScanAlgorithm algorithm, int rank, int ranks);

namespace detail {

// A byte message of any length in flight; the buffer lives until completion.
struct PendingSend {
  ByteBuffer bytes;
  MPI_Request request = MPI_REQUEST_NULL;
};
void isend_bytes(MPI_Comm comm, int dest, int tag, std::deque<PendingSend>& pending, ByteBuffer bytes);
ByteBuffer recv_bytes(MPI_Comm comm, int source, int tag, const WhileWaiting& meanwhile = {});
void wait_all(std::deque<PendingSend>& pending);

// MPI_Scan over fixed-size byte records with a non-commutative user op that
// calls `combine(left_record, inout_record)` (inout = left ⊕ inout).
using RecordCombiner = std::function<void(const unsigned char* left, unsigned char* inout)>;
void mpi_scan_records(MPI_Comm comm, const unsigned char* in, unsigned char* out, std::size_t record_size,
                      const RecordCombiner& combine, const WhileWaiting& meanwhile = {});

constexpr int kScanTagBase = 0x5CA0;

// The MPI_Scan algorithm's part of global_inclusive_scan: `cur` through
// MPI_Scan as fixed-size records, `combine(left, right)` as its operator.
template <class T, class Codec, class Combine>
ScanPartial<T> mpi_scan_partial(MPI_Comm comm, const ScanPartial<T>& cur, Combine& combine,
                                const WhileWaiting& meanwhile) {
  // Fixed-size records: [u64 length][encoded partial][padding]. A bitwise
  // element's result has the same size as the inputs; a variable one may
  // grow, bounded by the sum of all inputs for concatenation-like
  // operators — a larger result fails cleanly instead of overflowing.
  ByteBuffer bytes;
  cur.template encode<Codec>(bytes);
  unsigned long long length = bytes.size(), capacity = 0;
  constexpr bool bitwise =
      std::is_trivially_copyable_v<T> && std::is_same_v<Codec, ScanElementCodec<T>> && !std::is_same_v<T, std::string>;
  // A bitwise element's record size is known without asking: an
  // all-reduce here would make every rank wait for the slowest rank's sum.
  if (bitwise) capacity = 1 + 2 * sizeof(std::int64_t) + sizeof(T);
  else MPI_Allreduce(&length, &capacity, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
  capacity = std::max<unsigned long long>(capacity, 64);  // room for a failure message
  const std::size_t record = sizeof(std::uint64_t) + capacity;
  auto write = [&](const ScanPartial<T>& p, unsigned char* dst) {
    ByteBuffer b;
    p.template encode<Codec>(b);
    if (b.size() > capacity) {
      b.clear();
      ScanPartial<T>::failure(ErrorKind::failure,
                              "scan: a partial result outgrew the MPI_Scan record; use another global algorithm")
          .template encode<Codec>(b);
      b.resize(std::min<std::size_t>(b.size(), capacity));
    }
    std::uint64_t n = b.size();
    std::memcpy(dst, &n, sizeof n);
    std::memcpy(dst + sizeof n, b.data(), b.size());
  };
  auto read = [&](const unsigned char* src) {
    std::uint64_t n = 0;
    std::memcpy(&n, src, sizeof n);
    if (n > capacity) return ScanPartial<T>::failure(ErrorKind::failure, "scan: corrupt MPI_Scan record");
    return ScanPartial<T>::template decode<Codec>(src + sizeof n, n);
  };
  ByteBuffer in(record, 0), out(record, 0);
  write(cur, in.data());
  detail::mpi_scan_records(
      comm, in.data(), out.data(), record,
      [&](const unsigned char* left, unsigned char* inout) {
        try {  // nothing may unwind through MPI's C frames
          write(combine(read(left), read(inout)), inout);
        } catch (const std::exception& e) {
          write(ScanPartial<T>::failure(ErrorKind::failure, e.what()), inout);
        }
      },
      meanwhile);
  return read(out.data());
}

}  // namespace detail

// Inclusive scan over ranks: rank r gets mine_0 ⊕ … ⊕ mine_r. `apply(l, r)`
// applies the operator to two partials holding values (and may time it).
// With `result_needed` false on the last rank (whose inclusive result goes to
// nobody: it never sends in these algorithms) it only receives its messages
// and returns `mine`, applying nothing — each of its applications would hold
// up its own final phase for a result that is thrown away. MPI_Scan ignores it
// (MPI's own algorithm may send a rank's partial sums anywhere). `meanwhile`
// runs between polls while the rank waits for a message.
template <class T, class Codec = ScanElementCodec<T>, class Apply>
ScanPartial<T> global_inclusive_scan(MPI_Comm comm, const ScanPartial<T>& mine, GlobalScanAlgorithm algorithm,
                                     Apply&& apply, bool result_needed = true, const WhileWaiting& meanwhile = {}) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const bool discard = !result_needed && rank + 1 == size && algorithm != GlobalScanAlgorithm::mpi_scan;
  auto combine = [&](const ScanPartial<T>& l, const ScanPartial<T>& r) {
    return discard ? r : combine_partials(l, r, apply);
  };
  std::deque<detail::PendingSend> pending;
  auto send = [&](int dest, int round, const ScanPartial<T>& p) {
    ByteBuffer bytes;
    p.template encode<Codec>(bytes);
    detail::isend_bytes(comm, dest, detail::kScanTagBase + round, pending, std::move(bytes));
  };
  auto recv = [&](int source, int round) {
    ByteBuffer bytes = detail::recv_bytes(comm, source, detail::kScanTagBase + round, meanwhile);
    return ScanPartial<T>::template decode<Codec>(bytes.data(), bytes.size());
  };

  ScanPartial<T> cur = mine;
  if (size == 1) return cur;
  switch (algorithm) {
    case GlobalScanAlgorithm::dissemination: {
      int round = 0;
      for (int d = 1; d < size; d *= 2, ++round) {
        if (rank + d < size) send(rank + d, round, cur);
        if (rank - d >= 0) cur = combine(recv(rank - d, round), cur);
        detail::wait_all(pending);
      }
      break;
    }
    case GlobalScanAlgorithm::blelloch: {
      int round = 0, top = 1;
      for (int d = 1; d < size; d *= 2, ++round) {  // up-sweep: subtree sums at right children
        top = d;
        if ((rank + 1) % (2 * d) == 0) cur = combine(recv(rank - d, round), cur);
        else if ((rank + 1) % (2 * d) == d && rank + d < size) send(rank + d, round, cur);
      }
      for (int d = top; d >= 1; d /= 2, ++round) {  // down-sweep: complete prefixes flow right
        if ((rank + 1) % (2 * d) == 0 && rank + d < size) send(rank + d, round, cur);
        else if (rank - d >= 0 && (rank - d + 1) % (2 * d) == 0) cur = combine(recv(rank - d, round), cur);
      }
      detail::wait_all(pending);
      break;
    }
    case GlobalScanAlgorithm::ladner_fischer: {
      // 1. odd ranks take their left neighbour: pair sums.
      if (rank % 2 == 1) cur = combine(recv(rank - 1, 0), cur);
      else if (rank + 1 < size) send(rank + 1, 0, cur);
      // 2. Sklansky over the odd ranks (index j): in the round of block size
      //    2d, the last of each block's first half sends to its whole second half.
      const int odd = size / 2;
      int round = 1;
      for (int d = 1; d < odd; d *= 2, ++round) {
        if (rank % 2 != 1) continue;
        const int j = (rank - 1) / 2;
        if (j % (2 * d) >= d) {
          const int s = (j / (2 * d)) * (2 * d) + d - 1;
          cur = combine(recv(2 * s + 1, round), cur);
        } else if (j % (2 * d) == d - 1) {
          for (int k = j + 1; k <= j + d && k < odd; ++k) send(2 * k + 1, round, cur);
        }
      }
      // 3. even ranks take the complete prefix of their left neighbour.
      const int last_round = 1 + 32;
      if (rank % 2 == 0 && rank > 0) cur = combine(recv(rank - 1, last_round), cur);
      else if (rank % 2 == 1 && rank + 1 < size) send(rank + 1, last_round, cur);
      detail::wait_all(pending);
      break;
    }
    case GlobalScanAlgorithm::mpi_scan: cur = detail::mpi_scan_partial<T, Codec>(comm, cur, combine, meanwhile); break;
  }
  return cur;
}

// What rank r needs for its final phase: the inclusive result of rank r−1
// (empty on rank 0), by one shift to the right. Split in two halves so a
// rank can take its exclusive prefix as soon as it arrives — it does not
// depend on the rank's own part of the global phase, which may still be
// running: send_inclusive_right() after the global scan, and an
// ExclusiveReceiver polled (or waited on) whenever convenient.
namespace detail {
constexpr int kExclusiveTag = kScanTagBase + 63;
}  // namespace detail

template <class T, class Codec = ScanElementCodec<T>>
class ExclusiveReceiver {
 public:
  explicit ExclusiveReceiver(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    done_ = rank_ == 0;
  }
  // Non-blocking: true once the left neighbour's inclusive result is here.
  bool poll() {
    if (done_) return true;
    int found = 0;
    MPI_Status status;
    MPI_Iprobe(rank_ - 1, detail::kExclusiveTag, comm_, &found, &status);
    if (found) take();
    return done_;
  }
  void wait() {
    if (!done_) take();
  }
  bool done() const { return done_; }
  const ScanPartial<T>& value() const { return value_; }

 private:
  void take() {
    ByteBuffer bytes = detail::recv_bytes(comm_, rank_ - 1, detail::kExclusiveTag);
    value_ = ScanPartial<T>::template decode<Codec>(bytes.data(), bytes.size());
    done_ = true;
  }
  MPI_Comm comm_;
  int rank_ = 0;
  bool done_ = false;
  ScanPartial<T> value_;
};

// The sending half: rank r's inclusive result to rank r+1 (if any). Complete
// `pending` with detail::wait_all.
template <class T, class Codec = ScanElementCodec<T>>
void send_inclusive_right(MPI_Comm comm, const ScanPartial<T>& inclusive, std::deque<detail::PendingSend>& pending) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank + 1 < size) {
    ByteBuffer bytes;
    inclusive.template encode<Codec>(bytes);
    detail::isend_bytes(comm, rank + 1, detail::kExclusiveTag, pending, std::move(bytes));
  }
}

template <class T, class Codec = ScanElementCodec<T>>
ScanPartial<T> exclusive_from_inclusive(MPI_Comm comm, const ScanPartial<T>& inclusive) {
  std::deque<detail::PendingSend> pending;
  ExclusiveReceiver<T, Codec> receiver(comm);
  send_inclusive_right<T, Codec>(comm, inclusive, pending);
  receiver.wait();
  detail::wait_all(pending);
  return receiver.value();
}

}  // namespace driftscan::mpi
