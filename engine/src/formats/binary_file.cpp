#include "driftscan/formats/binary_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "driftscan/core/error.hpp"

namespace driftscan {

std::shared_ptr<const BinaryFile> BinaryFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw bad_input(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw bad_input(path + ": not a regular file");
  }
  return std::shared_ptr<const BinaryFile>(new BinaryFile(path, fd, static_cast<std::uint64_t>(st.st_size)));
}

BinaryFile::~BinaryFile() {
  if (fd_ >= 0) ::close(fd_);
}

void BinaryFile::fail(const std::string& message) const { throw bad_input(path_ + ": " + message); }

void BinaryFile::read(std::uint64_t offset, std::size_t n, void* out, const char* what) const {
  if (!contains(offset, n))
    fail(std::string("truncated (") + what + " needs bytes " + std::to_string(offset) + ".." +
         std::to_string(offset + n) + ", the file has " + std::to_string(size_) + ")");
  auto* p = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      fail(std::string("read error in ") + what + " (" + (got < 0 ? std::strerror(errno) : "end of file") + ")");
    done += static_cast<std::size_t>(got);
  }
}

std::vector<unsigned char> BinaryFile::bytes(std::uint64_t offset, std::size_t n, const char* what) const {
  if (!contains(offset, n)) read(offset, n, nullptr, what);  // throws the truncation message
  std::vector<unsigned char> v(n);
  read(offset, n, v.data(), what);
  return v;
}

std::uint64_t load_unsigned(const unsigned char* p, std::size_t n, ByteOrder order) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = order == ByteOrder::big ? i : n - 1 - i;
    v = (v << 8) | p[j];
  }
  return v;
}

std::uint8_t BinaryFile::u8(std::uint64_t offset) const {
  unsigned char b = 0;
  read(offset, 1, &b, "header");
  return b;
}
std::uint16_t BinaryFile::u16(std::uint64_t offset, ByteOrder order) const {
  unsigned char b[2];
  read(offset, 2, b, "header");
  return static_cast<std::uint16_t>(load_unsigned(b, 2, order));
}
std::uint32_t BinaryFile::u32(std::uint64_t offset, ByteOrder order) const {
  unsigned char b[4];
  read(offset, 4, b, "header");
  return static_cast<std::uint32_t>(load_unsigned(b, 4, order));
}
std::uint64_t BinaryFile::u64(std::uint64_t offset, ByteOrder order) const {
  unsigned char b[8];
  read(offset, 8, b, "header");
  return load_unsigned(b, 8, order);
}
float BinaryFile::f32(std::uint64_t offset, ByteOrder order) const {
  const std::uint32_t u = u32(offset, order);
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
double BinaryFile::f64(std::uint64_t offset, ByteOrder order) const {
  const std::uint64_t u = u64(offset, order);
  double d = 0;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

}  // namespace driftscan
