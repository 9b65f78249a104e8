#pragma once
// One signal of a microscope file: a detector (HAADF, ABF, a camera), an
// element map, or the one image series of a single-signal file. A file
// holds one or more; each is a stack of frames of one size and type, or
// (a spectrum) a 1-D signal, which is no image series.
#include <cstddef>
#include <string>

#include "driftscan/core/scan_timing.hpp"

namespace driftscan {

struct SignalInfo {
  std::string name;    // as the file names it (detector, image name), unique in the file
  std::string format;  // "TIFF", "DM3", "DM4", "MRC", "SER", "Velox EMD", "Berkeley EMD"
  std::size_t frames = 0;
  int width = 0;
  int height = 0;
  std::string pixel_type;   // "uint16", "float32", "rgb", ...
  double pixel_size = 0.0;  // physical size of a pixel, 0 when unknown
  std::string unit;         // unit of pixel_size ("nm", "1/nm", ...)
  RecordedScan scan;        // the scan's timing, where the file records it
  // The scan rotation where the file records it in its index (DigiScan's
  // tag); a reader that keeps it per frame (Velox) reads it when asked.
  RecordedRotations rotations;
  // 1 for a 1-D signal (a spectrum: EELS, EDX), whose frames are `width`
  // channels long and `height` 1; it is listed but is no image series.
  int dimensions = 2;

  bool is_image() const { return dimensions >= 2; }
  // "1-D spectrum, 2048 channels" (", 5 spectra" when there are several).
  std::string one_d_summary() const;
};

// Lengths in metres or Angstrom (and their reciprocals) restated in nm
// (1/nm), the unit the TIFF outputs and the app's scale bar use; other units
// are kept as they are. "um"/"\u00b5m" becomes "um".
void normalise_length_unit(double& size, std::string& unit);

}  // namespace driftscan
