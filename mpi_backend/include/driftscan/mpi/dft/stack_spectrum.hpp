#pragma once
// The 3-D spectrum of an image stack (t, y, x) with the distributed DFT:
// n0 = planes (frames, or bins of frames), n1 = height, n2 = width. A
// real-to-complex slab-pencil plan with natural input makes every rank's
// input box a slab of planes, so each rank reads only its own frames from the
// FrameSource; the half spectrum it gets back is completed from Hermitian
// symmetry, F(-k) = conj F(k), when rank 0 assembles the output plane by
// plane (it never holds the volume).
//
// What is transformed, per plane t (all in double):
//   g(t,y,x) = wt(t) * wxy(y,x) * (f_t(y,x) - m_t)
// f_t: frame t, warped into frame 0's coordinates when transforms are given
// (the averaging's warp, pixels outside frame k count as missing), or the
// mean of a bin of such frames; missing (non-finite) pixels count as m_t.
// m_t: the wxy-weighted mean of f_t, so the whole kx = ky = 0 line is exactly
// zero: a frame's mean (dose flicker, fading) would otherwise be the
// brightest line of the volume and leak into its neighbours through the taper.
// wxy: the Hann window of the 2-D spectra (PowerSpectrum), so the (kx, ky)
// plane at kt = 0 is the 2-D spectrum of the average the app shows beside it,
// without the cross of the frame edges.
// wt: a Tukey window (alpha = 0.25, on sample centres so no plane is
// weighted 0): the series' first and last frames differ (drift, fading),
// which a plain cut would spread along kt; tapering only the outer 12.5% at
// each end keeps most frames at full weight (frames are precious, and the
// kt = 0 plane stays close to the plain average).
//
// Output value: ln(1 + |G|^2 / sum(w^2)) as float32 (the periodogram of the
// 2-D spectra: white noise of variance s^2 has a flat mean power s^2),
// centred on all three axes: voxel (x, y, t) of the volume holds frequency
// ((x - n2/2)/n2, (y - n1/2)/n1, (t - n0/2)/n0) cycles per pixel / frame.
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/frame.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/transform.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/mpi/dft/dft_plan.hpp"
#include "driftscan/mpi/runtime/command.hpp"

namespace driftscan::mpi {

struct StackSpectrumOptions {
  std::vector<Transform> to_frame0;  // T_{0,k} per frame: the registered stack; empty: the raw stack
  Interpolation interpolation = Interpolation::cubic;
  // 0: one plane per frame. Else frames are binned (b = ceil(N / max_frames)
  // consecutive frames averaged per plane, the last N mod b frames left out)
  // so the volume has at most max_frames planes: the whole time span is kept,
  // and the memory stays bounded (the input in double, the half spectrum in
  // complex double and the plan's buffers: measured 25-35 bytes per voxel
  // summed over the ranks, 400 x 256 x 256 on 1-2 ranks).
  std::size_t max_frames = 0;
  bool taper = true;        // false: no windows, only the mean removal (exact-voxel tests)
  int threads = 1;          // OpenMP threads per rank (reading/warping, FFTW)
  std::string volume_path;  // spectrum3d.tif, written by rank 0 (temporary name, then renamed)
  TiffWriteOptions tiff;    // calibration of the written volume (float32)
};

struct StackSpectrumResult {
  std::array<std::size_t, 3> size{0, 0, 0};  // n0 planes, n1, n2
  std::size_t bin = 1;                       // frames per plane
  std::size_t frames_used = 0;               // n0 * bin
  Frame average;              // rank 0: mean of the (registered) frames used; NaN where no frame covers a pixel
  std::string decomposition;  // e.g. "slab-pencil 2"
  double read_s = 0, transform_s = 0, write_s = 0;  // on rank 0 (the transform's slowest rank)
};

// Planes and frames per plane for N frames under a bound (0: none).
struct TimeBinning {
  std::size_t planes = 0, bin = 1;
};
TimeBinning time_binning(std::size_t frames, std::size_t max_frames);

// The taper's factors: w(t,y,x) = t[t] * y[y] * x[x] (all 1 without taper).
struct StackTaper {
  std::vector<double> t, y, x;
};
StackTaper stack_taper(std::size_t n0, std::size_t n1, std::size_t n2, bool taper);

// Collective over ctx.comm: every rank passes the same source and options.
// Emits phases "read" (this rank's frames, rank 0), "transform" and "write"
// (planes) on ctx.progress; polls ctx.cancel. Throws driftscan::Error
// (bad_input: transforms that do not match the frames, an unreadable frame on
// any rank, the same on every rank; failure: the volume cannot be written).
StackSpectrumResult compute_stack_spectrum(const FrameSource& frames, const StackSpectrumOptions& options,
                                           RunContext& ctx);

}  // namespace driftscan::mpi
