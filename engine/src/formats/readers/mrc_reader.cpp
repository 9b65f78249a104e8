// MRC/MRCS (2014 standard) image stacks: modes 0 (int8), 1 (int16), 2 (float32),
// 6 (uint16) and 12 (float16, converted); complex modes are refused. Sections
// (z) are the frames; the extended header is skipped by its size (NSYMBT);
// the pixel size is the cell size over the grid size (Angstrom, given in nm).
// Rows are in file order (row 0 = first stored row), as mrcfile reads them.

#include "driftscan/core/error.hpp"
#include "driftscan/formats/binary_file.hpp"
#include "driftscan/formats/format_reader.hpp"
#include "driftscan/formats/raw_frame_series.hpp"

namespace driftscan {

namespace {

constexpr std::uint64_t kHeaderBytes = 1024;

struct MrcLayout {
  SignalInfo info;
  RawType type = RawType::float32;
  ByteOrder order = ByteOrder::little;
  std::uint64_t data_offset = 0;
};

MrcLayout parse(const BinaryFile& f) {
  if (f.size() < kHeaderBytes) f.fail("not an MRC file (shorter than its 1024-byte header)");
  // MACHST (byte 212): 0x44 little-endian, 0x11 big-endian; files from older
  // writers leave it zero, then the mode word decides.
  ByteOrder order = ByteOrder::little;
  const std::uint8_t machst = f.u8(212);
  if (machst == 0x11) order = ByteOrder::big;
  else if (machst != 0x44 && f.u32(12, ByteOrder::little) > 0xffff) order = ByteOrder::big;
  const std::int32_t nx = f.i32(0, order), ny = f.i32(4, order), nz = f.i32(8, order), mode = f.i32(12, order);
  const std::int32_t mx = f.i32(28, order), nsymbt = f.i32(92, order);
  if (nx <= 0 || ny <= 0 || nz <= 0)
    f.fail("MRC header gives no image (" + std::to_string(nx) + " x " + std::to_string(ny) + " x " +
           std::to_string(nz) + ")");
  MrcLayout m;
  m.order = order;
  switch (mode) {
    case 0: m.type = RawType::int8; break;  // signed in the 2014 standard
    case 1: m.type = RawType::int16; break;
    case 2: m.type = RawType::float32; break;
    case 6: m.type = RawType::uint16; break;
    case 12: m.type = RawType::float16; break;
    case 3:
    case 4: f.fail("MRC mode " + std::to_string(mode) + " is complex: not supported (registration needs real images)");
    default: f.fail("unsupported MRC mode " + std::to_string(mode) + " (supported: 0, 1, 2, 6, 12)");
  }
  if (nsymbt < 0) f.fail("MRC extended header size is negative (" + std::to_string(nsymbt) + ")");
  m.data_offset = kHeaderBytes + static_cast<std::uint64_t>(nsymbt);
  const std::uint64_t frame_bytes =
      static_cast<std::uint64_t>(nx) * static_cast<std::uint64_t>(ny) * raw_type_bytes(m.type);
  const std::uint64_t need = frame_bytes * static_cast<std::uint64_t>(nz);
  if (!f.contains(m.data_offset, need))
    f.fail("truncated: " + std::to_string(nz) + " sections of " + std::to_string(nx) + "x" + std::to_string(ny) +
           " need " + std::to_string(m.data_offset + need) + " bytes, the file has " + std::to_string(f.size()));
  m.info.format = "MRC";
  m.info.name = "image";
  m.info.frames = static_cast<std::size_t>(nz);
  m.info.width = nx;
  m.info.height = ny;
  m.info.pixel_type = to_string(m.type);
  const float cell_x = f.f32(40, order);
  if (mx > 0 && cell_x > 0 && cell_x < 1e30f) {
    m.info.pixel_size = static_cast<double>(cell_x) / mx;
    m.info.unit = "A";
    normalise_length_unit(m.info.pixel_size, m.info.unit);
  }
  return m;
}

std::vector<SignalInfo> list_mrc_signals(const std::string& path) {
  auto f = BinaryFile::open(path);
  return {parse(*f).info};
}

std::unique_ptr<FrameSource> open_mrc_signal(const std::string& path, std::size_t index, std::size_t cache_bytes) {
  auto f = BinaryFile::open(path);
  MrcLayout m = parse(*f);
  if (index != 0) f->fail("MRC files hold one signal (asked for signal " + std::to_string(index) + ")");
  return std::make_unique<RawFrameSeries>(f, m.info, RawFrameLayout::contiguous(m.type, m.order, m.data_offset, m.info),
                                          cache_bytes);
}

}  // namespace

FormatReader mrc_reader() {
  FormatReader r;
  r.name = "MRC";
  r.reads = "MRC";
  r.recognise = [](const FileProbe& p) {
    const bool map = p.has(208, {'M', 'A', 'P', ' '}) || p.has(208, {'M', 'A', 'P', 0});
    return map ? Recognition::signature_inside : Recognition::no;
  };
  r.list_signals = list_mrc_signals;
  r.open_signal = open_mrc_signal;
  return r;
}

}  // namespace driftscan
