#pragma once
// The files of a multi-file series: a folder's TIFFs or a glob's matches, in
// natural order (f2 before f10, as a person numbers frames).
#include <string>
#include <vector>

namespace driftscan {

// a < b comparing runs of digits by value ("f2" < "f10" < "F11"), other
// characters case-insensitively, ties broken byte-wise.
bool natural_less(const std::string& a, const std::string& b);

bool has_glob_characters(const std::string& path);

// Regular files named *.tif / *.tiff (any case) directly in `folder`, hidden
// files left out. Throws bad_input naming the folder when it cannot be read or
// holds no TIFF.
std::vector<std::string> tiff_files_in_folder(const std::string& folder);

// Regular files matching `pattern` (glob(3)). Throws bad_input naming the
// pattern when nothing matches.
std::vector<std::string> files_matching(const std::string& pattern);

}  // namespace driftscan
