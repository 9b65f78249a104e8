#pragma once
// FEI/Thermo TIA series: SER files (header versions 0x210 with 32-bit and
// 0x220 with 64-bit offsets) of 2-D elements (images): each element is a
// frame, reached through the SER's offset table. An EMI file opens the SER
// files that belong to it (NAME_1.ser, NAME_2.ser, ...), one signal each.
// Calibration from the element (CalibrationDeltaX, metres, given in nm).
// Row orientation: rows are taken in file order (row 0 = first stored row),
// as openNCEM's and RosettaSciIO's readers return them.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/formats/series_signal.hpp"

namespace driftscan {

// The signals in the file; throws Error(bad_input) naming the file when it
// is not a readable SER/EMI file.
std::vector<SignalInfo> list_ser_signals(const std::string& path);
// Signal `index` (of list_ser_signals) as a frame source with a frame cache of cache_bytes.
std::unique_ptr<FrameSource> open_ser_signal(const std::string& path, std::size_t index, std::size_t cache_bytes);

}  // namespace driftscan
