#include "driftscan/mpi/register/uncertainty_in_scan.hpp"

#include <chrono>
#include <cstring>
#include <exception>

#include "driftscan/core/error.hpp"

namespace driftscan::mpi {

UncertaintyInScan::UncertaintyInScan(const RegistrationOperator& op, std::size_t first, std::size_t last, bool on)
    : op_(&op), first_(first), last_(last), on_(on && last > first) {
  if (!on_) return;
  const FrameSource& frames = op.frames();
  counts_ = looks_like_counts(frames.frame(0));  // as estimate_drift_uncertainty
  centre_ = {(frames.width() - 1) / 2.0, (frames.height() - 1) / 2.0};
  frames_.resize(last - first);
}

void UncertaintyInScan::add(const Registration& r) noexcept {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (!on_ || r.to < first_ || r.to >= last_) return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    DriftUncertainty u = frame_drift_uncertainty(*op_, r, counts_, centre_);
    const std::lock_guard<std::mutex> lock(mu_);
    frames_[r.to - first_] = Entry{r, u};
  } catch (...) {
    const std::lock_guard<std::mutex> lock(mu_);
    on_ = false;
  }
  const std::lock_guard<std::mutex> lock(mu_);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::optional<std::vector<DriftUncertainty>> UncertaintyInScan::take(const std::vector<Registration>& registrations,
                                                                     Progress* progress, const CancelToken* cancel) {
  std::vector<std::optional<Entry>> frames;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (!on_ || registrations.size() != frames_.size()) return std::nullopt;
    frames.swap(frames_);
    on_ = false;
  }
  std::vector<DriftUncertainty> out;
  out.reserve(frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    bool same = false;
    if (frames[i]) {
      const auto a = frames[i]->from.to_bytes(), b = registrations[i].to_bytes();
      same = std::memcmp(a.data(), b.data(), a.size()) == 0;
    }
    if (cancel) cancel->throw_if_cancelled();
    out.push_back(same ? frames[i]->u : frame_drift_uncertainty(*op_, registrations[i], counts_, centre_));
    if (progress) progress->advance(i + 1);
  }
  return out;
}

}  // namespace driftscan::mpi
