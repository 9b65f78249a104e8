#pragma once
// The one entry point from a path to frames: the reader is chosen by the
// file's content (magic bytes, the HDF5 signature), not by its extension,
// from the table of readers (format_reader.hpp) — TIFF (and folders / globs
// of TIFFs), DM3/DM4, MRC, TIA SER/EMI, Velox and Berkeley EMD. A file may
// hold several signals (detectors); one is opened by name (or by its index
// in list_signals), the first image when none is given. A 1-D signal (a
// spectrum) is listed but is no image series: opening it is bad input.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/formats/series_signal.hpp"

namespace driftscan {

// The signals of a file (a TIFF series is one signal, "image").
std::vector<SignalInfo> list_signals(const std::string& path);

// Frames of one signal; `signal` is a name from list_signals, its index
// ("0", "1", ...) or empty for the first image. An unknown name, or a 1-D
// signal, is bad input naming the file (and the signals it holds).
std::unique_ptr<FrameSource> open_series(const std::string& path, const std::string& signal = "",
                                         std::size_t cache_bytes = std::size_t(256) << 20);

// The index of `signal` among `known` (same rules as open_series; empty: the
// first image, or the first signal when the file holds no image).
std::size_t find_signal(const std::string& path, const std::vector<SignalInfo>& known, const std::string& signal);

// Error(bad_input) naming the file when `s` is a 1-D signal: "PATH: signal
// 'EELS' is a 1-D spectrum, 2048 channels, not an image series".
void require_image_series(const std::string& path, const SignalInfo& s);

}  // namespace driftscan
