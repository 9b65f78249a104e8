#pragma once
// FFTW's double (fftw_) and single (fftwf_) precision interfaces under one
// name: FftwTraits<double> and FftwTraits<float>. Code templated on the real
// type calls FftwTraits<R>::... and picks the precision once, where R is chosen.
//
// Only the functions DriftScan uses are listed. Planning and destroying plans
// must hold fftw_planner_mutex() (fftw_planner.hpp); executing on new arrays
// does not. The FFTW-MPI functions are in driftscan/mpi/fftw_mpi_traits.hpp.
#include <fftw3.h>

#include <complex>
#include <cstddef>

namespace driftscan {

template <class R>
struct FftwTraits;

// The real type of T (float, double, or std::complex of either): the
// precision of FFTW's arrays of T.
template <class T>
struct FftwReal {
  using type = T;
};
template <class T>
struct FftwReal<std::complex<T>> {
  using type = T;
};
template <class T>
using fftw_real_t = typename FftwReal<T>::type;

template <>
struct FftwTraits<double> {
  using real = double;
  using complex = fftw_complex;
  using plan = fftw_plan;
  using iodim64 = fftw_iodim64;
  static constexpr const char* wisdom_name = "fftw3.wisdom";

  static void* malloc(std::size_t bytes) { return fftw_malloc(bytes); }
  static void free(void* p) { fftw_free(p); }
  static complex* alloc_complex(std::size_t n) { return fftw_alloc_complex(n); }
  static int alignment_of(real* p) { return fftw_alignment_of(p); }
  static int init_threads() { return fftw_init_threads(); }
  static void plan_with_nthreads(int threads) { fftw_plan_with_nthreads(threads); }

  static plan plan_dft_2d(int ny, int nx, complex* in, complex* out, int sign, unsigned flags) {
    return fftw_plan_dft_2d(ny, nx, in, out, sign, flags);
  }
  static plan plan_dft_r2c_2d(int ny, int nx, real* in, complex* out, unsigned flags) {
    return fftw_plan_dft_r2c_2d(ny, nx, in, out, flags);
  }
  static plan plan_dft_c2r_2d(int ny, int nx, complex* in, real* out, unsigned flags) {
    return fftw_plan_dft_c2r_2d(ny, nx, in, out, flags);
  }
  static plan plan_guru64_dft(int rank, const iodim64* dims, int howmany_rank, const iodim64* howmany, complex* in,
                              complex* out, int sign, unsigned flags) {
    return fftw_plan_guru64_dft(rank, dims, howmany_rank, howmany, in, out, sign, flags);
  }
  static plan plan_guru64_dft_r2c(int rank, const iodim64* dims, int howmany_rank, const iodim64* howmany, real* in,
                                  complex* out, unsigned flags) {
    return fftw_plan_guru64_dft_r2c(rank, dims, howmany_rank, howmany, in, out, flags);
  }
  static plan plan_guru64_dft_c2r(int rank, const iodim64* dims, int howmany_rank, const iodim64* howmany, complex* in,
                                  real* out, unsigned flags) {
    return fftw_plan_guru64_dft_c2r(rank, dims, howmany_rank, howmany, in, out, flags);
  }

  static void execute(plan p) { fftw_execute(p); }
  static void execute_dft(plan p, complex* in, complex* out) { fftw_execute_dft(p, in, out); }
  static void execute_dft_r2c(plan p, real* in, complex* out) { fftw_execute_dft_r2c(p, in, out); }
  static void execute_dft_c2r(plan p, complex* in, real* out) { fftw_execute_dft_c2r(p, in, out); }
  static void destroy_plan(plan p) { fftw_destroy_plan(p); }

  static int import_wisdom_from_filename(const char* file) { return fftw_import_wisdom_from_filename(file); }
  static int export_wisdom_to_filename(const char* file) { return fftw_export_wisdom_to_filename(file); }
};

template <>
struct FftwTraits<float> {
  using real = float;
  using complex = fftwf_complex;
  using plan = fftwf_plan;
  using iodim64 = fftwf_iodim64;
  static constexpr const char* wisdom_name = "fftw3f.wisdom";

  static void* malloc(std::size_t bytes) { return fftwf_malloc(bytes); }
  static void free(void* p) { fftwf_free(p); }
  static complex* alloc_complex(std::size_t n) { return fftwf_alloc_complex(n); }
  static int alignment_of(real* p) { return fftwf_alignment_of(p); }
  static int init_threads() { return fftwf_init_threads(); }
  static void plan_with_nthreads(int threads) { fftwf_plan_with_nthreads(threads); }

  static plan plan_dft_2d(int ny, int nx, complex* in, complex* out, int sign, unsigned flags) {
    return fftwf_plan_dft_2d(ny, nx, in, out, sign, flags);
  }
  static plan plan_dft_r2c_2d(int ny, int nx, real* in, complex* out, unsigned flags) {
    return fftwf_plan_dft_r2c_2d(ny, nx, in, out, flags);
  }
  static plan plan_dft_c2r_2d(int ny, int nx, complex* in, real* out, unsigned flags) {
    return fftwf_plan_dft_c2r_2d(ny, nx, in, out, flags);
  }
  static plan plan_guru64_dft(int rank, const iodim64* dims, int howmany_rank, const iodim64* howmany, complex* in,
                              complex* out, int sign, unsigned flags) {
    return fftwf_plan_guru64_dft(rank, dims, howmany_rank, howmany, in, out, sign, flags);
  }
  static plan plan_guru64_dft_r2c(int rank, const iodim64* dims, int howmany_rank, const iodim64* howmany, real* in,
                                  complex* out, unsigned flags) {
    return fftwf_plan_guru64_dft_r2c(rank, dims, howmany_rank, howmany, in, out, flags);
  }
  static plan plan_guru64_dft_c2r(int rank, const iodim64* dims, int howmany_rank, const iodim64* howmany, complex* in,
                                  real* out, unsigned flags) {
    return fftwf_plan_guru64_dft_c2r(rank, dims, howmany_rank, howmany, in, out, flags);
  }

  static void execute(plan p) { fftwf_execute(p); }
  static void execute_dft(plan p, complex* in, complex* out) { fftwf_execute_dft(p, in, out); }
  static void execute_dft_r2c(plan p, real* in, complex* out) { fftwf_execute_dft_r2c(p, in, out); }
  static void execute_dft_c2r(plan p, complex* in, real* out) { fftwf_execute_dft_c2r(p, in, out); }
  static void destroy_plan(plan p) { fftwf_destroy_plan(p); }

  static int import_wisdom_from_filename(const char* file) { return fftwf_import_wisdom_from_filename(file); }
  static int export_wisdom_to_filename(const char* file) { return fftwf_export_wisdom_to_filename(file); }
};

}  // namespace driftscan
