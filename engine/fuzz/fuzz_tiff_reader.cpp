// libFuzzer target for the TIFF reader: every input opened with
// TiffSeries::open and every frame (up to 64) read; see fuzz_input.hpp for
// what counts as a bug. Built with -DDRIFTSCAN_FUZZ=ON and clang; run by
// scripts/fuzz.
#include <cstddef>
#include <cstdint>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = driftscan::fuzz::input_file("fuzz-tiff", data, size);
  driftscan::TiffReadOptions options;
  options.cache_bytes = 1 << 20;
  // 4 MB (a 1024² float frame): a few hundred bytes of CCITT or PackBits
  // legitimately expand to a 4-megapixel frame, whose decode under ASan takes
  // seconds and starves the search; larger claims take the refusal path.
  options.max_frame_bytes = 4 << 20;
  try {
    driftscan::fuzz::read_frames(*driftscan::TiffSeries::open(path, options));
  } catch (const driftscan::Error&) {
    // refused with a message: the expected outcome for most inputs
  }
  return 0;
}
