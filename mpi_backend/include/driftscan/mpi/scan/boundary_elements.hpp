#pragma once
// Elements crossing a rank boundary when ranks steal from each other
// (rank_line.hpp): a contiguous run of elements as one message, each element
// by the scan's codec behind its byte length.
#include <cstdint>
#include <cstring>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/scan/scan_element_codec.hpp"

namespace driftscan::mpi {

template <class T, class Codec = ScanElementCodec<T>>
void encode_elements(const T* first, std::size_t count, ByteBuffer& out) {
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = out.size();
    out.resize(at + sizeof(std::uint64_t));
    Codec::encode(first[i], out);
    const std::uint64_t length = out.size() - at - sizeof(std::uint64_t);
    std::memcpy(out.data() + at, &length, sizeof length);
  }
}

template <class T, class Codec = ScanElementCodec<T>>
std::vector<T> decode_elements(const unsigned char* data, std::size_t size) {
  std::vector<T> elements;
  std::size_t at = 0;
  while (at < size) {
    std::uint64_t length = 0;
    if (size - at < sizeof length) throw failure("scan: a corrupt message of boundary elements");
    std::memcpy(&length, data + at, sizeof length);
    at += sizeof length;
    if (size - at < length) throw failure("scan: a corrupt message of boundary elements");
    elements.push_back(Codec::decode(data + at, static_cast<std::size_t>(length)));
    at += static_cast<std::size_t>(length);
  }
  return elements;
}

}  // namespace driftscan::mpi
