#pragma once
// MRC/MRCS (2014 standard) image stacks: modes 0 (int8), 1 (int16), 2 (float32),
// 6 (uint16) and 12 (float16, converted); complex modes are refused. Sections
// (z) are the frames; the extended header is skipped by its size (NSYMBT);
// the pixel size is the cell size over the grid size (Angstrom, given in nm).
// Rows are in file order (row 0 = first stored row), as mrcfile reads them.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/formats/series_signal.hpp"

namespace driftscan {

// The signals in the file; throws Error(bad_input) naming the file when it
// is not a readable MRC file.
std::vector<SignalInfo> list_mrc_signals(const std::string& path);
// Signal `index` (of list_mrc_signals) as a frame source with a frame cache of cache_bytes.
std::unique_ptr<FrameSource> open_mrc_signal(const std::string& path, std::size_t index, std::size_t cache_bytes);

}  // namespace driftscan
