// libFuzzer target for the TIA SER reader (header, offset table, elements): every input
// listed as signals, each opened and every frame (up to 64) read; see
// fuzz_input.hpp for what counts as a bug. Built with -DDRIFTSCAN_FUZZ=ON and
// clang; run by scripts/fuzz.
#include <cstddef>
#include <cstdint>

#include "driftscan/core/error.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = driftscan::fuzz::input_file("fuzz-ser", data, size);
  try {
    driftscan::fuzz::read_signals(path, "TIA SER/EMI");
  } catch (const driftscan::Error&) {
    // refused with a message: the expected outcome for most inputs
  }
  return 0;
}
