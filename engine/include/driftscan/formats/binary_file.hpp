#pragma once
// A read-only file read by offset (pread), for the parsers of binary
// microscope formats: every read is checked against the file's size and a
// short read names the file, so a corrupt header can never make a reader
// index past the end or allocate what it claims. Thread-safe (pread).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace driftscan {

enum class ByteOrder { little, big };

class BinaryFile {
 public:
  // Throws Error(bad_input) naming the path when it cannot be opened.
  static std::shared_ptr<const BinaryFile> open(const std::string& path);
  ~BinaryFile();
  BinaryFile(const BinaryFile&) = delete;
  BinaryFile& operator=(const BinaryFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }

  // Reads exactly n bytes at offset; throws Error(bad_input) "PATH: truncated
  // (WHAT needs bytes A..B, the file has N)" when they are not all there.
  void read(std::uint64_t offset, std::size_t n, void* out, const char* what = "data") const;
  std::vector<unsigned char> bytes(std::uint64_t offset, std::size_t n, const char* what = "data") const;
  // Whether [offset, offset + n) lies inside the file (no overflow).
  bool contains(std::uint64_t offset, std::uint64_t n) const { return offset <= size_ && n <= size_ - offset; }

  std::uint8_t u8(std::uint64_t offset) const;
  std::uint16_t u16(std::uint64_t offset, ByteOrder order) const;
  std::uint32_t u32(std::uint64_t offset, ByteOrder order) const;
  std::uint64_t u64(std::uint64_t offset, ByteOrder order) const;
  std::int16_t i16(std::uint64_t offset, ByteOrder order) const {
    return static_cast<std::int16_t>(u16(offset, order));
  }
  std::int32_t i32(std::uint64_t offset, ByteOrder order) const {
    return static_cast<std::int32_t>(u32(offset, order));
  }
  std::int64_t i64(std::uint64_t offset, ByteOrder order) const {
    return static_cast<std::int64_t>(u64(offset, order));
  }
  float f32(std::uint64_t offset, ByteOrder order) const;
  double f64(std::uint64_t offset, ByteOrder order) const;

  // Throws Error(bad_input) "PATH: MESSAGE".
  [[noreturn]] void fail(const std::string& message) const;

 private:
  BinaryFile(std::string path, int fd, std::uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// Value of n bytes stored in `order` (n <= 8).
std::uint64_t load_unsigned(const unsigned char* p, std::size_t n, ByteOrder order);

}  // namespace driftscan
