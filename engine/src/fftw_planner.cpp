#include "driftscan/fftw_planner.hpp"

#include <stdexcept>
#include <string>

namespace driftscan {

std::mutex& fftw_planner_mutex() {
  static std::mutex m;
  return m;
}

namespace {
template <class P>
P checked(P p, const char* what, int ny, int nx) {
  if (!p) throw std::runtime_error(std::string("FFTW could not plan a ") + what + " of " +
                                   std::to_string(nx) + "x" + std::to_string(ny));
  return p;
}
}  // namespace

void FftwPlan::reset() {
  if (!plan_) return;
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  fftw_destroy_plan(plan_);
  plan_ = nullptr;
}

FftwPlan FftwPlan::r2c_2d(int ny, int nx, double* in, fftw_complex* out, unsigned flags) {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  return FftwPlan(checked(fftw_plan_dft_r2c_2d(ny, nx, in, out, flags), "r2c transform", ny, nx));
}

FftwPlan FftwPlan::c2r_2d(int ny, int nx, fftw_complex* in, double* out, unsigned flags) {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  return FftwPlan(checked(fftw_plan_dft_c2r_2d(ny, nx, in, out, flags), "c2r transform", ny, nx));
}

FftwPlan FftwPlan::dft_2d(int ny, int nx, fftw_complex* in, fftw_complex* out, int sign, unsigned flags) {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  return FftwPlan(checked(fftw_plan_dft_2d(ny, nx, in, out, sign, flags), "complex transform", ny, nx));
}

void FftwfPlan::reset() {
  if (!plan_) return;
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  fftwf_destroy_plan(plan_);
  plan_ = nullptr;
}

FftwfPlan FftwfPlan::r2c_2d(int ny, int nx, float* in, fftwf_complex* out, unsigned flags) {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  return FftwfPlan(checked(fftwf_plan_dft_r2c_2d(ny, nx, in, out, flags), "r2c transform", ny, nx));
}

FftwfPlan FftwfPlan::c2r_2d(int ny, int nx, fftwf_complex* in, float* out, unsigned flags) {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  return FftwfPlan(checked(fftwf_plan_dft_c2r_2d(ny, nx, in, out, flags), "c2r transform", ny, nx));
}

FftwfPlan FftwfPlan::dft_2d(int ny, int nx, fftwf_complex* in, fftwf_complex* out, int sign,
                            unsigned flags) {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  return FftwfPlan(checked(fftwf_plan_dft_2d(ny, nx, in, out, sign, flags), "complex transform", ny, nx));
}

}  // namespace driftscan
