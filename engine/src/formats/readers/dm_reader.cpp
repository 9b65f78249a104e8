// Gatan DigitalMicrograph DM3 and DM4: the tag tree parsed from the published
// format description (bounded: sizes checked against the file, nesting depth
// limited), every image of ImageList but the thumbnail listed as a signal.
// 2-D images are one frame, 3-D stacks one frame per plane; a spectrum (1-D,
// or one row high) is listed as a 1-D signal. Integer and float types of
// every width; RGB converted to luminance; complex refused.
// Pixel size and unit from the image's calibration of its first dimension.

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/binary_file.hpp"
#include "driftscan/formats/format_reader.hpp"
#include "driftscan/formats/raw_frame_series.hpp"

namespace driftscan {

namespace {

// Nesting deeper than this, or more tags than this, is a corrupt file: real
// DM files nest about 10 deep and hold a few thousand tags.
constexpr int kMaxDepth = 64;
constexpr std::size_t kMaxTags = 1000000;
constexpr std::size_t kMaxInfo = 4096;

struct DmTag {
  std::string name;
  bool group = false;
  std::vector<DmTag> children;
  std::vector<std::uint64_t> info;  // the type description of a data tag
  std::uint64_t offset = 0;         // of its value
  std::uint64_t size = 0;           // bytes of its value

  const DmTag* child(const std::string& n) const {
    for (const auto& c : children)
      if (c.name == n) return &c;
    return nullptr;
  }
  const DmTag* path(std::initializer_list<const char*> names) const {
    const DmTag* t = this;
    for (const char* n : names)
      if (!(t = t->child(n))) return nullptr;
    return t;
  }
};

std::uint64_t simple_size(std::uint64_t type) {
  switch (type) {
    case 2:
    case 4: return 2;  // int16, uint16
    case 3:
    case 5:
    case 6: return 4;  // int32, uint32, float32
    case 7:
    case 11:
    case 12: return 8;  // float64, int64, uint64
    case 8:
    case 9:
    case 10: return 1;  // bool, char, octet
    default: return 0;
  }
}

class DmParser {
 public:
  explicit DmParser(const BinaryFile& f) : f_(f) {}

  DmTag parse() {
    if (f_.size() < 16) f_.fail("not a DigitalMicrograph file (too short)");
    version_ = f_.u32(0, ByteOrder::big);
    if (version_ != 3 && version_ != 4)
      f_.fail("not a DigitalMicrograph file (version word " + std::to_string(version_) + ")");
    const std::uint64_t order_at = version_ == 3 ? 8 : 12;
    const std::uint32_t order = f_.u32(order_at, ByteOrder::big);
    if (order > 1) f_.fail("not a DigitalMicrograph file (byte-order word " + std::to_string(order) + ")");
    data_order_ = order == 1 ? ByteOrder::little : ByteOrder::big;
    pos_ = order_at + 4;
    DmTag root;
    root.group = true;
    parse_group(root, 0);
    return root;
  }
  int version() const { return static_cast<int>(version_); }
  ByteOrder data_order() const { return data_order_; }

 private:
  std::uint64_t count() {  // the header counts: 4 bytes in DM3, 8 in DM4, big-endian
    const std::uint64_t v = version_ == 3 ? f_.u32(pos_, ByteOrder::big) : f_.u64(pos_, ByteOrder::big);
    pos_ += version_ == 3 ? 4 : 8;
    return v;
  }

  void parse_group(DmTag& group, int depth) {
    if (depth > kMaxDepth) f_.fail("DM tag tree nested deeper than " + std::to_string(kMaxDepth) + " levels (corrupt)");
    pos_ += 2;  // sorted, open
    const std::uint64_t n = count();
    // Each tag takes at least 3 bytes: a count past what the file can hold is corrupt.
    if (n > (f_.size() - std::min(f_.size(), pos_)) / 3)
      f_.fail("DM tag group at byte " + std::to_string(pos_) + " claims " + std::to_string(n) +
              " tags, past the end of the file");
    for (std::uint64_t i = 0; i < n; ++i) {
      if (++tags_ > kMaxTags) f_.fail("DM tag tree has more than " + std::to_string(kMaxTags) + " tags (corrupt)");
      const std::uint8_t kind = f_.u8(pos_);
      if (kind == 0) break;  // end marker some writers leave
      const std::uint16_t name_len = f_.u16(pos_ + 1, ByteOrder::big);
      pos_ += 3;
      DmTag tag;
      if (name_len) {
        auto b = f_.bytes(pos_, name_len, "tag name");
        tag.name.assign(b.begin(), b.end());
      }
      pos_ += name_len;
      if (version_ == 4) pos_ += 8;  // the tag's total size (recomputed, not trusted)
      if (kind == 20) {
        tag.group = true;
        parse_group(tag, depth + 1);
      } else if (kind == 21) {
        parse_data(tag);
      } else {
        f_.fail("DM tag at byte " + std::to_string(pos_) + " has unknown kind " + std::to_string(kind) + " (corrupt)");
      }
      group.children.push_back(std::move(tag));
    }
  }

  void parse_data(DmTag& tag) {
    auto magic = f_.bytes(pos_, 4, "tag");
    if (std::string(magic.begin(), magic.end()) != "%%%%")
      f_.fail("DM data tag '" + tag.name + "' at byte " + std::to_string(pos_) + " lacks its %%%% marker (corrupt)");
    pos_ += 4;
    const std::uint64_t n = count();
    if (n == 0 || n > kMaxInfo)
      f_.fail("DM data tag '" + tag.name + "' has " + std::to_string(n) + " type entries (corrupt)");
    for (std::uint64_t i = 0; i < n; ++i) tag.info.push_back(count());
    std::size_t at = 0;
    tag.size = value_size(tag, at);
    tag.offset = pos_;
    if (!f_.contains(pos_, tag.size))
      f_.fail("DM data tag '" + tag.name + "' claims " + std::to_string(tag.size) + " bytes at byte " +
              std::to_string(pos_) + ", past the end of the file (" + std::to_string(f_.size()) + " bytes)");
    pos_ += tag.size;
  }

  std::uint64_t next(const DmTag& tag, std::size_t& at) const {
    if (at >= tag.info.size()) f_.fail("DM data tag '" + tag.name + "' has a truncated type description (corrupt)");
    return tag.info[at++];
  }

  std::uint64_t struct_size(const DmTag& tag, std::size_t& at) const {
    next(tag, at);  // struct name length
    const std::uint64_t fields = next(tag, at);
    std::uint64_t total = 0;
    for (std::uint64_t i = 0; i < fields; ++i) {
      next(tag, at);  // field name length
      const std::uint64_t s = simple_size(next(tag, at));
      if (s == 0) f_.fail("DM data tag '" + tag.name + "' has a struct field of unknown type (corrupt)");
      total += s;
    }
    return total;
  }

  std::uint64_t value_size(const DmTag& tag, std::size_t& at) const {
    const std::uint64_t type = next(tag, at);
    if (const std::uint64_t s = simple_size(type)) return s;
    if (type == 15) return struct_size(tag, at);
    if (type == 18) return next(tag, at);  // string: its length in bytes
    if (type == 20) {
      const std::uint64_t elem = next(tag, at);
      std::uint64_t elem_size = simple_size(elem);
      if (elem == 15) elem_size = struct_size(tag, at);
      if (elem_size == 0)
        f_.fail("DM array tag '" + tag.name + "' has elements of unsupported type " + std::to_string(elem));
      const std::uint64_t n = next(tag, at);
      if (n > f_.size() / elem_size)
        f_.fail("DM array tag '" + tag.name + "' claims " + std::to_string(n) + " elements, past the end of the file");
      return n * elem_size;
    }
    f_.fail("DM data tag '" + tag.name + "' has unknown type " + std::to_string(type) + " (corrupt)");
  }

  const BinaryFile& f_;
  std::uint32_t version_ = 3;
  ByteOrder data_order_ = ByteOrder::little;
  std::uint64_t pos_ = 0;
  std::size_t tags_ = 0;
};

struct DmImage {
  SignalInfo info;
  RawType type = RawType::uint16;
  std::uint64_t data_offset = 0;
};

struct DmContents {
  ByteOrder order = ByteOrder::little;
  std::vector<DmImage> images;
};

double number(const BinaryFile& f, const DmTag* t, ByteOrder order, double fallback) {
  if (!t || t->group || t->info.size() != 1) return fallback;
  switch (t->info[0]) {
    case 2: return f.i16(t->offset, order);
    case 3: return f.i32(t->offset, order);
    case 4: return f.u16(t->offset, order);
    case 5: return f.u32(t->offset, order);
    case 6: return f.f32(t->offset, order);
    case 7: return f.f64(t->offset, order);
    case 8:
    case 9:
    case 10: return f.u8(t->offset);
    case 11: return static_cast<double>(f.i64(t->offset, order));
    case 12: return static_cast<double>(f.u64(t->offset, order));
    default: return fallback;
  }
}

// DM stores text as arrays of UTF-16 code units (or of bytes): to UTF-8.
std::string text(const BinaryFile& f, const DmTag* t, ByteOrder order) {
  if (!t || t->group || t->info.size() != 3 || t->info[0] != 20 || t->size > 4096) return "";
  std::string s;
  if (t->info[1] == 4) {
    for (std::uint64_t i = 0; i < t->info[2]; ++i) {
      const unsigned c = f.u16(t->offset + 2 * i, order);
      if (c < 0x80) {
        s += static_cast<char>(c);
      } else if (c < 0x800) {
        s += static_cast<char>(0xc0 | (c >> 6));
        s += static_cast<char>(0x80 | (c & 0x3f));
      } else {
        s += static_cast<char>(0xe0 | (c >> 12));
        s += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
        s += static_cast<char>(0x80 | (c & 0x3f));
      }
    }
  } else if (simple_size(t->info[1]) == 1) {
    auto b = f.bytes(t->offset, t->size, "text");
    s.assign(b.begin(), b.end());
  }
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

DmContents read_contents(const BinaryFile& f) {
  DmParser parser(f);
  const DmTag root = parser.parse();
  DmContents c;
  c.order = parser.data_order();
  const DmTag* list = root.child("ImageList");
  if (!list || !list->group) f.fail("DM file has no ImageList (no images)");
  std::set<std::size_t> thumbnails;
  if (const DmTag* th = root.child("Thumbnails"))
    for (const auto& t : th->children)
      if (const double v = number(f, t.child("ImageIndex"), c.order, -1); v >= 0 && v < 1e6)
        thumbnails.insert(static_cast<std::size_t>(v));  // a corrupt index (negative, NaN, huge) skips nothing
  std::set<std::string> names;
  std::string refused;
  for (std::size_t i = 0; i < list->children.size(); ++i) {
    if (thumbnails.count(i)) continue;
    const DmTag& img = list->children[i];
    const DmTag* data = img.path({"ImageData", "Data"});
    const DmTag* dims = img.path({"ImageData", "Dimensions"});
    if (!data || data->group || !dims || !dims->group || data->info.empty() || data->info[0] != 20) continue;
    std::vector<double> d;
    for (const auto& t : dims->children) d.push_back(number(f, &t, c.order, -1));
    while (d.size() > 3 && d.back() == 1) d.pop_back();
    if (d.size() == 1) d.push_back(1);  // a 1-D signal (a spectrum): one row of channels
    if (d.size() < 2 || d.size() > 3) {
      refused = "image " + std::to_string(i) + " has " + std::to_string(d.size()) + " dimensions (supported: 2 or 3)";
      continue;
    }
    const double frames = d.size() == 3 ? d[2] : 1;
    // Written so that NaN fails too (a float tag can hold anything).
    if (!(d[0] >= 1 && d[1] >= 1 && frames >= 1 && d[0] <= 1e6 && d[1] <= 1e6 && frames <= 1e9)) {
      refused = "image " + std::to_string(i) + " has impossible dimensions";
      continue;
    }
    const double dtype_value = number(f, img.path({"ImageData", "DataType"}), c.order, -1);
    const int dtype = dtype_value >= 0 && dtype_value < 1000 ? static_cast<int>(dtype_value) : -1;
    DmImage im;
    switch (dtype) {
      case 1: im.type = RawType::int16; break;
      case 2: im.type = RawType::float32; break;
      case 6:
      case 14: im.type = RawType::uint8; break;
      case 7: im.type = RawType::int32; break;
      case 9: im.type = RawType::int8; break;
      case 10: im.type = RawType::uint16; break;
      case 11: im.type = RawType::uint32; break;
      case 12: im.type = RawType::float64; break;
      case 39: im.type = RawType::int64; break;
      case 40: im.type = RawType::uint64; break;
      case 8:
      case 23: im.type = RawType::bgra8; break;
      case 3:
      case 5:
      case 13:
      case 27:
      case 28:
        refused = "image " + std::to_string(i) + " is complex (DM data type " + std::to_string(dtype) +
                  "): not supported (registration needs real images)";
        continue;
      default:
        refused = "image " + std::to_string(i) + " has unsupported DM data type " + std::to_string(dtype);
        continue;
    }
    const auto w = static_cast<std::uint64_t>(d[0]), h = static_cast<std::uint64_t>(d[1]);
    const auto n = static_cast<std::uint64_t>(frames);
    if (w * h * n * raw_type_bytes(im.type) != data->size)
      f.fail("DM image " + std::to_string(i) + ": its data holds " + std::to_string(data->size) + " bytes, but " +
             std::to_string(n) + " x " + std::to_string(w) + "x" + std::to_string(h) + " " + to_string(im.type) +
             " needs " + std::to_string(w * h * n * raw_type_bytes(im.type)));
    im.data_offset = data->offset;
    im.info.format = parser.version() == 3 ? "DM3" : "DM4";
    im.info.width = static_cast<int>(w);
    im.info.height = static_cast<int>(h);
    im.info.frames = static_cast<std::size_t>(n);
    // DM keeps a spectrum (EELS, EDX) as an image one row high: a 1-D signal, no image series.
    if (h == 1) im.info.dimensions = 1;
    im.info.pixel_type = to_string(im.type);
    std::string name = text(f, img.child("Name"), c.order);
    if (name.empty()) name = "image " + std::to_string(i);
    for (int k = 2; names.count(name); ++k) name += " (" + std::to_string(k) + ")";
    names.insert(name);
    im.info.name = name;
    if (const DmTag* cal = img.path({"ImageData", "Calibrations", "Dimension"}); cal && !cal->children.empty()) {
      const DmTag& x = cal->children.front();
      const double scale = number(f, x.child("Scale"), c.order, 0);
      std::string unit = text(f, x.child("Units"), c.order);
      if (scale > 0 && !unit.empty()) {
        im.info.pixel_size = scale;
        normalise_length_unit(im.info.pixel_size, unit);
        im.info.unit = unit;
      }
    }
    // DigiScan's clock of a STEM image: "Sample Time" (the dwell) and
    // "Flyback" (the line fly-back), both in microseconds.
    if (const DmTag* scan = img.path({"ImageTags", "DigiScan"}); scan && scan->group) {
      const double dwell_us = number(f, scan->child("Sample Time"), c.order, 0);
      const double flyback_us = number(f, scan->child("Flyback"), c.order, 0);
      if (dwell_us > 0 && dwell_us < 1e7) {  // written so that NaN fails too
        im.info.scan.dwell = dwell_us * 1e-6;
        if (flyback_us > 0 && flyback_us < 1e9) im.info.scan.line_flyback = flyback_us * 1e-6;
        im.info.scan.source = "DigiScan tags";
      }
      // DigiScan's scan rotation (degrees), one for the image's every frame.
      if (const DmTag* rot = scan->child("Rotation")) {
        const double deg = number(f, rot, c.order, std::numeric_limits<double>::quiet_NaN());
        if (std::isfinite(deg) && std::fabs(deg) <= 1e6) im.info.rotations = {{deg}, "DigiScan tags"};
      }
    }
    c.images.push_back(std::move(im));
  }
  if (c.images.empty()) f.fail(refused.empty() ? "DM file holds no image" : refused);
  return c;
}

std::vector<SignalInfo> list_dm_signals(const std::string& path) {
  auto f = BinaryFile::open(path);
  std::vector<SignalInfo> out;
  for (const auto& im : read_contents(*f).images) out.push_back(im.info);
  return out;
}

std::unique_ptr<FrameSource> open_dm_signal(const std::string& path, std::size_t index, std::size_t cache_bytes) {
  auto f = BinaryFile::open(path);
  DmContents c = read_contents(*f);
  if (index >= c.images.size())
    f->fail("no signal " + std::to_string(index) + " (the file holds " + std::to_string(c.images.size()) + ")");
  const DmImage& im = c.images[index];
  return std::make_unique<RawFrameSeries>(
      f, im.info, RawFrameLayout::contiguous(im.type, c.order, im.data_offset, im.info), cache_bytes);
}

}  // namespace

FormatReader dm_reader() {
  FormatReader r;
  r.name = "DigitalMicrograph";
  r.reads = "DM3/DM4";
  r.recognise = [](const FileProbe& p) {
    // The version word (3 or 4, big-endian), then the byte-order word (0 or 1).
    const auto& b = p.head();
    if (b.size() < 16 || b[0] != 0 || b[1] != 0 || b[2] != 0 || (b[3] != 3 && b[3] != 4)) return Recognition::no;
    const std::size_t order_at = b[3] == 3 ? 8 : 12;
    const bool order = b[order_at] == 0 && b[order_at + 1] == 0 && b[order_at + 2] == 0 && b[order_at + 3] <= 1;
    return order ? Recognition::signature_at_start : Recognition::no;
  };
  r.list_signals = list_dm_signals;
  r.open_signal = open_dm_signal;
  r.scan_clock_in_index = true;  // DigiScan tags, in the tag tree read on opening
  return r;
}

}  // namespace driftscan
