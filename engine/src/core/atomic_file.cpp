// Write to a temporary, then rename: see atomic_file.hpp.
#include "driftscan/core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <streambuf>
#include <vector>

#include "driftscan/core/error.hpp"

namespace driftscan {
namespace {

// The one naming rule for temporaries (see the header).
std::string temporary_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

// A stream buffer over a descriptor that remembers why a write failed
// (std::ofstream does not say).
class DescriptorBuffer : public std::streambuf {
 public:
  explicit DescriptorBuffer(int fd) : fd_(fd), buffer_(std::size_t(1) << 16) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    std::size_t n = static_cast<std::size_t>(pptr() - pbase());
    while (n > 0) {
      ssize_t r = ::write(fd_, p, n);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        error_ = r < 0 ? errno : ENOSPC;
        return false;
      }
      p += r;
      n -= static_cast<std::size_t>(r);
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return true;
  }

  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

}  // namespace

std::string temporary_path_for(const std::string& path) { return temporary_name(path); }

struct AtomicFile::Impl {
  std::string path, what, temp;
  int fd = -1;
  bool committed = false;
  std::unique_ptr<DescriptorBuffer> buffer;
  std::unique_ptr<std::ostream> stream;
};

AtomicFile::AtomicFile(std::string path, std::string what) : impl_(std::make_unique<Impl>()) {
  Impl& f = *impl_;
  f.path = std::move(path);
  f.what = std::move(what);
  // A name left by a dead process with a recycled PID is skipped, not reused.
  for (int attempt = 0; attempt < 100; ++attempt) {
    f.temp = temporary_name(f.path);
    f.fd = ::open(f.temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f.fd >= 0 || errno != EEXIST) break;
  }
  if (f.fd < 0) fail("cannot create " + f.temp + ": " + std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (!impl_ || impl_->committed) return;
  if (impl_->fd >= 0) ::close(impl_->fd);
  ::unlink(impl_->temp.c_str());
}

std::ostream& AtomicFile::stream() {
  Impl& f = *impl_;
  if (f.committed) throw failure(f.path + ": written after commit");
  if (!f.stream) {
    f.buffer = std::make_unique<DescriptorBuffer>(f.fd);
    f.stream = std::make_unique<std::ostream>(f.buffer.get());
  }
  return *f.stream;
}

int AtomicFile::fd() const { return impl_->fd; }

void AtomicFile::commit() {
  Impl& f = *impl_;
  if (f.committed) return;
  if (f.stream && !f.stream->flush()) fail(f.buffer->error() ? std::strerror(f.buffer->error()) : "write error");
  if (::fsync(f.fd) != 0) fail(std::string("cannot sync ") + f.temp + ": " + std::strerror(errno));
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) fail(std::string("cannot close ") + f.temp + ": " + std::strerror(errno));
  if (std::rename(f.temp.c_str(), f.path.c_str()) != 0)
    fail("cannot rename " + f.temp + " into place: " + std::strerror(errno));
  f.committed = true;
}

bool AtomicFile::committed() const { return impl_->committed; }
const std::string& AtomicFile::path() const { return impl_->path; }
const std::string& AtomicFile::temporary_path() const { return impl_->temp; }

void AtomicFile::fail(const std::string& reason) const {
  throw failure(impl_->path + ": cannot write " + impl_->what + " (" + reason + ")");
}

}  // namespace driftscan
