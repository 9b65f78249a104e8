#include "formats/tiff/libtiff_diagnostics.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace driftscan {
namespace {

thread_local LibtiffMessages* thread_messages = nullptr;
constexpr std::size_t kMaxWarnings = 8;

std::string format_message(const char* module, const char* fmt, va_list ap) {
  char buffer[1024];
  std::vsnprintf(buffer, sizeof buffer, fmt, ap);
  std::string text(buffer);
  // One line: libtiff messages occasionally embed newlines.
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  if (module && *module) {
    // libtiff prefixes the file name as module in many messages; callers name
    // the file themselves, so keep only the function-style module names.
    std::string m(module);
    if (m.find('/') == std::string::npos && m.find('.') == std::string::npos) text = m + ": " + text;
  }
  return text;
}

void record_error(LibtiffMessages* record, const char* module, const char* fmt, va_list ap) {
  if (!record) return;
  // Keep the first error: later ones are usually consequences of it.
  if (record->last_error.empty()) record->last_error = format_message(module, fmt, ap);
}

void record_warning(LibtiffMessages* record, const char* module, const char* fmt, va_list ap) {
  if (!record || record->warnings.size() >= kMaxWarnings) return;
  record->warnings.push_back(format_message(module, fmt, ap));
}

int handle_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  record_error(static_cast<LibtiffMessages*>(user), module, fmt, ap);
  return 1;  // handled: libtiff does not call the global handlers
}

int handle_warning(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  record_warning(static_cast<LibtiffMessages*>(user), module, fmt, ap);
  return 1;
}

void global_error(thandle_t, const char* module, const char* fmt, va_list ap) {
  record_error(thread_messages, module, fmt, ap);
}

void global_warning(thandle_t, const char* module, const char* fmt, va_list ap) {
  record_warning(thread_messages, module, fmt, ap);
}

}  // namespace

void install_libtiff_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    TIFFSetErrorHandler(nullptr);
    TIFFSetWarningHandler(nullptr);
    TIFFSetErrorHandlerExt(global_error);
    TIFFSetWarningHandlerExt(global_warning);
  });
}

LibtiffThreadMessages::LibtiffThreadMessages(LibtiffMessages& messages) : previous_(thread_messages) {
  thread_messages = &messages;
}

LibtiffThreadMessages::~LibtiffThreadMessages() { thread_messages = previous_; }

std::unique_ptr<LibtiffFile> LibtiffFile::open(const std::string& path, const char* mode, std::size_t max_alloc,
                                               std::string* why) {
  install_libtiff_handlers();
  std::unique_ptr<LibtiffFile> file(new LibtiffFile());
  LibtiffThreadMessages scope(file->messages_);
  TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(options, handle_error, &file->messages_);
  TIFFOpenOptionsSetWarningHandlerExtR(options, handle_warning, &file->messages_);
  if (max_alloc > 0) TIFFOpenOptionsSetMaxSingleMemAlloc(options, static_cast<tmsize_t>(max_alloc));
  file->tif_ = TIFFOpenExt(path.c_str(), mode, options);
  TIFFOpenOptionsFree(options);
  if (!file->tif_) {
    if (why) *why = file->error_or("not a readable TIFF file");
    return nullptr;
  }
  return file;
}

// The file as libtiff sees it through open_at(): the real bytes, except a
// header whose first-IFD pointer is the wanted page's IFD.
struct LibtiffFile::VirtualFile {
  int fd = -1;
  std::uint64_t size = 0;
  std::uint64_t position = 0;
  unsigned char header[16] = {};
  std::size_t header_size = 8;

  static tmsize_t read(thandle_t h, void* buffer, tmsize_t n) {
    auto* v = static_cast<VirtualFile*>(h);
    if (n <= 0) return 0;
    auto* out = static_cast<unsigned char*>(buffer);
    std::uint64_t want = static_cast<std::uint64_t>(n), done = 0;
    while (done < want && v->position < v->size) {
      std::uint64_t at = v->position;
      if (at < v->header_size) {
        std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(v->header_size - at, want - done));
        std::memcpy(out + done, v->header + at, k);
        done += k;
        v->position += k;
        continue;
      }
      ssize_t r = ::pread(v->fd, out + done, static_cast<std::size_t>(want - done), static_cast<off_t>(at));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      done += static_cast<std::uint64_t>(r);
      v->position += static_cast<std::uint64_t>(r);
    }
    return static_cast<tmsize_t>(done);
  }
  static tmsize_t write(thandle_t, void*, tmsize_t) { return 0; }
  static toff_t seek(thandle_t h, toff_t offset, int whence) {
    auto* v = static_cast<VirtualFile*>(h);
    std::uint64_t base = whence == SEEK_CUR ? v->position : whence == SEEK_END ? v->size : 0;
    v->position = base + offset;
    return v->position;
  }
  static int close(thandle_t) { return 0; }
  static toff_t file_size(thandle_t h) { return static_cast<VirtualFile*>(h)->size; }
  static int map(thandle_t, void**, toff_t*) { return 0; }
  static void unmap(thandle_t, void*, toff_t) {}
};

std::unique_ptr<LibtiffFile> LibtiffFile::open_at(int fd, const std::string& name, bool big_endian, bool bigtiff,
                                                  std::uint64_t ifd_offset, std::size_t max_alloc, std::string* why) {
  install_libtiff_handlers();
  std::unique_ptr<LibtiffFile> file(new LibtiffFile());
  auto v = std::make_unique<VirtualFile>();
  v->fd = fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    if (why) *why = std::strerror(errno);
    return nullptr;
  }
  v->size = static_cast<std::uint64_t>(st.st_size);
  auto put = [&](std::size_t at, std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i)
      v->header[at + static_cast<std::size_t>(big_endian ? bytes - 1 - i : i)] =
          static_cast<unsigned char>(value >> (8 * i));
  };
  v->header[0] = v->header[1] = big_endian ? 'M' : 'I';
  if (bigtiff) {
    put(2, 43, 2);
    put(4, 8, 2);
    put(6, 0, 2);
    put(8, ifd_offset, 8);
    v->header_size = 16;
  } else {
    put(2, 42, 2);
    put(4, ifd_offset, 4);
    v->header_size = 8;
  }
  file->virtual_ = std::move(v);
  LibtiffThreadMessages scope(file->messages_);
  TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(options, handle_error, &file->messages_);
  TIFFOpenOptionsSetWarningHandlerExtR(options, handle_warning, &file->messages_);
  if (max_alloc > 0) TIFFOpenOptionsSetMaxSingleMemAlloc(options, static_cast<tmsize_t>(max_alloc));
  file->tif_ = TIFFClientOpenExt(name.c_str(), "rm", file->virtual_.get(), VirtualFile::read, VirtualFile::write,
                                 VirtualFile::seek, VirtualFile::close, VirtualFile::file_size, VirtualFile::map,
                                 VirtualFile::unmap, options);
  TIFFOpenOptionsFree(options);
  if (!file->tif_) {
    if (why) *why = file->error_or("libtiff cannot read the IFD");
    return nullptr;
  }
  return file;
}

LibtiffFile::~LibtiffFile() { close(); }

bool LibtiffFile::close() {
  if (!tif_) return true;
  LibtiffThreadMessages scope(messages_);
  std::string before = messages_.last_error;
  TIFFClose(tif_);  // flushes pending writes; failures arrive through the handler
  tif_ = nullptr;
  return messages_.last_error == before;
}

std::string LibtiffFile::error_or(const std::string& fallback) const {
  return messages_.last_error.empty() ? fallback : messages_.last_error;
}

}  // namespace driftscan
