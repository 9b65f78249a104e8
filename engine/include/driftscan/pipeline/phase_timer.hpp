#pragma once
// The one place a register run's phases are timed: each phase's wall time is
// added to the run's PhaseSeconds, and, given a cancel token, each phase
// starts with a cancel check (a cancel between phases stops the run before
// the next one reads a frame). The MPI executor passes none: its ranks agree
// on a cancel collectively inside their phases, and a check here, seen by
// some ranks and not others, would leave the others waiting in a collective.
// Every executor (serial_register.hpp, the MPI and follow executors) runs its
// phases through one.
#include <chrono>
#include <utility>

#include "driftscan/core/cancel_token.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/pipeline/register_plan.hpp"

namespace driftscan {

class PhaseTimer {
 public:
  using Clock = std::chrono::steady_clock;

  explicit PhaseTimer(PhaseSeconds& seconds, const CancelToken* cancel = nullptr)
      : seconds_(seconds), cancel_(cancel) {}

  // Runs `body` as `phase`; its seconds are kept also when it throws (a
  // failed run's report still says how far it got).
  template <class Body>
  void run(RegisterPhase phase, Body&& body) {
    if (cancel_) cancel_->throw_if_cancelled();
    const Clock::time_point t0 = Clock::now();
    struct Add {
      PhaseTimer& timer;
      RegisterPhase phase;
      Clock::time_point t0;
      ~Add() { timer.add(phase, since(t0)); }
    } add{*this, phase, t0};
    std::forward<Body>(body)();
  }

  // The run's wall time so far (from this timer's construction).
  double total() const { return since(start_); }

  static double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

 private:
  void add(RegisterPhase phase, double s) {
    switch (phase) {
      case RegisterPhase::open: seconds_.open += s; break;
      case RegisterPhase::pairs: seconds_.pairs += s; break;
      case RegisterPhase::scan: seconds_.scan += s; break;
      case RegisterPhase::uncertainty: seconds_.uncertainty += s; break;
      case RegisterPhase::scan_distortion: seconds_.distortion += s; break;
      case RegisterPhase::average: seconds_.average += s; break;
      case RegisterPhase::apply_to: seconds_.apply_to += s; break;
      case RegisterPhase::write: seconds_.write += s; break;
    }
  }

  PhaseSeconds& seconds_;
  const CancelToken* cancel_;
  Clock::time_point start_ = Clock::now();
};

}  // namespace driftscan
