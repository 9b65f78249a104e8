#include "libtiff_diagnostics.hpp"

#include <cstdarg>
#include <cstdio>
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
    if (m.find('/') == std::string::npos && m.find('.') == std::string::npos)
      text = m + ": " + text;
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

LibtiffThreadMessages::LibtiffThreadMessages(LibtiffMessages& messages)
    : previous_(thread_messages) {
  thread_messages = &messages;
}

LibtiffThreadMessages::~LibtiffThreadMessages() { thread_messages = previous_; }

std::unique_ptr<LibtiffFile> LibtiffFile::open(const std::string& path, const char* mode,
                                               std::size_t max_alloc, std::string* why) {
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
