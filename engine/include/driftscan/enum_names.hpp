#pragma once
// How every enumerated setting is spelled — in job files, on the command
// line, in the app and in reports — declared once, here. A value that has no
// name here cannot be written, so a new enumerator fails loudly (enum_name
// throws) instead of being saved under the wrong name.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "driftscan/averaging.hpp"
#include "driftscan/scan_timing.hpp"
#include "driftscan/synthetic_series.hpp"
#include "driftscan/transform.hpp"

namespace driftscan {

template <class E>
struct EnumEntry {
  E value;
  const char* name;
};

// Specialised for each enumerated setting: `static const EnumEntry<E> table[]`.
template <class E>
struct EnumNames;

template <>
struct EnumNames<MotionModel> {
  static constexpr EnumEntry<MotionModel> table[] = {
      {MotionModel::translation, "translation"}, {MotionModel::rigid, "rigid"}, {MotionModel::affine, "affine"}};
};
template <>
struct EnumNames<AverageMethod> {
  static constexpr EnumEntry<AverageMethod> table[] = {
      {AverageMethod::mean, "mean"}, {AverageMethod::median, "median"}, {AverageMethod::clipped, "clipped"}};
};
template <>
struct EnumNames<Interpolation> {
  static constexpr EnumEntry<Interpolation> table[] = {{Interpolation::cubic, "cubic"},
                                                       {Interpolation::fourier, "fourier"}};
};
template <>
struct EnumNames<FrameWeighting> {
  static constexpr EnumEntry<FrameWeighting> table[] = {{FrameWeighting::equal, "equal"},
                                                        {FrameWeighting::inverse_variance, "inverse-variance"}};
};
template <>
struct EnumNames<Lattice> {
  static constexpr EnumEntry<Lattice> table[] = {{Lattice::hex, "hex"}, {Lattice::square, "square"}};
};

template <>
struct EnumNames<ScanDirection> {
  static constexpr EnumEntry<ScanDirection> table[] = {{ScanDirection::normal, "normal"},
                                                       {ScanDirection::serpentine, "serpentine"},
                                                       {ScanDirection::rotated90, "rotated90"}};
};

template <class E>
const char* enum_name(E value) {
  for (const auto& e : EnumNames<E>::table)
    if (e.value == value) return e.name;
  throw std::logic_error("enum value without a name in enum_names.hpp");
}

// False (out unchanged) when `name` is not one of the names.
template <class E>
bool enum_from_name(const std::string& name, E& out) {
  for (const auto& e : EnumNames<E>::table)
    if (name == e.name) {
      out = e.value;
      return true;
    }
  return false;
}

template <class E>
std::vector<std::string> enum_names() {
  std::vector<std::string> out;
  for (const auto& e : EnumNames<E>::table) out.emplace_back(e.name);
  return out;
}

// Settings kept as strings in the job (the engine does not know the MPI
// backend's enums), spelled once here for the job file, the flags and the app.
const std::vector<std::string>& job_command_names();     // register, average, spectrum, synth
const std::vector<std::string>& scan_algorithm_names();  // execution.scan_algorithm
const std::vector<std::string>& local_strategy_names();  // execution.local_strategy

// "a, b or c" — the list as error messages and help texts spell it.
std::string one_of(const std::vector<std::string>& names, const char* last_separator = " or ");

inline const char* to_string(AverageMethod m) { return enum_name(m); }
inline const char* to_string(Interpolation i) { return enum_name(i); }
inline const char* to_string(Lattice l) { return enum_name(l); }

}  // namespace driftscan
