#include "engine_call.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <thread>
#include <utility>

namespace py = pybind11;

namespace driftscan::python {
namespace {

// The JSON progress writer's output, cut into lines for the waiting thread.
class EventLines : public std::streambuf {
 public:
  // Waits up to `timeout` for the work's end or a complete line.
  void wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait_for(lock, timeout, [&] { return finished_ || !lines_.empty(); });
  }
  std::deque<std::string> take() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(lines_, {});
  }
  void finish() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
    }
    ready_.notify_all();
  }
  bool finished() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return finished_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) {
      const char ch = traits_type::to_char_type(c);
      xsputn(&ch, 1);
    }
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    bool complete = false;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      for (std::streamsize i = 0; i < n; ++i) {
        if (s[i] == '\n') {
          lines_.push_back(std::move(partial_));
          partial_.clear();
          complete = true;
        } else {
          partial_ += s[i];
        }
      }
    }
    if (complete) ready_.notify_all();
    return n;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::string> lines_;
  std::string partial_;
  bool finished_ = false;
};

void deliver(const std::deque<std::string>& lines, const py::object& callback, const py::object& loads) {
  if (callback.is_none()) return;
  for (const std::string& line : lines) callback(loads(line));
}

}  // namespace

void call_engine(const std::function<void(Progress&, const CancelToken&)>& work, const py::object& callback) {
  EventLines lines;
  std::ostream events(&lines);
  const std::unique_ptr<Progress> progress = make_json_progress(events);
  CancelToken cancel;
  std::exception_ptr failed;
  const py::object loads = py::module_::import("json").attr("loads");

  std::thread worker([&] {
    try {
      work(*progress, cancel);
    } catch (...) {
      failed = std::current_exception();
    }
    lines.finish();
  });
  std::unique_ptr<py::error_already_set> interrupted;
  std::exception_ptr callback_failed;
  while (!lines.finished()) {
    {
      const py::gil_scoped_release release;
      lines.wait(std::chrono::milliseconds(50));
    }
    if (!interrupted && PyErr_CheckSignals() != 0) {
      interrupted = std::make_unique<py::error_already_set>();  // takes (and clears) the KeyboardInterrupt
      cancel.request();
    }
    if (!callback_failed) {
      try {
        deliver(lines.take(), callback, loads);
      } catch (...) {  // a callback that raises cancels the run, then its error is raised
        callback_failed = std::current_exception();
        cancel.request();
      }
    }
  }
  {
    const py::gil_scoped_release release;
    worker.join();
  }
  if (!callback_failed) {
    try {
      deliver(lines.take(), callback, loads);
    } catch (...) {
      callback_failed = std::current_exception();
    }
  }
  if (interrupted) throw *interrupted;  // restores the KeyboardInterrupt
  if (callback_failed) std::rethrow_exception(callback_failed);
  if (failed) std::rethrow_exception(failed);
}

}  // namespace driftscan::python
