#pragma once
// Velox EMD (Thermo Fisher) and Berkeley EMD (NCEM) through libhdf5.
// Velox: every /Data/Image/<id>/Data dataset (height x width x frames:
// frames along the last axis) is a signal named by its detector, pixel size
// from its per-frame JSON metadata. Berkeley: every dataset "data" of a
// group with emd_group_type = 1, 2-D (one frame) or 3-D (frames along the
// first axis), pixel size from the spacing of its dim vectors. Frames are
// read one at a time as hyperslabs converted to float by HDF5, with HDF5's
// chunk cache bounded; HDF5 calls are serialised (the library is not
// thread-safe in Debian's serial build).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/formats/series_signal.hpp"

namespace driftscan {

// The signals in the file; throws Error(bad_input) naming the file when it
// is not a readable EMD file.
std::vector<SignalInfo> list_emd_signals(const std::string& path);
// Signal `index` (of list_emd_signals) as a frame source with a frame cache of cache_bytes.
std::unique_ptr<FrameSource> open_emd_signal(const std::string& path, std::size_t index, std::size_t cache_bytes);

}  // namespace driftscan
