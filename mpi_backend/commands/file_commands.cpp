// `info FILE [--json]`: the signals a microscope file holds (name, frames,
// width x height, pixel type, pixel size and unit; a 1-D signal, a
// spectrum, as such).
// `convert FILE [--signal NAME] --out OUT.tif`: one signal of any supported
// input as an ImageJ-compatible float32 TIFF stack with its calibration,
// streamed frame by frame (written under a temporary name, then renamed); a
// 1-D signal is refused by open_series (bad input, exit 2).
// Both run on rank 0 only: they read one file and need no other rank.
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/series_opener.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/mpi/runtime/command.hpp"

namespace driftscan::mpi {
namespace {

struct InfoOptions {
  std::string path;
  bool json = false;
};

int run_info(const InfoOptions& o, RunContext& ctx) {
  if (ctx.rank != 0) return 0;
  const auto signals = list_signals(o.path);
  if (o.json) {
    nlohmann::json out = {{"file", o.path}, {"signals", nlohmann::json::array()}};
    for (const auto& s : signals) {
      nlohmann::json j = {{"name", s.name},
                          {"format", s.format},
                          {"frames", s.frames},
                          {"width", s.width},
                          {"height", s.height},
                          {"pixel_type", s.pixel_type},
                          {"pixel_size", s.pixel_size},
                          {"unit", s.unit},
                          {"dimensions", s.dimensions}};
      if (s.scan.known())
        j["scan"] = {{"dwell_s", s.scan.dwell},
                     {"line_flyback_s", s.scan.line_flyback},
                     {"frame_time_s", s.scan.frame_time},
                     {"source", s.scan.source}};
      out["signals"].push_back(j);
    }
    std::cout << out.dump(2) << std::endl;
    return 0;
  }
  std::cout << o.path << ": " << signals.size() << " signal" << (signals.size() == 1 ? "" : "s") << " ("
            << signals.front().format << ")\n";
  for (std::size_t i = 0; i < signals.size(); ++i) {
    const SignalInfo& s = signals[i];
    char line[512];
    if (!s.is_image()) {  // a spectrum: named as such, so that no one takes it for a 1-pixel-high image
      std::snprintf(line, sizeof line, "  %zu  %-24s ", i, s.name.c_str());
      std::cout << line << s.one_d_summary() << ", not an image series";
      if (s.pixel_size > 0) std::cout << "  " << message_number(s.pixel_size) << ' ' << s.unit << "/channel";
      std::cout << '\n';
      continue;
    }
    std::snprintf(line, sizeof line, "  %zu  %-24s %6zu frames  %5d x %-5d %-8s", i, s.name.c_str(), s.frames, s.width,
                  s.height, s.pixel_type.c_str());
    std::cout << line;
    if (s.pixel_size > 0) std::cout << "  " << message_number(s.pixel_size) << ' ' << s.unit << "/pixel";
    else std::cout << "  uncalibrated";
    if (s.scan.known()) {
      std::cout << "  scan: dwell " << message_number(s.scan.dwell * 1e6) << " us";
      if (s.scan.line_flyback > 0)
        std::cout << ", line fly-back " << message_number(s.scan.line_flyback * 1e6) << " us";
      if (s.scan.frame_time > 0) std::cout << ", frame time " << message_number(s.scan.frame_time) << " s";
    }
    std::cout << '\n';
  }
  std::cout << std::flush;
  return 0;
}

struct ConvertOptions {
  std::string path;
  std::string signal;
  std::string out;
  bool uint16 = false;
};

int run_convert(const ConvertOptions& o, RunContext& ctx) {
  if (ctx.rank != 0) return 0;
  auto frames = open_series(o.path, o.signal, std::size_t(64) << 20);
  TiffWriteOptions tw;
  tw.format = o.uint16 ? SampleFormat::uint16 : SampleFormat::float32;
  tw.pixel_size = frames->pixel_size();
  tw.unit = frames->pixel_unit();
  const std::size_t n = frames->frame_count();
  ctx.progress.phase("convert", n);
  TiffStackWriter writer(o.out, frames->width(), frames->height(), n, tw);
  for (std::size_t k = 0; k < n; ++k) {
    ctx.cancel.throw_if_cancelled();
    writer.append(frames->frame(k));
    ctx.progress.advance(k + 1);
  }
  writer.commit();
  ctx.progress.log(LogLevel::info, frames->describe() + " -> " + o.out);
  ctx.progress.result({{"converted", o.out}});
  return 0;
}

CommandRegistrar reg_info(
    {"info", "List the signals (detectors) of an image file and their calibration", [](CLI::App& app) -> Runner {
       auto o = std::make_shared<InfoOptions>();
       app.add_option("file", o->path, "TIFF, DM3/DM4, MRC, SER/EMI, Velox or Berkeley EMD")->required();
       app.add_flag("--json", o->json, "Print the signals as JSON");
       return [o](RunContext& ctx) { return run_info(*o, ctx); };
     }});

CommandRegistrar reg_convert({"convert", "Write one signal of any supported file as a calibrated TIFF stack",
                              [](CLI::App& app) -> Runner {
                                auto o = std::make_shared<ConvertOptions>();
                                app.add_option("file", o->path, "Input file (any supported format)")->required();
                                app.add_option("--signal", o->signal, "Signal name or index (default: the first)");
                                app.add_option("--output,--out,-o", o->out, "Output TIFF stack")->required();
                                app.add_flag("--uint16", o->uint16,
                                             "Write uint16 (rounded, clamped) instead of float32");
                                app.footer("Exit codes: 0 done, 2 bad input or usage, 3 failure during the run.");
                                return [o](RunContext& ctx) { return run_convert(*o, ctx); };
                              }});

}  // namespace
}  // namespace driftscan::mpi
