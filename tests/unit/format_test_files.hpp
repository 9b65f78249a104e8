#pragma once
// Small writers of the microscope formats, built from the published format
// descriptions, so the readers are tested on every data type and layout they
// claim (not only on the few public samples): DM3/DM4, MRC, TIA SER/EMI and
// the Velox / Berkeley EMD layouts (written with libhdf5).
#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace format_test {

using Bytes = std::vector<unsigned char>;

inline void put(Bytes& b, std::uint64_t v, int n, bool big) {
  for (int i = 0; i < n; ++i) {
    const int shift = big ? 8 * (n - 1 - i) : 8 * i;
    b.push_back(static_cast<unsigned char>(v >> shift));
  }
}
inline void put_f32(Bytes& b, float f, bool big) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  put(b, u, 4, big);
}
inline void put_f64(Bytes& b, double d, bool big) {
  std::uint64_t u = 0;
  std::memcpy(&u, &d, 8);
  put(b, u, 8, big);
}
inline void write_file(const std::string& path, const Bytes& b) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// ---- DigitalMicrograph -----------------------------------------------------
struct DmImageSpec {
  std::string name;
  int data_type = 10;  // DM's image DataType (10 = uint16)
  int elem_type = 4;   // the Data array's element type (4 = uint16)
  int elem_bytes = 2;
  int width = 4, height = 3, frames = 1;
  Bytes data;       // already in the file's byte order
  float scale = 0;  // calibration of x (0: none)
  std::string unit;
  bool one_dimension = false;  // Dimensions holds the width alone (a spectrum)
};

class DmWriter {
 public:
  DmWriter(int version, bool little) : v4_(version == 4), little_(little) {}

  Bytes file(const std::vector<DmImageSpec>& images) {
    std::vector<Bytes> list;
    list.reserve(images.size());
    for (const auto& im : images) list.push_back(image(im));
    Bytes tags = group_tag("ImageList", list);
    Bytes b;
    put(b, v4_ ? 4 : 3, 4, true);
    put(b, 0, v4_ ? 8 : 4, true);  // file size (not used by readers)
    put(b, little_ ? 1 : 0, 4, true);
    b.push_back(0);
    b.push_back(0);
    put(b, 1, v4_ ? 8 : 4, true);
    b.insert(b.end(), tags.begin(), tags.end());
    return b;
  }

  Bytes entry(int kind, const std::string& name) const {
    Bytes b;
    b.push_back(static_cast<unsigned char>(kind));
    put(b, name.size(), 2, true);
    b.insert(b.end(), name.begin(), name.end());
    if (v4_) put(b, 0, 8, true);
    return b;
  }
  Bytes group_tag(const std::string& name, const std::vector<Bytes>& children) const {
    Bytes b = entry(20, name);
    b.push_back(0);
    b.push_back(1);
    put(b, children.size(), v4_ ? 8 : 4, true);
    for (const auto& c : children) b.insert(b.end(), c.begin(), c.end());
    return b;
  }
  Bytes data_tag(const std::string& name, const std::vector<std::uint64_t>& info, const Bytes& value) const {
    Bytes b = entry(21, name);
    b.insert(b.end(), {'%', '%', '%', '%'});
    put(b, info.size(), v4_ ? 8 : 4, true);
    for (auto i : info) put(b, i, v4_ ? 8 : 4, true);
    b.insert(b.end(), value.begin(), value.end());
    return b;
  }
  Bytes long_tag(const std::string& name, std::int32_t v) const {
    Bytes val;
    put(val, static_cast<std::uint32_t>(v), 4, !little_);
    return data_tag(name, {3}, val);
  }
  Bytes text_tag(const std::string& name, const std::u16string& s) const {
    Bytes val;
    for (char16_t c : s) put(val, c, 2, !little_);
    return data_tag(name, {20, 4, s.size()}, val);
  }
  Bytes image(const DmImageSpec& im) const {
    std::vector<Bytes> dims = {long_tag("", im.width)};
    if (!im.one_dimension) dims.push_back(long_tag("", im.height));
    if (im.frames > 1) dims.push_back(long_tag("", im.frames));
    std::vector<Bytes> cal;
    if (im.scale > 0) {
      Bytes scale;
      put_f32(scale, im.scale, !little_);
      std::u16string unit(im.unit.begin(), im.unit.end());
      if (im.unit == "\xc2\xb5m") unit = u"\u00b5m";
      cal.push_back(group_tag("", {data_tag("Scale", {6}, scale), text_tag("Units", unit)}));
      cal.push_back(group_tag("", {data_tag("Scale", {6}, scale), text_tag("Units", unit)}));
    }
    const std::uint64_t count = im.data.size() / static_cast<std::size_t>(im.elem_bytes);
    std::vector<Bytes> image_data = {data_tag("Data", {20, static_cast<std::uint64_t>(im.elem_type), count}, im.data),
                                     long_tag("DataType", im.data_type), group_tag("Dimensions", dims)};
    if (!cal.empty()) image_data.push_back(group_tag("Calibrations", {group_tag("Dimension", cal)}));
    std::vector<Bytes> children = {group_tag("ImageData", image_data)};
    if (!im.name.empty()) children.push_back(text_tag("Name", std::u16string(im.name.begin(), im.name.end())));
    return group_tag("", children);
  }

 private:
  bool v4_;
  bool little_;
};

// ---- MRC ------------------------------------------------------------------
inline Bytes mrc_file(int nx, int ny, int nz, int mode, const Bytes& data, float cell_x_angstrom, int nsymbt = 0,
                      bool big = false) {
  Bytes b;
  auto i32 = [&](std::int32_t v) { put(b, static_cast<std::uint32_t>(v), 4, big); };
  i32(nx);
  i32(ny);
  i32(nz);
  i32(mode);
  i32(0);
  i32(0);
  i32(0);
  i32(nx);
  i32(ny);
  i32(nz);
  put_f32(b, cell_x_angstrom, big);
  put_f32(b, cell_x_angstrom * ny / nx, big);
  put_f32(b, 1, big);
  put_f32(b, 90, big);
  put_f32(b, 90, big);
  put_f32(b, 90, big);
  i32(1);
  i32(2);
  i32(3);
  put_f32(b, 0, big);
  put_f32(b, 0, big);
  put_f32(b, 0, big);
  i32(0);  // ispg
  i32(nsymbt);
  b.resize(208, 0);
  b.insert(b.end(), {'M', 'A', 'P', ' '});
  if (big) b.insert(b.end(), {0x11, 0x11, 0, 0});
  else b.insert(b.end(), {0x44, 0x44, 0, 0});
  b.resize(1024 + static_cast<std::size_t>(nsymbt), 0);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

// ---- TIA SER --------------------------------------------------------------
// frames of w x h with pixel values given by `value(k, x, y)` stored as SER
// data type `type` (1 uint8, 2 uint16, 5 int16, 7 float32, ...).
template <class F>
Bytes ser_file(int version, int w, int h, int frames, int type, int elem_bytes, double delta_m, F value) {
  const bool wide = version == 0x220;
  Bytes b;
  put(b, 0x4949, 2, false);
  put(b, 0x0197, 2, false);
  put(b, static_cast<std::uint64_t>(version), 2, false);
  put(b, 0x4122, 4, false);
  put(b, 0x4152, 4, false);
  put(b, static_cast<std::uint64_t>(frames), 4, false);
  put(b, static_cast<std::uint64_t>(frames), 4, false);
  const std::size_t table_at_pos = b.size();
  put(b, 0, wide ? 8 : 4, false);
  put(b, 1, 4, false);  // one dimension
  put(b, static_cast<std::uint64_t>(frames), 4, false);
  put_f64(b, 0, false);
  put_f64(b, 1, false);
  put(b, 0, 4, false);
  const std::string desc = "Number";
  put(b, desc.size(), 4, false);
  b.insert(b.end(), desc.begin(), desc.end());
  put(b, 0, 4, false);
  std::vector<std::uint64_t> offsets;
  for (int k = 0; k < frames; ++k) {
    offsets.push_back(b.size());
    put_f64(b, 0, false);
    put_f64(b, delta_m, false);
    put(b, 0, 4, false);
    put_f64(b, 0, false);
    put_f64(b, delta_m, false);
    put(b, 0, 4, false);
    put(b, static_cast<std::uint64_t>(type), 2, false);
    put(b, static_cast<std::uint64_t>(w), 4, false);
    put(b, static_cast<std::uint64_t>(h), 4, false);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const double v = value(k, x, y);
        if (type == 7) put_f32(b, static_cast<float>(v), false);
        else if (type == 8) put_f64(b, v, false);
        else put(b, static_cast<std::uint64_t>(static_cast<std::int64_t>(v)), elem_bytes, false);
      }
  }
  const std::uint64_t table = b.size();
  for (auto o : offsets) put(b, o, wide ? 8 : 4, false);
  for (int k = 0; k < frames; ++k) put(b, 0, wide ? 8 : 4, false);  // tag offsets
  Bytes t;
  put(t, table, wide ? 8 : 4, false);
  std::copy(t.begin(), t.end(), b.begin() + static_cast<std::ptrdiff_t>(table_at_pos));
  return b;
}

// ---- EMD (HDF5) -----------------------------------------------------------
inline void h5_string_attr(hid_t obj, const char* name, const std::string& value) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, value.size() + 1);
  hid_t s = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, t, value.c_str());
  H5Aclose(a);
  H5Sclose(s);
  H5Tclose(t);
}

// A Velox image group: Data (h, w, n) int16 with value(k, x, y), chunked one
// frame per chunk as Velox writes it, and Metadata (len, n) uint8 JSON, one
// text per frame (`more_of(k)`: further top-level members of frame k's, e.g.
// "\"Scan\":{...}").
template <class F, class More>
void velox_image_frames(hid_t file, const std::string& id, const std::string& detector, double pixel_m, int w, int h,
                        int n, F value, More more_of) {
  hid_t g = H5Gcreate2(file, ("/Data/Image/" + id).c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[3] = {static_cast<hsize_t>(h), static_cast<hsize_t>(w), static_cast<hsize_t>(n)};
  const hsize_t chunk[3] = {static_cast<hsize_t>(h), static_cast<hsize_t>(w), 1};
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  hid_t space = H5Screate_simple(3, dims, nullptr);
  hid_t ds = H5Dcreate2(g, "Data", H5T_STD_I16LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  std::vector<std::int16_t> data(static_cast<std::size_t>(w * h * n));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < n; ++k)
        data[(static_cast<std::size_t>(y) * w + x) * n + k] = static_cast<std::int16_t>(value(k, x, y));
  H5Dwrite(ds, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
  H5Dclose(ds);
  H5Sclose(space);
  H5Pclose(dcpl);
  std::vector<std::string> texts;
  std::size_t len = 0;
  for (int k = 0; k < n; ++k) {
    const std::string more = more_of(k);
    char json[1024];
    std::snprintf(
        json, sizeof json,
        "{\"BinaryResult\":{\"DetectorIndex\":\"1\",\"PixelSize\":{\"width\":\"%.17g\",\"height\":\"%.17g\"},"
        "\"PixelUnitX\":\"m\",\"PixelUnitY\":\"m\"},\"Detectors\":{\"Detector-1\":{\"DetectorName\":\"%s\"}}%s%s}",
        pixel_m, pixel_m, detector.c_str(), more.empty() ? "" : ",", more.c_str());
    texts.emplace_back(json);
    len = std::max(len, texts.back().size() + 64);
  }
  const hsize_t mdims[2] = {len, static_cast<hsize_t>(n)};
  std::vector<unsigned char> meta(len * static_cast<std::size_t>(n), 0);
  for (int k = 0; k < n; ++k)
    for (std::size_t i = 0; i < texts[static_cast<std::size_t>(k)].size(); ++i)
      meta[i * static_cast<std::size_t>(n) + static_cast<std::size_t>(k)] =
          static_cast<unsigned char>(texts[static_cast<std::size_t>(k)][i]);
  hid_t ms = H5Screate_simple(2, mdims, nullptr);
  hid_t md = H5Dcreate2(g, "Metadata", H5T_STD_U8LE, ms, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(md, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, meta.data());
  H5Dclose(md);
  H5Sclose(ms);
  H5Gclose(g);
}

// The same with one text for every frame (`more`: its further members).
template <class F>
void velox_image(hid_t file, const std::string& id, const std::string& detector, double pixel_m, int w, int h, int n,
                 F value, const std::string& more = "") {
  velox_image_frames(file, id, detector, pixel_m, w, h, n, value, [&](int) { return more; });
}

inline hid_t velox_file(const std::string& path) {
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(H5Gcreate2(f, "/Data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Gclose(H5Gcreate2(f, "/Data/Image", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  return f;
}

// A Berkeley EMD data group: data (n, h, w) float32 (or (h, w) when n == 0)
// with dim vectors; x spacing `pixel` in `unit`.
template <class F>
void berkeley_group(hid_t file, const std::string& path, int w, int h, int n, double pixel, const std::string& unit,
                    F value) {
  hid_t g = H5Gcreate2(file, path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t s1 = H5Screate(H5S_SCALAR);
  const int one = 1;
  hid_t a = H5Acreate2(g, "emd_group_type", H5T_STD_I32LE, s1, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_INT, &one);
  H5Aclose(a);
  H5Sclose(s1);
  const int frames = n == 0 ? 1 : n;
  std::vector<float> data(static_cast<std::size_t>(w * h * frames));
  for (int k = 0; k < frames; ++k)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        data[(static_cast<std::size_t>(k) * h + y) * w + x] = static_cast<float>(value(k, x, y));
  std::vector<hsize_t> dims;
  if (n > 0) dims.push_back(static_cast<hsize_t>(n));
  dims.push_back(static_cast<hsize_t>(h));
  dims.push_back(static_cast<hsize_t>(w));
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t ds = H5Dcreate2(g, "data", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
  H5Dclose(ds);
  H5Sclose(space);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    std::vector<double> v(dims[i]);
    const bool is_x = i + 1 == dims.size();
    for (std::size_t j = 0; j < v.size(); ++j) v[j] = static_cast<double>(j) * (is_x ? pixel : 1.0);
    hid_t vs = H5Screate_simple(1, &dims[i], nullptr);
    const std::string name = "dim" + std::to_string(i + 1);
    hid_t vd = H5Dcreate2(g, name.c_str(), H5T_IEEE_F64LE, vs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(vd, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    h5_string_attr(vd, "units", is_x ? unit : "");
    h5_string_attr(vd, "name", is_x ? "x" : "");
    H5Dclose(vd);
    H5Sclose(vs);
  }
  H5Gclose(g);
}

}  // namespace format_test
