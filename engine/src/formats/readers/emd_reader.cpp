// Velox EMD (Thermo Fisher) and Berkeley EMD (NCEM) through libhdf5.
// Velox: every /Data/Image/<id>/Data dataset (height x width x frames:
// frames along the last axis) is a signal named by its detector, pixel size
// from its per-frame JSON metadata. Berkeley: every dataset "data" of a
// group with emd_group_type = 1, 2-D (one frame) or 3-D (frames along the
// first axis), pixel size from the spacing of its dim vectors. Frames are
// read one at a time as hyperslabs converted to float by HDF5, with HDF5's
// chunk cache bounded; HDF5 calls are serialised (the library is not
// thread-safe in Debian's serial build).

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "driftscan/core/error.hpp"
#include "driftscan/core/frame_cache.hpp"
#include "driftscan/formats/format_reader.hpp"
#include "driftscan/formats/raw_frame_series.hpp"

namespace driftscan {

namespace {

// Debian's serial libhdf5 is built without thread safety: every HDF5 call
// of the process goes through this one lock.
std::recursive_mutex& hdf5_lock() {
  static std::recursive_mutex m;
  return m;
}

// HDF5's chunk cache per open dataset: enough for a few chunks of a frame,
// bounded whatever the file's chunking (HDF5's default is 1 MB; Velox chunks
// are one frame, so a frame of 4096^2 int16 fits in 32 MB).
constexpr std::size_t kChunkCacheBytes = std::size_t(32) << 20;
constexpr std::size_t kChunkCacheSlots = 521;
constexpr std::size_t kMaxMetadataBytes = std::size_t(16) << 20;

class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    std::swap(id_, o.id_);
    std::swap(close_, o.close_);
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (id_ >= 0 && close_) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

void quiet_hdf5() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

struct EmdSignal {
  SignalInfo info;
  std::string dataset;  // path of the dataset in the file
  int frame_axis = 0;   // 0 (Berkeley stacks) or 2 (Velox)
  int rank = 2;
};

std::string type_name(hid_t type) {
  const H5T_class_t c = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (c == H5T_FLOAT) return size == 2 ? "float16" : size == 4 ? "float32" : "float64";
  if (c == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    return std::string(is_signed ? "int" : "uint") + std::to_string(size * 8);
  }
  return "";
}

bool link_exists(hid_t loc, const std::string& path) {
  // H5Lexists fails on a path whose intermediate link is missing: check each step.
  std::string sofar;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!part.empty()) {
      sofar += "/" + part;
      if (H5Lexists(loc, sofar.c_str(), H5P_DEFAULT) <= 0) return false;
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return true;
}

std::vector<std::string> member_names(hid_t group) {
  std::vector<std::string> out;
  H5G_info_t gi{};
  if (H5Gget_info(group, &gi) < 0) return out;
  for (hsize_t i = 0; i < gi.nlinks && i < 100000; ++i) {
    const ssize_t n = H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (n <= 0) continue;
    std::string name(static_cast<std::size_t>(n) + 1, '\0');
    H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(n));
    out.push_back(name);
  }
  return out;
}

std::string string_attribute(hid_t obj, const char* name) {
  if (H5Aexists(obj, name) <= 0) return "";
  Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  Handle t(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(t.get()) != H5T_STRING) return "";
  Handle space(H5Aget_space(a.get()), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) return "";
  if (H5Tis_variable_str(t.get()) > 0) {
    char* s = nullptr;
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    if (H5Aread(a.get(), mem.get(), &s) < 0 || !s) return "";
    std::string out(s);
    H5free_memory(s);
    return out;
  }
  const std::size_t size = H5Tget_size(t.get());
  if (size == 0 || size > 4096) return "";
  std::string out(size, '\0');
  if (H5Aread(a.get(), t.get(), out.data()) < 0) return "";
  out.resize(std::strlen(out.c_str()));
  return out;
}

long long int_attribute(hid_t obj, const char* name, long long fallback) {
  if (H5Aexists(obj, name) <= 0) return fallback;
  Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  Handle space(H5Aget_space(a.get()), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) return fallback;
  long long v = fallback;
  if (H5Aread(a.get(), H5T_NATIVE_LLONG, &v) < 0) return fallback;
  return v;
}

std::vector<hsize_t> dims_of(hid_t dataset) {
  Handle space(H5Dget_space(dataset), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank <= 0 || rank > 8) return {};
  std::vector<hsize_t> d(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), d.data(), nullptr);
  return d;
}

// A Velox image's first-frame JSON metadata (column 0 of "Metadata").
nlohmann::json velox_metadata(hid_t group) {
  if (H5Lexists(group, "Metadata", H5P_DEFAULT) <= 0) return {};
  Handle ds(H5Dopen2(group, "Metadata", H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) return {};
  const auto d = dims_of(ds.get());
  if (d.size() != 2 || d[0] == 0 || d[1] == 0 || d[0] > kMaxMetadataBytes) return {};
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const hsize_t start[2] = {0, 0}, count[2] = {d[0], 1};
  H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
  Handle mem(H5Screate_simple(1, &d[0], nullptr), H5Sclose);
  std::string text(d[0], '\0');
  if (H5Dread(ds.get(), H5T_NATIVE_UCHAR, mem.get(), space.get(), H5P_DEFAULT, text.data()) < 0) return {};
  text.resize(std::strlen(text.c_str()));
  return nlohmann::json::parse(text, nullptr, false);
}

std::string json_string(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return "";
    p = &(*p)[k];
  }
  return p->is_string() ? p->get<std::string>() : "";
}

// A positive finite number written as text (Velox writes numbers as strings); 0 otherwise.
double json_seconds(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const std::string text = json_string(j, path);
  char* end = nullptr;
  const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  return end && end != text.c_str() && v > 0 && v < 1e6 ? v : 0.0;  // written so that NaN gives 0
}

// Velox's clock of a STEM scan (seconds): Scan.DwellTime, LineTime, FrameTime.
RecordedScan velox_scan(const nlohmann::json& meta, int samples_per_line) {
  RecordedScan r;
  r.dwell = json_seconds(meta, {"Scan", "DwellTime"});
  if (r.dwell <= 0) return {};
  const double line = json_seconds(meta, {"Scan", "LineTime"});
  if (line > samples_per_line * r.dwell) r.line_flyback = line - samples_per_line * r.dwell;
  r.frame_time = json_seconds(meta, {"Scan", "FrameTime"});
  r.source = "Velox Scan metadata";
  return r;
}

// The number after "ScanRotation" in a Velox metadata text's "Scan" block
// (radians, written as a string or a number); NaN when it is not there.
double velox_scan_rotation(const std::string& text) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::size_t at = 0;
  for (; (at = text.find("\"Scan\"", at)) != std::string::npos; at += 6) {  // the key, not a value "Scan"
    const std::size_t colon = text.find_first_not_of(" \t\r\n", at + 6);
    if (colon != std::string::npos && text[colon] == ':') break;
  }
  if (at == std::string::npos) return kNaN;
  const std::size_t key = text.find("\"ScanRotation\"", at);
  if (key == std::string::npos) return kNaN;
  std::size_t v = text.find_first_not_of(" \t\r\n:\"", key + 14);
  if (v == std::string::npos || text.find(':', key + 14) > v) return kNaN;
  char* end = nullptr;
  const double rad = std::strtod(text.c_str() + v, &end);
  return end != text.c_str() + v && std::isfinite(rad) && std::fabs(rad) < 1e4 ? rad * (180.0 / 3.14159265358979323846)
                                                                               : kNaN;
}

// Every frame's Scan.ScanRotation of a Velox image group, in degrees: its
// Metadata holds one JSON text per frame (a column each), read a block of
// columns at a time so that a long series' metadata is never held whole.
RecordedRotations velox_rotations(hid_t group, std::size_t frames) {
  if (H5Lexists(group, "Metadata", H5P_DEFAULT) <= 0) return {};
  Handle ds(H5Dopen2(group, "Metadata", H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) return {};
  const auto d = dims_of(ds.get());
  if (d.size() != 2 || d[0] == 0 || d[1] == 0 || d[0] > kMaxMetadataBytes) return {};
  const hsize_t columns = std::min<hsize_t>(d[1], frames);
  const hsize_t block = std::max<hsize_t>(1, std::min<hsize_t>(columns, kMaxMetadataBytes / d[0]));
  RecordedRotations r;
  r.source = "Velox Scan metadata";
  std::vector<unsigned char> bytes;
  std::string text;
  bool any = false;
  for (hsize_t k0 = 0; k0 < columns; k0 += block) {
    const hsize_t b = std::min(block, columns - k0);
    Handle space(H5Dget_space(ds.get()), H5Sclose);
    const hsize_t start[2] = {0, k0}, count[2] = {d[0], b};
    H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
    Handle mem(H5Screate_simple(2, count, nullptr), H5Sclose);
    bytes.assign(static_cast<std::size_t>(d[0] * b), 0);
    if (H5Dread(ds.get(), H5T_NATIVE_UCHAR, mem.get(), space.get(), H5P_DEFAULT, bytes.data()) < 0) return {};
    for (hsize_t j = 0; j < b; ++j) {
      text.clear();
      for (hsize_t i = 0; i < d[0]; ++i) {
        const unsigned char c = bytes[static_cast<std::size_t>(i * b + j)];
        if (c == 0) break;
        text.push_back(static_cast<char>(c));
      }
      r.deg.push_back(velox_scan_rotation(text));
      any = any || std::isfinite(r.deg.back());
    }
  }
  if (!any) return {};
  if (d[1] == 1) r.deg.resize(1);  // one text for every frame
  return r;
}

void add_unique(std::vector<EmdSignal>& out, EmdSignal s) {
  std::set<std::string> names;
  for (const auto& o : out) names.insert(o.info.name);
  std::string base = s.info.name;
  for (int k = 2; names.count(s.info.name); ++k) s.info.name = base + " (" + std::to_string(k) + ")";
  out.push_back(std::move(s));
}

bool image_dims(const std::vector<hsize_t>& d, int frame_axis, EmdSignal& s) {
  if (d.size() == 2) {
    s.info.height = static_cast<int>(d[0]);
    s.info.width = static_cast<int>(d[1]);
    s.info.frames = 1;
  } else if (d.size() == 3) {
    s.info.frames = static_cast<std::size_t>(d[static_cast<std::size_t>(frame_axis)]);
    const std::size_t y = frame_axis == 0 ? 1 : 0;
    s.info.height = static_cast<int>(d[y]);
    s.info.width = static_cast<int>(d[y + 1]);
  } else {
    return false;
  }
  s.rank = static_cast<int>(d.size());
  s.frame_axis = d.size() == 3 ? frame_axis : 0;
  for (hsize_t v : d)
    if (v == 0 || v > (hsize_t(1) << 30)) return false;
  return true;
}

void list_velox(hid_t file, std::vector<EmdSignal>& out) {
  Handle images(H5Gopen2(file, "/Data/Image", H5P_DEFAULT), H5Gclose);
  if (!images.ok()) return;
  for (const auto& id : member_names(images.get())) {
    Handle g(H5Gopen2(images.get(), id.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g.ok() || H5Lexists(g.get(), "Data", H5P_DEFAULT) <= 0) continue;
    Handle ds(H5Dopen2(g.get(), "Data", H5P_DEFAULT), H5Dclose);
    if (!ds.ok()) continue;
    Handle type(H5Dget_type(ds.get()), H5Tclose);
    EmdSignal s;
    s.info.format = "Velox EMD";
    s.dataset = "/Data/Image/" + id + "/Data";
    s.info.pixel_type = type_name(type.get());
    if (s.info.pixel_type.empty() || !image_dims(dims_of(ds.get()), 2, s)) continue;
    const nlohmann::json meta = velox_metadata(g.get());
    std::string name = json_string(meta, {"BinaryResult", "Detector"});
    const std::string index = json_string(meta, {"BinaryResult", "DetectorIndex"});
    if (!index.empty()) {
      const std::string n = json_string(meta, {"Detectors", ("Detector-" + index).c_str(), "DetectorName"});
      if (!n.empty()) name = n;
    }
    s.info.name = name.empty() ? id : name;
    try {
      const std::string size = json_string(meta, {"BinaryResult", "PixelSize", "width"});
      std::string unit = json_string(meta, {"BinaryResult", "PixelUnitX"});
      if (!size.empty() && !unit.empty()) {
        s.info.pixel_size = std::stod(size);
        normalise_length_unit(s.info.pixel_size, unit);
        s.info.unit = unit;
      }
    } catch (const std::exception&) {
      s.info.pixel_size = 0;  // unreadable calibration: uncalibrated, not an error
    }
    s.info.scan = velox_scan(meta, s.info.width);
    add_unique(out, std::move(s));
  }
}

struct BerkeleyVisit {
  std::vector<std::string> groups;
};

herr_t visit_group(hid_t, const char* name, const H5O_info_t* info, void* data) {
  auto* v = static_cast<BerkeleyVisit*>(data);
  if (info->type == H5O_TYPE_GROUP && v->groups.size() < 10000) v->groups.emplace_back(name);
  return 0;
}

void list_berkeley(hid_t file, std::vector<EmdSignal>& out) {
  BerkeleyVisit v;
  H5Ovisit(file, H5_INDEX_NAME, H5_ITER_INC, visit_group, &v);
  for (const auto& path : v.groups) {
    Handle g(H5Gopen2(file, path.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g.ok() || int_attribute(g.get(), "emd_group_type", 0) != 1) continue;
    if (H5Lexists(g.get(), "data", H5P_DEFAULT) <= 0) continue;
    Handle ds(H5Dopen2(g.get(), "data", H5P_DEFAULT), H5Dclose);
    if (!ds.ok()) continue;
    Handle type(H5Dget_type(ds.get()), H5Tclose);
    EmdSignal s;
    s.info.format = "Berkeley EMD";
    s.dataset = "/" + path + "/data";
    s.info.pixel_type = type_name(type.get());
    const auto d = dims_of(ds.get());
    if (s.info.pixel_type.empty() || !image_dims(d, 0, s)) continue;
    s.info.name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    // The x axis is the last dimension: dimN with N = rank.
    const std::string dim = "dim" + std::to_string(d.size());
    if (H5Lexists(g.get(), dim.c_str(), H5P_DEFAULT) > 0) {
      Handle dv(H5Dopen2(g.get(), dim.c_str(), H5P_DEFAULT), H5Dclose);
      const auto dd = dims_of(dv.get());
      if (dv.ok() && dd.size() == 1 && dd[0] >= 2) {
        Handle space(H5Dget_space(dv.get()), H5Sclose);
        const hsize_t start = 0, count = 2;
        H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr);
        Handle mem(H5Screate_simple(1, &count, nullptr), H5Sclose);
        double xy[2] = {0, 0};
        std::string unit = string_attribute(dv.get(), "units");
        if (H5Dread(dv.get(), H5T_NATIVE_DOUBLE, mem.get(), space.get(), H5P_DEFAULT, xy) >= 0) {
          double size = std::fabs(xy[1] - xy[0]);
          normalise_length_unit(size, unit);
          if (size > 0 && std::isfinite(size) && !unit.empty()) {
            s.info.pixel_size = size;
            s.info.unit = unit;
          }
        }
      }
    }
    add_unique(out, std::move(s));
  }
}

Handle open_file(const std::string& path) {
  quiet_hdf5();
  if (H5Fis_hdf5(path.c_str()) <= 0) throw bad_input(path + ": not an HDF5 file");
  Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.ok()) throw bad_input(path + ": cannot open the HDF5 file (corrupt or truncated)");
  return f;
}

std::vector<EmdSignal> list_signals(hid_t file, const std::string& path) {
  std::vector<EmdSignal> out;
  const bool velox = link_exists(file, "/Data/Image");
  if (velox) list_velox(file, out);
  else list_berkeley(file, out);
  if (out.empty())
    throw bad_input(path + (velox ? ": Velox EMD file without any image dataset under /Data/Image"
                                  : ": HDF5 file is neither Velox EMD (no /Data/Image) nor Berkeley EMD (no group "
                                    "with emd_group_type = 1 holding 2-D or 3-D image data)"));
  return out;
}

class EmdSeries : public FrameSource {
 public:
  EmdSeries(std::string path, Handle file, EmdSignal signal, std::size_t cache_bytes)
      : path_(std::move(path)), file_(std::move(file)), signal_(std::move(signal)), cache_(cache_bytes) {
    Handle dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
    H5Pset_chunk_cache(dapl.get(), kChunkCacheSlots, kChunkCacheBytes, 0.75);
    dataset_ = Handle(H5Dopen2(file_.get(), signal_.dataset.c_str(), dapl.get()), H5Dclose);
    if (!dataset_.ok()) throw bad_input(path_ + ": cannot open dataset " + signal_.dataset);
  }
  ~EmdSeries() override {
    std::lock_guard<std::recursive_mutex> lock(hdf5_lock());
    dataset_ = Handle();
    file_ = Handle();
  }
  EmdSeries(const EmdSeries&) = delete;
  EmdSeries& operator=(const EmdSeries&) = delete;

  std::size_t frame_count() const override { return signal_.info.frames; }
  int width() const override { return signal_.info.width; }
  int height() const override { return signal_.info.height; }
  double pixel_size() const override { return signal_.info.pixel_size; }
  std::string pixel_unit() const override { return signal_.info.unit; }
  RecordedScan recorded_scan() const override { return signal_.info.scan; }
  RecordedRotations recorded_rotations() const override {
    std::call_once(rotations_read_, [this] {
      if (signal_.info.format != "Velox EMD") return;
      std::lock_guard<std::recursive_mutex> lock(hdf5_lock());
      const std::string group = signal_.dataset.substr(0, signal_.dataset.rfind('/'));
      Handle g(H5Gopen2(file_.get(), group.c_str(), H5P_DEFAULT), H5Gclose);
      if (g.ok()) rotations_ = velox_rotations(g.get(), signal_.info.frames);
    });
    return rotations_;
  }
  std::string describe() const override { return describe_signal(path_, signal_.info); }

  Frame frame(std::size_t k) const override {
    if (k >= signal_.info.frames)
      throw bad_input(path_ + ": frame " + std::to_string(k) + " out of range (" + std::to_string(signal_.info.frames) +
                      " frames)");
    if (auto cached = cache_.find(k)) return *cached;
    auto f = std::make_shared<Frame>(signal_.info.width, signal_.info.height);
    {
      std::lock_guard<std::recursive_mutex> lock(hdf5_lock());
      Handle space(H5Dget_space(dataset_.get()), H5Sclose);
      std::vector<hsize_t> start(static_cast<std::size_t>(signal_.rank), 0), count;
      const auto h = static_cast<hsize_t>(signal_.info.height), w = static_cast<hsize_t>(signal_.info.width);
      if (signal_.rank == 2) {
        count = {h, w};
      } else if (signal_.frame_axis == 0) {
        start[0] = k;
        count = {1, h, w};
      } else {
        start[2] = k;
        count = {h, w, 1};
      }
      const hsize_t n = h * w;
      Handle mem(H5Screate_simple(1, &n, nullptr), H5Sclose);
      if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0 ||
          H5Dread(dataset_.get(), H5T_NATIVE_FLOAT, mem.get(), space.get(), H5P_DEFAULT, f->pixels.data()) < 0)
        throw bad_input(path_ + ": cannot read frame " + std::to_string(k) + " of " + signal_.dataset +
                        " (corrupt or truncated file)");
    }
    for (float& v : f->pixels)  // NaN/inf would poison every FFT: zeroed, as the TIFF reader does
      if (!std::isfinite(v)) v = 0.0f;
    cache_.insert(k, f);
    return *f;
  }

 private:
  std::string path_;
  Handle file_;
  Handle dataset_;
  EmdSignal signal_;
  mutable FrameCache cache_;
  mutable std::once_flag rotations_read_;  // every frame's metadata is read once, when asked
  mutable RecordedRotations rotations_;
};

std::vector<SignalInfo> list_emd_signals(const std::string& path) {
  std::lock_guard<std::recursive_mutex> lock(hdf5_lock());
  Handle f = open_file(path);
  std::vector<SignalInfo> out;
  for (auto& s : list_signals(f.get(), path)) out.push_back(s.info);
  return out;
}

std::unique_ptr<FrameSource> open_emd_signal(const std::string& path, std::size_t index, std::size_t cache_bytes) {
  std::lock_guard<std::recursive_mutex> lock(hdf5_lock());
  Handle f = open_file(path);
  auto signals = list_signals(f.get(), path);
  if (index >= signals.size())
    throw bad_input(path + ": no signal " + std::to_string(index) + " (the file holds " +
                    std::to_string(signals.size()) + ")");
  return std::make_unique<EmdSeries>(path, std::move(f), std::move(signals[index]), cache_bytes);
}

}  // namespace

FormatReader emd_reader() {
  FormatReader r;
  r.name = "EMD (HDF5)";
  r.reads = "Velox/Berkeley EMD";
  r.recognise = [](const FileProbe& p) {
    // The HDF5 signature starts the file or follows a user block of 512,
    // 1024, 2048, ... bytes (searched up to 1 MiB in files of a KiB or more);
    // after a user block it yields to a signature at byte 0 (a TIFF, a DM file).
    auto hdf5_at = [&](std::uint64_t off) { return p.has(off, {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'}); };
    if (hdf5_at(0)) return Recognition::signature_at_start;
    if (hdf5_at(512)) return Recognition::signature_inside;
    for (std::uint64_t off = 1024; off <= (std::uint64_t(1) << 20); off *= 2)
      if (hdf5_at(off)) return Recognition::signature_searched;
    return Recognition::no;
  };
  r.list_signals = list_emd_signals;
  r.open_signal = open_emd_signal;
  r.scan_clock_in_index = true;  // Velox's JSON metadata, read when the file is listed
  return r;
}

}  // namespace driftscan
