#include "driftscan/mpi/scan/global_scan.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>

#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/job/job_fields.hpp"
#include "driftscan/mpi/runtime/idle_wait.hpp"

namespace driftscan::mpi {

// In the order of the engine's scan_algorithm_names(), which spells them.
const std::vector<GlobalScanAlgorithm>& all_global_scan_algorithms() {
  static const std::vector<GlobalScanAlgorithm> all{GlobalScanAlgorithm::mpi_scan, GlobalScanAlgorithm::dissemination,
                                                    GlobalScanAlgorithm::blelloch, GlobalScanAlgorithm::ladner_fischer};
  return all;
}

const char* to_string(GlobalScanAlgorithm algorithm) {
  const auto& all = all_global_scan_algorithms();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i] == algorithm) return scan_algorithm_names()[i].c_str();
  return "unknown";
}

GlobalScanAlgorithm global_scan_algorithm_from_string(const std::string& name) {
  for (auto a : all_global_scan_algorithms())
    if (name == to_string(a)) return a;
  throw bad_input("unknown scan algorithm '" + name + "' (expected " + one_of(scan_algorithm_names()) + ")");
}

double applications_before_exclusive(GlobalScanAlgorithm algorithm, int rank, int ranks) {
  if (rank <= 1) return 0.0;  // rank 0's sum is rank 1's prefix, sent at once
  const double log_r = std::ceil(std::log2(double(rank)));
  switch (algorithm) {
    case GlobalScanAlgorithm::mpi_scan: return double(rank - 1);
    case GlobalScanAlgorithm::blelloch: return std::min(2.0 * std::ceil(std::log2(double(ranks))), 2.0 * log_r);
    default: return log_r;
  }
}

namespace detail {

void isend_bytes(MPI_Comm comm, int dest, int tag, std::deque<PendingSend>& pending, ByteBuffer bytes) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) throw failure("scan: a partial result exceeds 2 GiB");
  pending.push_back(PendingSend{std::move(bytes), MPI_REQUEST_NULL});
  auto& p = pending.back();
  MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, dest, tag, comm, &p.request);
}

ByteBuffer recv_bytes(MPI_Comm comm, int source, int tag, const WhileWaiting& meanwhile) {
  if (meanwhile) meanwhile();  // also when the message is already here: the last chance for a while
  MPI_Status status = probe_idle(source, tag, comm, meanwhile);
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  ByteBuffer bytes(static_cast<std::size_t>(count));
  MPI_Recv(bytes.data(), count, MPI_BYTE, source, tag, comm, MPI_STATUS_IGNORE);
  return bytes;
}

void wait_all(std::deque<PendingSend>& pending) {
  for (auto& p : pending) wait_idle(p.request);
  pending.clear();
}

namespace {
// The user function has no closure argument, so it finds the (generic)
// combiner through a process-wide pointer. Not thread-local: MPI_Iscan's op
// runs in whichever thread drives MPI progress (with MPI_THREAD_MULTIPLE that
// may be another thread polling MPI). One MPI_Scan of the scan at a time per
// process: only the master thread runs the global phase.
struct ScanOpContext {
  const RecordCombiner* combine = nullptr;
  std::size_t record_size = 0;
};
std::atomic<const ScanOpContext*> g_context{nullptr};

extern "C" void scan_record_op(void* invec, void* inoutvec, int* len, MPI_Datatype*) {
  // MPI guarantees for a non-commutative op: inout = in ⊕ inout, `in` from the lower ranks.
  const ScanOpContext* context = g_context.load(std::memory_order_acquire);
  auto* in = static_cast<const unsigned char*>(invec);
  auto* inout = static_cast<unsigned char*>(inoutvec);
  for (int i = 0; i < *len; ++i) (*context->combine)(in + i * context->record_size, inout + i * context->record_size);
}
}  // namespace

void mpi_scan_records(MPI_Comm comm, const unsigned char* in, unsigned char* out, std::size_t record_size,
                      const RecordCombiner& combine, const WhileWaiting& meanwhile) {
  if (record_size > static_cast<std::size_t>(INT_MAX)) throw failure("scan: MPI_Scan record exceeds 2 GiB");
  MPI_Datatype type;
  MPI_Type_contiguous(static_cast<int>(record_size), MPI_BYTE, &type);
  MPI_Type_commit(&type);
  MPI_Op op;
  MPI_Op_create(&scan_record_op, /*commute=*/0, &op);
  const ScanOpContext context{&combine, record_size};
  g_context.store(&context, std::memory_order_release);
  MPI_Request request;
  MPI_Iscan(in, out, 1, type, op, comm, &request);
  wait_idle(request, MPI_STATUS_IGNORE, meanwhile);  // the op runs while MPI progresses the scan
  g_context.store(nullptr, std::memory_order_release);
  MPI_Op_free(&op);
  MPI_Type_free(&type);
}

}  // namespace detail
}  // namespace driftscan::mpi
