#include "subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "driftscan/core/error.hpp"

namespace driftscan::launch {

Subprocess::Subprocess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                       const std::string& stdin_text) {
  if (argv.empty()) throw failure("internal: empty command");
  int out[2], err[2], in[2];
  if (pipe(out) != 0 || pipe(err) != 0 || pipe(in) != 0)
    throw failure(std::string("cannot create pipes: ") + std::strerror(errno));
  pid_ = fork();
  if (pid_ < 0) throw failure(std::string("cannot start ") + argv[0] + ": " + std::strerror(errno));
  if (pid_ == 0) {
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {out[0], out[1], err[0], err[1], in[0], in[1]}) close(fd);
    signal(SIGPIPE, SIG_DFL);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::string msg = "cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!write(2, msg.data(), msg.size());
    _exit(127);
  }
  setpgid(pid_, pid_);  // also here: no race with an early signal_group()
  close(out[1]);
  close(err[1]);
  close(in[0]);
  if (!stdin_text.empty()) {
    // Small texts only (a script): fits the pipe buffer.
    signal(SIGPIPE, SIG_IGN);
    (void)!write(in[1], stdin_text.data(), stdin_text.size());
  }
  close(in[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  fcntl(out_fd_, F_SETFL, O_NONBLOCK);
  fcntl(err_fd_, F_SETFL, O_NONBLOCK);
}

Subprocess::~Subprocess() {
  if (!reaped_ && pid_ > 0) {
    signal_group(SIGKILL);
    wait();
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

void Subprocess::read_fd(int& fd, std::string& buffer, const LineHandler& handler) {
  char chunk[8192];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) {
      buffer.append(chunk, static_cast<std::size_t>(n));
      std::size_t pos;
      while ((pos = buffer.find('\n')) != std::string::npos) {
        std::string line = buffer.substr(0, pos);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        buffer.erase(0, pos + 1);
        if (handler) handler(line);
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    // EOF (or error): flush an unterminated last line.
    if (!buffer.empty() && handler) handler(buffer);
    buffer.clear();
    close(fd);
    fd = -1;
    return;
  }
}

bool Subprocess::pump(int timeout_ms, const LineHandler& out, const LineHandler& err) {
  if (out_fd_ < 0 && err_fd_ < 0) {
    if (reaped_) return false;
    if (!running()) return false;
    // Pipes closed but the child lives on (it closed its stdout): just wait.
    usleep(static_cast<useconds_t>(timeout_ms) * 1000);
    return running();
  }
  pollfd fds[2];
  int n = 0;
  if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
  if (err_fd_ >= 0) fds[n++] = {err_fd_, POLLIN, 0};
  int r = poll(fds, static_cast<nfds_t>(n), timeout_ms);
  if (r > 0) {
    if (out_fd_ >= 0) read_fd(out_fd_, out_buf_, out);
    if (err_fd_ >= 0) read_fd(err_fd_, err_buf_, err);
  }
  return out_fd_ >= 0 || err_fd_ >= 0 || running();
}

bool Subprocess::running() {
  if (reaped_) return false;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    status_ = st;
    return false;
  }
  return true;
}

void Subprocess::signal_group(int sig) {
  if (pid_ > 0 && !reaped_) {
    if (kill(-pid_, sig) != 0) kill(pid_, sig);
  }
}

void Subprocess::send_signal(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

int Subprocess::wait() {
  if (!reaped_) {
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    status_ = st;
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return 3;
}

CommandOutput run_command(const std::vector<std::string>& argv, double timeout_s, const std::string& stdin_text) {
  CommandOutput result;
  Subprocess p(argv, {}, stdin_text);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  auto add_out = [&](const std::string& l) { result.out += l + "\n"; };
  auto add_err = [&](const std::string& l) { result.err += l + "\n"; };
  while (p.pump(100, add_out, add_err)) {
    if (std::chrono::steady_clock::now() > deadline) {
      result.timed_out = true;
      p.signal_group(SIGKILL);
      break;
    }
  }
  result.exit_code = p.wait();
  return result;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

}  // namespace driftscan::launch
