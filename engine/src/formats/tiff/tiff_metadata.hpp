#pragma once
// The physical pixel size of a TIFF, from whichever of its three usual
// sources is present, most specific first:
//   1. OME-XML in ImageDescription: <Pixels PhysicalSizeX=".." PhysicalSizeXUnit="..">
//      (unit defaults to µm, as the OME schema says);
//   2. ImageJ: ImageDescription starting "ImageJ=" gives `unit=`; the pixel
//      size itself is 1/XResolution in that unit (ImageJ's `spacing=` is the
//      distance between slices, not the pixel size, and is kept apart);
//   3. plain resolution tags: XResolution per inch or centimetre.
// Units are normalised to ASCII short names: "m", "mm", "um", "nm", "pm", "A".
#include <string>
#include <vector>

typedef struct tiff TIFF;  // libtiff's handle (tiffio.h)

namespace driftscan {

struct TiffResolutionTags {
  bool present = false;
  double x = 0.0, y = 0.0;  // pixels per unit
  int unit = 2;             // 1 none, 2 inch, 3 centimetre (TIFF ResolutionUnit)
};

struct PixelCalibration {
  double size = 0.0;           // 0: unknown
  std::string unit;            // normalised short name
  double slice_spacing = 0.0;  // ImageJ spacing=, in `unit` (0: absent)
  std::string source;          // "OME-XML", "ImageJ", "resolution tags" or ""
  std::vector<std::string> warnings;
};

PixelCalibration read_pixel_calibration(const std::string& image_description, const TiffResolutionTags& resolution);

// The calibration of the page `tif` is on, from its ImageDescription and
// resolution tags; `description` (if given) receives the description text.
PixelCalibration read_page_calibration(TIFF* tif, std::string* description = nullptr);

// "micron", "µm", "\\u00B5m", "um" -> "um"; "Å"/"angstrom" -> "A"; others as given.
std::string normalise_length_unit(const std::string& unit);

// The value of `key=` on its own line of an ImageJ description ("" if absent).
std::string imagej_field(const std::string& description, const std::string& key);

}  // namespace driftscan
