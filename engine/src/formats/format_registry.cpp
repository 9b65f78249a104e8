#include <algorithm>
#include <filesystem>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/format_reader.hpp"

namespace driftscan {
namespace fs = std::filesystem;

namespace {
constexpr std::size_t kHeadBytes = 1024;
}  // namespace

FileProbe::FileProbe(const std::string& path) : path_(path) {
  std::error_code ec;
  regular_ = fs::is_regular_file(path, ec);
  if (!regular_) return;
  in_.open(path, std::ios::binary);
  head_.resize(kHeadBytes);
  in_.read(reinterpret_cast<char*>(head_.data()), static_cast<std::streamsize>(head_.size()));
  head_.resize(static_cast<std::size_t>(in_.gcount()));
}

bool FileProbe::has(std::uint64_t offset, std::initializer_list<unsigned char> magic) const {
  if (offset + magic.size() <= head_.size())
    return std::equal(magic.begin(), magic.end(), head_.begin() + static_cast<std::ptrdiff_t>(offset));
  if (!regular_ || head_.size() < kHeadBytes) return false;  // a short file was read whole
  std::vector<char> b(magic.size());
  in_.clear();
  in_.seekg(static_cast<std::streamoff>(offset));
  if (!in_.read(b.data(), static_cast<std::streamsize>(b.size()))) return false;
  return std::equal(magic.begin(), magic.end(), b.begin(),
                    [](unsigned char m, char c) { return m == static_cast<unsigned char>(c); });
}

const FormatReader& format_reader_for(const std::string& path) {
  const FileProbe probe(path);
  const FormatReader* best = nullptr;
  Recognition best_claim = Recognition::no;
  for (const auto& reader : format_readers()) {
    const Recognition claim = reader.recognise(probe);
    if (claim > best_claim) {
      best = &reader;
      best_claim = claim;
    }
  }
  if (best) return *best;
  std::string known;
  const auto& all = format_readers();
  for (std::size_t i = 0; i < all.size(); ++i)
    known += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + all[i].reads;
  throw bad_input(path + ": not a supported image file (" + known + ")");
}

const FormatReader* find_format_reader(const std::string& name) {
  for (const auto& reader : format_readers())
    if (reader.name == name) return &reader;
  return nullptr;
}

}  // namespace driftscan
