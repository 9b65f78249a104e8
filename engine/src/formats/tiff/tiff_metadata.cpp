#include "formats/tiff/tiff_metadata.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

#include <tiffio.h>

namespace driftscan {
namespace {

bool parse_number(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

std::string trim(const std::string& s) {
  std::size_t a = s.find_first_not_of(" \t\r\n\"");
  if (a == std::string::npos) return "";
  std::size_t b = s.find_last_not_of(" \t\r\n\"");
  return s.substr(a, b - a + 1);
}

// The value of attribute `name` in the first element named `element`.
std::string xml_attribute(const std::string& xml, const std::string& element, const std::string& name) {
  std::size_t pos = 0;
  while ((pos = xml.find('<', pos)) != std::string::npos) {
    ++pos;
    std::size_t name_end = xml.find_first_of(" \t\r\n/>", pos);
    if (name_end == std::string::npos) return "";
    std::string tag = xml.substr(pos, name_end - pos);
    std::size_t colon = tag.rfind(':');  // namespace prefixes (ome:Pixels)
    if (colon != std::string::npos) tag = tag.substr(colon + 1);
    if (tag != element) continue;
    std::size_t close = xml.find('>', name_end);
    std::string attrs = xml.substr(name_end, close == std::string::npos ? std::string::npos : close - name_end);
    std::size_t a = 0;
    while ((a = attrs.find(name, a)) != std::string::npos) {
      bool starts = a == 0 || std::isspace(static_cast<unsigned char>(attrs[a - 1]));
      std::size_t eq = attrs.find_first_not_of(" \t\r\n", a + name.size());
      if (starts && eq != std::string::npos && attrs[eq] == '=') {
        std::size_t q = attrs.find_first_not_of(" \t\r\n", eq + 1);
        if (q == std::string::npos || (attrs[q] != '"' && attrs[q] != '\'')) return "";
        std::size_t qe = attrs.find(attrs[q], q + 1);
        if (qe == std::string::npos) return "";
        return attrs.substr(q + 1, qe - q - 1);
      }
      a += name.size();
    }
    return "";
  }
  return "";
}

// OME units may be written as XML entities or UTF-8.
std::string decode_xml_unit(std::string u) {
  const std::pair<const char*, const char*> entities[] = {
      {"&#181;", "\xC2\xB5"}, {"&#xB5;", "\xC2\xB5"}, {"&#197;", "\xC3\x85"}, {"&#xC5;", "\xC3\x85"}, {"&amp;", "&"}};
  for (const auto& e : entities) {
    std::size_t p;
    while ((p = u.find(e.first)) != std::string::npos) u.replace(p, std::strlen(e.first), e.second);
  }
  return u;
}

// Picks a unit that makes `metres` a number between 1 and 1000.
void nice_length(double metres, PixelCalibration& out) {
  struct U {
    const char* name;
    double scale;
  };
  const U units[] = {{"m", 1.0}, {"mm", 1e-3}, {"um", 1e-6}, {"nm", 1e-9}, {"pm", 1e-12}};
  for (const U& u : units) {
    if (metres >= u.scale || &u == &units[4]) {
      out.size = metres / u.scale;
      out.unit = u.name;
      return;
    }
  }
}

}  // namespace

std::string normalise_length_unit(const std::string& raw) {
  std::string u = trim(raw);
  std::string lower;
  for (char c : u) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "micron" || lower == "microns" || lower == "um" || lower == "\\u00b5m" || u == "\xC2\xB5m" ||
      u == "\xCE\xBCm" || lower == "micrometer" || lower == "micrometre")
    return "um";
  if (lower == "nm" || lower == "nanometer" || lower == "nanometre") return "nm";
  if (lower == "pm" || lower == "picometer" || lower == "picometre") return "pm";
  if (lower == "mm" || lower == "millimeter" || lower == "millimetre") return "mm";
  if (lower == "m" || lower == "meter" || lower == "metre") return "m";
  if (lower == "cm" || lower == "centimeter" || lower == "centimetre") return "cm";
  if (lower == "a" || lower == "angstrom" || lower == "\\u00c5" || u == "\xC3\x85" || u == "\xE2\x84\xAB") return "A";
  return u;
}

std::string imagej_field(const std::string& description, const std::string& key) {
  std::istringstream lines(description);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == '=')
      return trim(line.substr(key.size() + 1));
  }
  return "";
}

PixelCalibration read_pixel_calibration(const std::string& description, const TiffResolutionTags& resolution) {
  PixelCalibration out;
  // 1. OME-XML
  if (description.find("<OME") != std::string::npos || description.find(":OME") != std::string::npos) {
    double sx = 0.0, sy = 0.0;
    if (parse_number(xml_attribute(description, "Pixels", "PhysicalSizeX"), sx) && sx > 0) {
      std::string unit = xml_attribute(description, "Pixels", "PhysicalSizeXUnit");
      out.size = sx;
      out.unit = normalise_length_unit(unit.empty() ? "um" : decode_xml_unit(unit));
      out.source = "OME-XML";
      if (parse_number(xml_attribute(description, "Pixels", "PhysicalSizeY"), sy) && sy > 0) {
        std::string yunit = xml_attribute(description, "Pixels", "PhysicalSizeYUnit");
        yunit = normalise_length_unit(yunit.empty() ? "um" : decode_xml_unit(yunit));
        if (yunit == out.unit && std::fabs(sy - sx) > 1e-6 * sx)
          out.warnings.push_back("pixels are not square (PhysicalSizeX " + std::to_string(sx) + ", PhysicalSizeY " +
                                 std::to_string(sy) + "); using X");
      }
      return out;
    }
  }
  // 2. ImageJ
  if (description.compare(0, 7, "ImageJ=") == 0) {
    std::string unit = normalise_length_unit(imagej_field(description, "unit"));
    double spacing = 0.0;
    if (parse_number(imagej_field(description, "spacing"), spacing) && spacing > 0) out.slice_spacing = spacing;
    if (!unit.empty() && unit != "pixel" && resolution.present && resolution.x > 0) {
      out.size = 1.0 / resolution.x;
      out.unit = unit;
      out.source = "ImageJ";
      if (unit == "cm") nice_length(out.size * 1e-2, out);
      if (resolution.y > 0 && std::fabs(resolution.y - resolution.x) > 1e-6 * resolution.x)
        out.warnings.push_back("pixels are not square (XResolution " + std::to_string(resolution.x) + ", YResolution " +
                               std::to_string(resolution.y) + "); using X");
      return out;
    }
    if (!unit.empty() && unit != "pixel") out.unit = unit;
  }
  // 3. resolution tags with an absolute unit
  // 72 dpi is the placeholder many writers put in when they know nothing.
  bool placeholder = resolution.unit == 2 && resolution.x == 72.0;
  if (resolution.present && resolution.x > 0 && !placeholder && (resolution.unit == 2 || resolution.unit == 3)) {
    double metres = (resolution.unit == 2 ? 0.0254 : 0.01) / resolution.x;
    nice_length(metres, out);
    out.source = "resolution tags";
  }
  return out;
}

PixelCalibration read_page_calibration(TIFF* tif, std::string* description) {
  const char* text = nullptr;
  std::string desc;
  if (TIFFGetField(tif, TIFFTAG_IMAGEDESCRIPTION, &text) && text) desc = text;
  TiffResolutionTags resolution;
  float xr = 0.0f, yr = 0.0f;
  std::uint16_t unit = RESUNIT_INCH;
  if (TIFFGetField(tif, TIFFTAG_XRESOLUTION, &xr) && xr > 0) {
    resolution.present = true;
    resolution.x = xr;
    resolution.y = TIFFGetField(tif, TIFFTAG_YRESOLUTION, &yr) ? yr : xr;
    TIFFGetFieldDefaulted(tif, TIFFTAG_RESOLUTIONUNIT, &unit);
    resolution.unit = unit;
  }
  PixelCalibration cal = read_pixel_calibration(desc, resolution);
  if (description) *description = std::move(desc);
  return cal;
}

}  // namespace driftscan
