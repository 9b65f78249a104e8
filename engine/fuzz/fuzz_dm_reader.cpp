// libFuzzer target for the DigitalMicrograph DM3/DM4 reader (the tag-tree parser): every input
// listed as signals, each opened and every frame (up to 64) read; see
// fuzz_input.hpp for what counts as a bug. Built with -DDRIFTSCAN_FUZZ=ON and
// clang; run by scripts/fuzz.
#include <cstddef>
#include <cstdint>

#include "driftscan/core/error.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = driftscan::fuzz::input_file("fuzz-dm", data, size);
  try {
    driftscan::fuzz::read_signals(path, "DigitalMicrograph");
  } catch (const driftscan::Error&) {
    // refused with a message: the expected outcome for most inputs
  }
  return 0;
}
