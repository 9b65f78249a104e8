#include "driftscan/formats/series_opener.hpp"

#include <filesystem>
#include <fstream>
#include <initializer_list>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/dm_series.hpp"
#include "driftscan/formats/emd_series.hpp"
#include "driftscan/formats/mrc_series.hpp"
#include "driftscan/formats/ser_series.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"

namespace driftscan {
namespace fs = std::filesystem;

const char* to_string(SeriesFormat format) {
  switch (format) {
    case SeriesFormat::tiff: return "TIFF";
    case SeriesFormat::dm: return "DigitalMicrograph";
    case SeriesFormat::mrc: return "MRC";
    case SeriesFormat::ser: return "TIA SER/EMI";
    case SeriesFormat::emd: return "EMD (HDF5)";
  }
  return "?";
}

SeriesFormat detect_series_format(const std::string& path) {
  std::error_code ec;
  // Folders and globs are TIFF series (the TIFF reader names the problem).
  if (!fs::is_regular_file(path, ec)) return SeriesFormat::tiff;
  std::ifstream in(path, std::ios::binary);
  unsigned char b[1024] = {0};
  in.read(reinterpret_cast<char*>(b), sizeof b);
  const auto n = static_cast<std::size_t>(in.gcount());
  using Magic = std::initializer_list<unsigned char>;
  auto at = [&](std::size_t off, Magic magic) {
    return n >= off + magic.size() && std::equal(magic.begin(), magic.end(), b + off);
  };
  const Magic hdf5 = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (at(0, {'I', 'I', 42, 0}) || at(0, {'M', 'M', 0, 42}) || at(0, {'I', 'I', 43, 0}) || at(0, {'M', 'M', 0, 43}))
    return SeriesFormat::tiff;
  // HDF5: the signature at 0 or after a user block of 512, 1024, ... bytes.
  if (at(0, hdf5) || at(512, hdf5)) return SeriesFormat::emd;
  if (n >= 16 && b[0] == 0 && b[1] == 0 && b[2] == 0 && (b[3] == 3 || b[3] == 4)) {
    const std::size_t order_at = b[3] == 3 ? 8 : 12;
    if (b[order_at] == 0 && b[order_at + 1] == 0 && b[order_at + 2] == 0 && b[order_at + 3] <= 1)
      return SeriesFormat::dm;
  }
  if (at(0, {'I', 'I', 0x97, 0x01}) || at(0, {'J', 'K', 0, 2})) return SeriesFormat::ser;
  if (at(208, {'M', 'A', 'P', ' '}) || at(208, {'M', 'A', 'P', 0})) return SeriesFormat::mrc;
  // Large files are checked past the first KiB for a later HDF5 user block.
  if (n == sizeof b) {
    for (std::streamoff off = 1024; off <= (std::streamoff(1) << 20); off *= 2) {
      char sig[8] = {0};
      in.clear();
      in.seekg(off);
      if (in.read(sig, 8) && std::equal(hdf5.begin(), hdf5.end(), reinterpret_cast<unsigned char*>(sig)))
        return SeriesFormat::emd;
    }
  }
  throw bad_input(path + ": not a supported image file (TIFF, DM3/DM4, MRC, TIA SER/EMI, Velox or Berkeley EMD)");
}

std::vector<SignalInfo> list_signals(const std::string& path) {
  switch (detect_series_format(path)) {
    case SeriesFormat::dm: return list_dm_signals(path);
    case SeriesFormat::mrc: return list_mrc_signals(path);
    case SeriesFormat::ser: return list_ser_signals(path);
    case SeriesFormat::emd: return list_emd_signals(path);
    case SeriesFormat::tiff: break;
  }
  auto t = TiffSeries::open(path, std::size_t(0));
  const SeriesInfo& i = t->info();
  SignalInfo s;
  s.name = "image";
  s.format = i.bigtiff ? "BigTIFF" : "TIFF";
  s.frames = i.frames;
  s.width = i.width;
  s.height = i.height;
  s.pixel_type = to_string(i.pixel_type);
  s.pixel_size = i.pixel_size;
  s.unit = i.unit;
  return {s};
}

std::size_t find_signal(const std::string& path, const std::vector<SignalInfo>& signals, const std::string& signal) {
  if (signal.empty()) return 0;
  for (std::size_t i = 0; i < signals.size(); ++i)
    if (signals[i].name == signal) return i;
  if (signal.find_first_not_of("0123456789") == std::string::npos && signal.size() < 9) {
    const std::size_t i = std::stoul(signal);
    if (i < signals.size()) return i;
  }
  std::string names;
  for (const auto& s : signals) names += (names.empty() ? "'" : ", '") + s.name + "'";
  throw bad_input(path + ": no signal '" + signal + "' (the file holds " + names + ")");
}

std::unique_ptr<FrameSource> open_series(const std::string& path, const std::string& signal, std::size_t cache_bytes) {
  const SeriesFormat format = detect_series_format(path);
  if (format == SeriesFormat::tiff) {
    if (!signal.empty() && signal != "image" && signal != "0")
      throw bad_input(path + ": no signal '" + signal + "' (the file holds 'image')");
    return TiffSeries::open(path, cache_bytes);
  }
  const std::size_t index = find_signal(path, list_signals(path), signal);
  switch (format) {
    case SeriesFormat::dm: return open_dm_signal(path, index, cache_bytes);
    case SeriesFormat::mrc: return open_mrc_signal(path, index, cache_bytes);
    case SeriesFormat::ser: return open_ser_signal(path, index, cache_bytes);
    case SeriesFormat::emd: return open_emd_signal(path, index, cache_bytes);
    case SeriesFormat::tiff: break;
  }
  return nullptr;
}

}  // namespace driftscan
