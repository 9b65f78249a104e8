#pragma once
// Gatan DigitalMicrograph DM3 and DM4: the tag tree parsed from the published
// format description (bounded: sizes checked against the file, nesting depth
// limited), every image of ImageList but the thumbnail listed as a signal.
// 2-D images are one frame, 3-D stacks one frame per plane. Integer and
// float types of every width; RGB converted to luminance; complex refused.
// Pixel size and unit from the image's calibration of its first dimension.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/formats/series_signal.hpp"

namespace driftscan {

// The signals in the file; throws Error(bad_input) naming the file when it
// is not a readable DigitalMicrograph file.
std::vector<SignalInfo> list_dm_signals(const std::string& path);
// Signal `index` (of list_dm_signals) as a frame source with a frame cache of cache_bytes.
std::unique_ptr<FrameSource> open_dm_signal(const std::string& path, std::size_t index, std::size_t cache_bytes);

}  // namespace driftscan
