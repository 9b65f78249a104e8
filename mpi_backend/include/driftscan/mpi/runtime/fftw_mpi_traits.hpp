#pragma once
// FFTW-MPI's double (fftw_mpi_) and single (fftwf_mpi_) precision functions
// under one name, the MPI counterpart of FftwTraits (driftscan/fftw_traits.hpp,
// which has the rest: allocation, execution, plan destruction).
#include <cstddef>

#include <fftw3-mpi.h>
#include <mpi.h>

#include "driftscan/core/fftw_traits.hpp"

namespace driftscan::mpi {

template <class R>
struct FftwMpiTraits;

template <>
struct FftwMpiTraits<double> {
  using F = FftwTraits<double>;
  static void init() { fftw_mpi_init(); }
  static std::ptrdiff_t local_size_3d_transposed(std::ptrdiff_t n0, std::ptrdiff_t n1, std::ptrdiff_t n2, MPI_Comm c,
                                                 std::ptrdiff_t* local_n0, std::ptrdiff_t* local_0_start,
                                                 std::ptrdiff_t* local_n1, std::ptrdiff_t* local_1_start) {
    return fftw_mpi_local_size_3d_transposed(n0, n1, n2, c, local_n0, local_0_start, local_n1, local_1_start);
  }
  static F::plan plan_dft_3d(std::ptrdiff_t n0, std::ptrdiff_t n1, std::ptrdiff_t n2, F::complex* in, F::complex* out,
                             MPI_Comm c, int sign, unsigned flags) {
    return fftw_mpi_plan_dft_3d(n0, n1, n2, in, out, c, sign, flags);
  }
};

template <>
struct FftwMpiTraits<float> {
  using F = FftwTraits<float>;
  static void init() { fftwf_mpi_init(); }
  static std::ptrdiff_t local_size_3d_transposed(std::ptrdiff_t n0, std::ptrdiff_t n1, std::ptrdiff_t n2, MPI_Comm c,
                                                 std::ptrdiff_t* local_n0, std::ptrdiff_t* local_0_start,
                                                 std::ptrdiff_t* local_n1, std::ptrdiff_t* local_1_start) {
    return fftwf_mpi_local_size_3d_transposed(n0, n1, n2, c, local_n0, local_0_start, local_n1, local_1_start);
  }
  static F::plan plan_dft_3d(std::ptrdiff_t n0, std::ptrdiff_t n1, std::ptrdiff_t n2, F::complex* in, F::complex* out,
                             MPI_Comm c, int sign, unsigned flags) {
    return fftwf_mpi_plan_dft_3d(n0, n1, n2, in, out, c, sign, flags);
  }
};

}  // namespace driftscan::mpi
