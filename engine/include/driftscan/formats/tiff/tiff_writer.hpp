#pragma once
// Writing TIFF: float32 or uint16 stacks with ImageJ-compatible metadata
// (pixel size and unit; stacks as hyperstacks Fiji reads), BigTIFF
// automatically when the file would pass 4 GB. Always written under a
// temporary name in the destination folder and renamed on commit(), so an
// interrupted write never leaves a file that looks complete.
#include <cstddef>
#include <memory>
#include <string>

#include "driftscan/core/frame.hpp"

namespace driftscan {

enum class SampleFormat { uint16, float32 };

struct TiffWriteOptions {
  SampleFormat format = SampleFormat::float32;
  double pixel_size = 0.0;  // 0: unknown, no calibration written
  std::string unit;         // e.g. "nm"
  bool force_bigtiff = false;
};

class TiffStackWriter {
 public:
  // `frames` is the number of frames that will be appended (ImageJ's header
  // needs it up front, and it decides BigTIFF).
  TiffStackWriter(const std::string& path, int width, int height, std::size_t frames,
                  const TiffWriteOptions& options = {});
  ~TiffStackWriter();  // removes the temporary file unless commit() ran
  TiffStackWriter(const TiffStackWriter&) = delete;
  TiffStackWriter& operator=(const TiffStackWriter&) = delete;

  void append(const Frame& frame);  // uint16 output rounds and clamps
  void commit();                    // closes, checks the count, renames into place
  const std::string& path() const;
  bool bigtiff() const;                       // chosen at construction (forced or > 4 GB)
  const std::string& temporary_path() const;  // where the data go until commit()

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// One frame, atomically (temporary name, then rename).
void write_tiff(const std::string& path, const Frame& frame, const TiffWriteOptions& options = {});

}  // namespace driftscan
