// TIFF and BigTIFF series (a multi-page file, a folder or a glob of files)
// through TiffSeries (formats/tiff/), which reads them; this file makes it
// one reader of the table. A TIFF series is one signal, "image".
#include "driftscan/core/error.hpp"
#include "driftscan/formats/format_reader.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"

namespace driftscan {

namespace {

std::vector<SignalInfo> list_tiff_signals(const std::string& path) {
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

// Without listing first: the series' index is read once.
std::unique_ptr<FrameSource> open_tiff_named(const std::string& path, const std::string& signal,
                                             std::size_t cache_bytes) {
  if (!signal.empty() && signal != "image" && signal != "0")
    throw bad_input(path + ": no signal '" + signal + "' (the file holds 'image')");
  return TiffSeries::open(path, cache_bytes);
}

}  // namespace

FormatReader tiff_reader() {
  FormatReader r;
  r.name = "TIFF";
  r.reads = "TIFF";
  r.recognise = [](const FileProbe& p) {
    // Folders and globs are TIFF series (the TIFF reader names the problem).
    if (!p.regular_file()) return Recognition::signature_at_start;
    const bool tiff = p.has(0, {'I', 'I', 42, 0}) || p.has(0, {'M', 'M', 0, 42}) || p.has(0, {'I', 'I', 43, 0}) ||
                      p.has(0, {'M', 'M', 0, 43});  // TIFF, BigTIFF
    return tiff ? Recognition::signature_at_start : Recognition::no;
  };
  r.list_signals = list_tiff_signals;
  r.open_signal = [](const std::string& path, std::size_t index, std::size_t cache_bytes) {
    return open_tiff_named(path, std::to_string(index), cache_bytes);
  };
  r.open_named = open_tiff_named;
  return r;
}

}  // namespace driftscan
