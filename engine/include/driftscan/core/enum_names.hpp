#pragma once
// How every enumerated setting is spelled — in job files, on the command
// line, in the app and in reports — declared once, beside each enum. A value that has no
// name here cannot be written, so a new enumerator fails loudly (enum_name
// throws) instead of being saved under the wrong name.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace driftscan {

template <class E>
struct EnumEntry {
  E value;
  const char* name;
};

// Specialised for each enumerated setting, in the header that declares the
// enum (so this header depends on nothing): `static const EnumEntry<E> table[]`.
template <class E>
struct EnumNames;

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

// "a, b or c" — the list as error messages and help texts spell it.
std::string one_of(const std::vector<std::string>& names, const char* last_separator = " or ");

}  // namespace driftscan
