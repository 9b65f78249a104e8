#include "formats/series_file_list.hpp"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "driftscan/core/error.hpp"

namespace driftscan {
namespace {

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool has_tiff_extension(const std::string& name) {
  std::size_t dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "tif" || ext == "tiff";
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // compare by value: skip leading zeros, then length, then digits
      std::size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      int c = a.compare(is, ie - is, b, js, je - js);
      if (c != 0) return c < 0;
      i = ie;
      j = je;
      continue;
    }
    char ca = static_cast<char>(std::tolower(static_cast<unsigned char>(a[i])));
    char cb = static_cast<char>(std::tolower(static_cast<unsigned char>(b[j])));
    if (ca != cb) return ca < cb;
    ++i;
    ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

bool has_glob_characters(const std::string& path) { return path.find_first_of("*?[") != std::string::npos; }

std::vector<std::string> tiff_files_in_folder(const std::string& folder) {
  DIR* dir = ::opendir(folder.c_str());
  if (!dir) throw bad_input(folder + ": cannot read folder: " + std::strerror(errno));
  std::vector<std::string> files;
  std::string base = folder;
  if (!base.empty() && base.back() != '/') base += '/';
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || !has_tiff_extension(name)) continue;
    std::string path = base + name;
    if (is_regular_file(path)) files.push_back(path);
  }
  ::closedir(dir);
  if (files.empty()) throw bad_input(folder + ": the folder holds no .tif/.tiff file (zero pages)");
  std::sort(files.begin(), files.end(), natural_less);
  return files;
}

std::vector<std::string> files_matching(const std::string& pattern) {
  glob_t g{};
  int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> files;
  if (rc == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i)
      if (is_regular_file(g.gl_pathv[i])) files.push_back(g.gl_pathv[i]);
  ::globfree(&g);
  if (rc == GLOB_ABORTED) throw bad_input(pattern + ": cannot read the folder of the pattern");
  if (files.empty()) throw bad_input(pattern + ": no file matches (missing path?)");
  std::sort(files.begin(), files.end(), natural_less);
  return files;
}

}  // namespace driftscan
