// FEI/Thermo TIA series: SER files (header versions 0x210 with 32-bit and
// 0x220 with 64-bit offsets) of 2-D elements (images): each element is a
// frame, reached through the SER's offset table. An EMI file opens the SER
// files that belong to it (NAME_1.ser, NAME_2.ser, ...), one signal each.
// Calibration from the element (CalibrationDeltaX, metres, given in nm).
// Row orientation: rows are taken in file order (row 0 = first stored row),
// as openNCEM's and RosettaSciIO's readers return them.

#include <filesystem>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/binary_file.hpp"
#include "driftscan/formats/format_reader.hpp"
#include "driftscan/formats/raw_frame_series.hpp"

namespace driftscan {

namespace {
namespace fs = std::filesystem;

constexpr std::uint64_t kElementHeader = 50;  // calibrations X and Y, data type, array sizes
constexpr std::size_t kMaxSerFiles = 1000;

struct SerLayout {
  SignalInfo info;
  RawType type = RawType::uint16;
  bool wide_offsets = false;       // version 0x220: 64-bit offsets
  std::uint64_t offset_table = 0;  // the data offset array
};

bool is_emi(const BinaryFile& f) {
  return f.size() >= 4 && f.u8(0) == 'J' && f.u8(1) == 'K' && f.u16(2, ByteOrder::big) == 2;
}

RawType ser_type(const BinaryFile& f, int code) {
  switch (code) {
    case 1: return RawType::uint8;
    case 2: return RawType::uint16;
    case 3: return RawType::uint32;
    case 4: return RawType::int8;
    case 5: return RawType::int16;
    case 6: return RawType::int32;
    case 7: return RawType::float32;
    case 8: return RawType::float64;
    case 9:
    case 10:
      f.fail("SER data type " + std::to_string(code) + " is complex: not supported (registration needs real images)");
    default: f.fail("unsupported SER data type " + std::to_string(code));
  }
}

std::uint64_t element_offset(const BinaryFile& f, const SerLayout& s, std::size_t k) {
  const std::uint64_t at = s.offset_table + k * (s.wide_offsets ? 8 : 4);
  const std::uint64_t off = s.wide_offsets ? f.u64(at, ByteOrder::little) : f.u32(at, ByteOrder::little);
  if (!f.contains(off, kElementHeader))
    f.fail("SER element " + std::to_string(k) + " starts at byte " + std::to_string(off) +
           ", past the end of the file");
  return off;
}

// The space the EMI describes: TIA calibrates diffraction in 1/m.
bool emi_says_reciprocal(const std::string& ser_path) {
  const std::string stem = fs::path(ser_path).stem().string();
  const auto us = stem.rfind('_');
  if (us == std::string::npos) return false;
  const fs::path emi = fs::path(ser_path).parent_path() / (stem.substr(0, us) + ".emi");
  std::error_code ec;
  if (!fs::is_regular_file(emi, ec)) return false;
  auto f = BinaryFile::open(emi.string());
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(f->size(), 1 << 20));
  auto b = f->bytes(0, n, "EMI");
  return std::string(b.begin(), b.end()).find("Reciprocal Space") != std::string::npos;
}

SerLayout parse(const BinaryFile& f) {
  if (f.size() < 30 || f.u16(0, ByteOrder::little) != 0x4949 || f.u16(2, ByteOrder::little) != 0x0197)
    f.fail("not a TIA SER file (no SER signature)");
  SerLayout s;
  const std::uint16_t version = f.u16(4, ByteOrder::little);
  if (version != 0x210 && version != 0x220)
    f.fail("unsupported SER version 0x" + std::to_string(version / 256) + "?? (supported: 0x210, 0x220)");
  s.wide_offsets = version == 0x220;
  const std::uint32_t data_type = f.u32(6, ByteOrder::little);
  if (data_type == 0x4120) f.fail("SER file holds 1-D spectra, not images");
  if (data_type != 0x4122) f.fail("unknown SER data type id " + std::to_string(data_type));
  const std::int32_t total = f.i32(14, ByteOrder::little), valid = f.i32(18, ByteOrder::little);
  s.offset_table = s.wide_offsets ? f.u64(22, ByteOrder::little) : f.u32(22, ByteOrder::little);
  if (valid <= 0 || total < valid) f.fail("SER file holds no images (" + std::to_string(valid) + " valid elements)");
  if (!f.contains(s.offset_table, static_cast<std::uint64_t>(total) * (s.wide_offsets ? 8 : 4)))
    f.fail("SER offset table (" + std::to_string(total) + " elements at byte " + std::to_string(s.offset_table) +
           ") runs past the end of the file");
  const std::uint64_t e = element_offset(f, s, 0);
  s.type = ser_type(f, f.i16(e + 40, ByteOrder::little));
  const std::int32_t w = f.i32(e + 42, ByteOrder::little), h = f.i32(e + 46, ByteOrder::little);
  if (w <= 0 || h <= 0) f.fail("SER element 0 has no pixels (" + std::to_string(w) + "x" + std::to_string(h) + ")");
  s.info.format = "SER";
  s.info.name = fs::path(f.path()).stem().string();
  s.info.frames = static_cast<std::size_t>(valid);
  s.info.width = w;
  s.info.height = h;
  s.info.pixel_type = to_string(s.type);
  const double delta = f.f64(e + 8, ByteOrder::little);
  if (delta > 0 && delta < 1e30) {
    s.info.pixel_size = delta;
    s.info.unit = emi_says_reciprocal(f.path()) ? "1/m" : "m";
    normalise_length_unit(s.info.pixel_size, s.info.unit);
  }
  return s;
}

// The SER files of an EMI: NAME_1.ser, NAME_2.ser, ... beside it.
std::vector<std::string> ser_files_of(const BinaryFile& emi) {
  const fs::path p(emi.path());
  std::vector<std::string> out;
  for (std::size_t i = 1; i <= kMaxSerFiles; ++i) {
    const fs::path ser = p.parent_path() / (p.stem().string() + "_" + std::to_string(i) + ".ser");
    std::error_code ec;
    if (!fs::is_regular_file(ser, ec)) break;
    out.push_back(ser.string());
  }
  if (out.empty()) emi.fail("EMI file without its SER data (no " + (p.stem().string() + "_1.ser") + " beside it)");
  return out;
}

std::vector<std::string> ser_files(const std::string& path) {
  auto f = BinaryFile::open(path);
  if (is_emi(*f)) return ser_files_of(*f);
  return {path};
}

std::vector<SignalInfo> list_ser_signals(const std::string& path) {
  std::vector<SignalInfo> out;
  for (const auto& ser : ser_files(path)) out.push_back(parse(*BinaryFile::open(ser)).info);
  return out;
}

std::unique_ptr<FrameSource> open_ser_signal(const std::string& path, std::size_t index, std::size_t cache_bytes) {
  const auto files = ser_files(path);
  if (index >= files.size())
    throw bad_input(path + ": no signal " + std::to_string(index) + " (the file holds " + std::to_string(files.size()) +
                    ")");
  auto f = BinaryFile::open(files[index]);
  const SerLayout s = parse(*f);
  RawFrameLayout layout;
  layout.type = s.type;
  layout.order = ByteOrder::little;
  // Every element carries its own size and type: a frame that differs from
  // element 0 is refused, never read with the wrong geometry.
  layout.offset = [file = f.get(), s](std::size_t k) {
    const std::uint64_t e = element_offset(*file, s, k);
    const std::int32_t w = file->i32(e + 42, ByteOrder::little), h = file->i32(e + 46, ByteOrder::little);
    if (w != s.info.width || h != s.info.height || ser_type(*file, file->i16(e + 40, ByteOrder::little)) != s.type)
      file->fail("SER element " + std::to_string(k) + " is " + std::to_string(w) + "x" + std::to_string(h) +
                 ", element 0 is " + std::to_string(s.info.width) + "x" + std::to_string(s.info.height));
    return e + kElementHeader;
  };
  return std::make_unique<RawFrameSeries>(f, s.info, std::move(layout), cache_bytes);
}

}  // namespace

FormatReader ser_reader() {
  FormatReader r;
  r.name = "TIA SER/EMI";
  r.reads = "TIA SER/EMI";
  r.recognise = [](const FileProbe& p) {
    const bool ser = p.has(0, {'I', 'I', 0x97, 0x01}) || p.has(0, {'J', 'K', 0, 2});  // SER, EMI
    return ser ? Recognition::signature_at_start : Recognition::no;
  };
  r.list_signals = list_ser_signals;
  r.open_signal = open_ser_signal;
  return r;
}

}  // namespace driftscan
