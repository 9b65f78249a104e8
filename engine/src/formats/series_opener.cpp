#include "driftscan/formats/series_opener.hpp"

#include "driftscan/core/error.hpp"
#include "driftscan/formats/format_reader.hpp"

namespace driftscan {

std::vector<SignalInfo> list_signals(const std::string& path) { return format_reader_for(path).list_signals(path); }

std::size_t find_signal(const std::string& path, const std::vector<SignalInfo>& signals, const std::string& signal) {
  if (signal.empty()) {
    for (std::size_t i = 0; i < signals.size(); ++i)
      if (signals[i].is_image()) return i;
    return 0;
  }
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

void require_image_series(const std::string& path, const SignalInfo& s) {
  if (s.is_image()) return;
  throw bad_input(path + ": signal '" + s.name + "' is a " + s.one_d_summary() + ", not an image series");
}

std::unique_ptr<FrameSource> open_series(const std::string& path, const std::string& signal, std::size_t cache_bytes) {
  const FormatReader& reader = format_reader_for(path);
  if (reader.open_named) return reader.open_named(path, signal, cache_bytes);
  const auto signals = reader.list_signals(path);
  const std::size_t index = find_signal(path, signals, signal);
  require_image_series(path, signals[index]);
  return reader.open_signal(path, index, cache_bytes);
}

}  // namespace driftscan
