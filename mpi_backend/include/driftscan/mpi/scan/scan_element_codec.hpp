#pragma once
// How a scan element crosses the network: element ↔ bytes. The distributed
// scan is generic over the element type; it only ever moves elements as byte
// strings produced here. Trivially copyable types (integers, small matrices,
// a registration result of frame indices + a Transform) are copied bitwise by
// default; any other type gets a specialisation of ScanElementCodec with the
// same two static functions (see the std::string one below).
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "driftscan/core/error.hpp"

namespace driftscan::mpi {

using ByteBuffer = std::vector<unsigned char>;

template <class T, class Enable = void>
struct ScanElementCodec {
  static_assert(std::is_trivially_copyable_v<T>,
                "specialise driftscan::mpi::ScanElementCodec for elements that are not trivially copyable");
  static_assert(std::is_default_constructible_v<T>, "the bitwise codec needs a default-constructible element");

  // Appends the bytes of `value` to `out`.
  static void encode(const T& value, ByteBuffer& out) {
    const auto* p = reinterpret_cast<const unsigned char*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
  }
  static T decode(const unsigned char* data, std::size_t size) {
    if (size != sizeof(T))
      throw failure("scan: received a " + std::to_string(size) + "-byte element, expected " +
                    std::to_string(sizeof(T)));
    T value;
    std::memcpy(static_cast<void*>(&value), data, sizeof(T));
    return value;
  }
};

// Variable-length elements: strings (used by the tests' concatenation operator).
template <>
struct ScanElementCodec<std::string> {
  static void encode(const std::string& value, ByteBuffer& out) { out.insert(out.end(), value.begin(), value.end()); }
  static std::string decode(const unsigned char* data, std::size_t size) {
    return std::string(reinterpret_cast<const char*>(data), size);
  }
};

}  // namespace driftscan::mpi
