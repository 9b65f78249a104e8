// One run at a time in a results folder: see results_lock.hpp.
#include "driftscan/job/results_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <nlohmann/json.hpp>

#include "driftscan/core/error.hpp"

namespace driftscan {
namespace fs = std::filesystem;

namespace {

std::string lock_path(const std::string& folder) { return (fs::path(folder) / kResultsLockName).string(); }

std::string absolute_folder(const std::string& folder) {
  std::error_code ec;
  const fs::path a = fs::absolute(folder, ec);
  return ec ? folder : a.lexically_normal().string();
}

// An exclusive (or, on a read-only descriptor, shared) lock of the whole
// file, owned by the open file description; the process-owned kind on a
// kernel without OFD locks (EINVAL). `test`: only ask whether it could be
// taken (true: it could).
int whole_file_lock(int fd, short type, bool test, bool* conflict = nullptr) {
  struct flock fl;
  std::memset(&fl, 0, sizeof fl);
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
#ifdef F_OFD_SETLK
  int r = ::fcntl(fd, test ? F_OFD_GETLK : F_OFD_SETLK, &fl);
  if (r != 0 && errno == EINVAL) r = ::fcntl(fd, test ? F_GETLK : F_SETLK, &fl);
#else
  int r = ::fcntl(fd, test ? F_GETLK : F_SETLK, &fl);
#endif
  if (test && r == 0 && conflict) *conflict = fl.l_type != F_UNLCK;
  return r;
}

std::string read_all(int fd) {
  std::string text;
  char buf[4096];
  off_t at = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    at += n;
    if (text.size() > 65536) break;
  }
  return text;
}

// The holder as the lock file describes it. A run that has just taken the
// lock may not have written it yet: read again for a moment.
std::string describe_holder(int fd) {
  nlohmann::json j;
  for (int attempt = 0; attempt < 20; ++attempt) {
    j = nlohmann::json::parse(read_all(fd), nullptr, false);
    if (j.is_object()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (!j.is_object()) return "another run (its " + std::string(kResultsLockName) + " says no more)";
  auto text = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string who = text("command").empty() ? "a run" : "a " + text("command") + " run";
  auto started = j.find("started_unix");
  if (started != j.end() && started->is_number()) {
    const std::time_t t = static_cast<std::time_t>(started->get<double>());
    const std::time_t now = std::time(nullptr);
    std::tm at{}, today{};
    localtime_r(&t, &at);
    localtime_r(&now, &today);
    const bool same_day = at.tm_year == today.tm_year && at.tm_yday == today.tm_yday;
    char when[40];
    std::strftime(when, sizeof when, same_day ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &at);
    who += std::string(" started ") + when;
  }
  if (!text("host").empty()) who += " on host " + text("host");
  auto pid = j.find("pid");
  if (pid != j.end() && pid->is_number_integer()) who += " (pid " + std::to_string(pid->get<long long>()) + ")";
  return who;
}

Error in_use(const std::string& folder, const std::string& holder) {
  return bad_input("results folder " + absolute_folder(folder) + " is in use by " + holder +
                   "; wait for it or choose another --out");
}

std::string this_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw)
    if (c == '\0') c = ' ';
  return raw;
}

std::string record(const std::string& command) {
  char host[256] = "";
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char iso[40];
  std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &utc);
  nlohmann::json j = {{"driftscan_lock", 1},
                      {"pid", static_cast<long long>(::getpid())},
                      {"host", std::string(host)},
                      {"started", iso},
                      {"started_unix", static_cast<long long>(now)},
                      {"command", command},
                      {"command_line", this_command_line()}};
  return j.dump() + "\n";
}

bool same_file(int fd, const std::string& path) {
  struct stat a, b;
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

ResultsLock::ResultsLock(std::string folder, int fd, std::string warning)
    : folder_(std::move(folder)), fd_(fd), warning_(std::move(warning)) {}

std::shared_ptr<ResultsLock> ResultsLock::acquire(const std::string& folder, const std::string& command) {
  const std::string path = lock_path(folder);
  auto unlocked = [&](const std::string& why) {
    return std::shared_ptr<ResultsLock>(
        new ResultsLock(folder, -1,
                        "results folder " + absolute_folder(folder) + ": not locked (" + why +
                            "): a second run into it at the same time would not be refused"));
  };
  // A few rounds: a holder that ends removes the file, and a lock taken on
  // the file it removed is taken again on the path's new file.
  for (int round = 0; round < 20; ++round) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) {
      const int err = errno;
      if (err == EACCES || err == EPERM) {
        // Another user's file: held (refused), or left by a killed run (removed, then ours).
        const int rfd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (rfd >= 0) {
          bool conflict = false;
          const bool asked = whole_file_lock(rfd, F_RDLCK, true, &conflict) == 0;
          if (asked && conflict) {
            const std::string holder = describe_holder(rfd);
            ::close(rfd);
            throw in_use(folder, holder);
          }
          ::close(rfd);
          if (asked && ::unlink(path.c_str()) == 0) continue;
        }
      }
      // No lock file here (a read-only folder, a full disk): the run's
      // first output fails the same way and says so.
      return unlocked(std::string("cannot create ") + kResultsLockName + ": " + std::strerror(err));
    }
    if (whole_file_lock(fd, F_WRLCK, false) != 0) {
      const int err = errno;
      if (err == EAGAIN || err == EACCES) {
        const std::string holder = describe_holder(fd);
        ::close(fd);
        throw in_use(folder, holder);
      }
      ::close(fd);
      return unlocked(std::string("the filesystem refuses locks: ") + std::strerror(err));
    }
    if (!same_file(fd, path)) {  // removed by the run that just ended: lock the new one
      ::close(fd);
      continue;
    }
    const std::string text = record(command);
    if (::ftruncate(fd, 0) == 0) {
      const ssize_t written = ::pwrite(fd, text.data(), text.size(), 0);
      (void)written;  // a lock without its description still locks (a full disk)
    }
    return std::shared_ptr<ResultsLock>(new ResultsLock(folder, fd, ""));
  }
  return unlocked(std::string(kResultsLockName) + " kept being replaced");
}

ResultsLock::~ResultsLock() {
  if (fd_ < 0) return;
  // Removed while still locked, so that the next run never locks a file
  // about to go (it checks that the path is still the file it locked).
  const std::string path = lock_path(folder_);
  if (same_file(fd_, path)) ::unlink(path.c_str());
  ::close(fd_);
}

std::string results_folder_holder(const std::string& folder) {
  const int fd = ::open(lock_path(folder).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "";
  bool conflict = false;
  const bool asked = whole_file_lock(fd, F_RDLCK, true, &conflict) == 0;
  std::string holder = asked && conflict ? describe_holder(fd) : std::string();
  ::close(fd);
  return holder;
}

}  // namespace driftscan
