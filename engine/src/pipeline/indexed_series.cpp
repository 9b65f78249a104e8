#include "driftscan/pipeline/indexed_series.hpp"

#include <cstddef>
#include <exception>

#include "driftscan/formats/format_reader.hpp"
#include "driftscan/formats/series_opener.hpp"

namespace driftscan {

std::unique_ptr<FrameSource> open_indexed_series(const Job& job) {
  try {
    if (!format_reader_for(job.input).scan_clock_in_index) return nullptr;
    return open_series(job.input, job.signal, static_cast<std::size_t>(job.execution.frame_cache_mb * 1024.0 * 1024.0));
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace driftscan
