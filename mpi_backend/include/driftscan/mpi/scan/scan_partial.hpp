#pragma once
// A partial result of the distributed scan as it travels between threads and
// ranks: a value, nothing (a rank or thread without elements — the identity,
// which a generic operator need not have), or "failed" (the operator threw
// somewhere upstream). Failure is carried as a value instead of an exception
// so every rank still completes every message of the global phase: an
// exception on one rank must never leave its peers waiting in a receive.
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/scan/scan_element_codec.hpp"

namespace driftscan::mpi {

template <class T>
class ScanPartial {
 public:
  enum class State : std::uint8_t { empty = 0, value = 1, failed = 2 };

  ScanPartial() = default;
  // `value` covers the global elements first..last (inclusive).
  static ScanPartial of(T value, std::int64_t first, std::int64_t last) {
    ScanPartial p;
    p.value_.emplace(std::move(value));
    p.state_ = State::value;
    p.first_ = first;
    p.last_ = last;
    return p;
  }
  static ScanPartial failure(ErrorKind kind, const std::string& message) {
    ScanPartial p;
    p.state_ = State::failed;
    p.kind_ = kind;
    p.message_ = message;
    return p;
  }

  State state() const { return state_; }
  bool empty() const { return state_ == State::empty; }
  bool has_value() const { return state_ == State::value; }
  bool failed() const { return state_ == State::failed; }
  const T& value() const { return *value_; }
  std::int64_t first() const { return first_; }
  std::int64_t last() const { return last_; }
  const std::string& message() const { return message_; }
  ErrorKind error_kind() const { return kind_; }
  // The exception a failed partial stands for.
  Error error() const { return Error(kind_, message_); }

  template <class Codec = ScanElementCodec<T>>
  void encode(ByteBuffer& out) const {
    out.push_back(static_cast<unsigned char>(state_));
    if (has_value()) {
      put(first_, out);
      put(last_, out);
      Codec::encode(*value_, out);
    } else if (failed()) {
      out.push_back(static_cast<unsigned char>(kind_));
      out.insert(out.end(), message_.begin(), message_.end());
    }
  }
  template <class Codec = ScanElementCodec<T>>
  static ScanPartial decode(const unsigned char* data, std::size_t size) {
    if (size < 1) throw driftscan::failure("scan: received an empty partial-result message");
    switch (static_cast<State>(data[0])) {
      case State::empty: return {};
      case State::value:
        if (size < 1 + 2 * sizeof(std::int64_t)) break;
        return of(Codec::decode(data + 1 + 2 * sizeof(std::int64_t), size - 1 - 2 * sizeof(std::int64_t)),
                  get(data + 1), get(data + 1 + sizeof(std::int64_t)));
      case State::failed:
        if (size < 2) break;
        return failure(static_cast<ErrorKind>(data[1]), std::string(reinterpret_cast<const char*>(data + 2), size - 2));
    }
    throw driftscan::failure("scan: received a corrupt partial-result message");
  }

 private:
  static void put(std::int64_t v, ByteBuffer& out) {
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  }
  static std::int64_t get(const unsigned char* p) {
    std::int64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  State state_ = State::empty;
  ErrorKind kind_ = ErrorKind::failure;
  std::optional<T> value_;
  std::int64_t first_ = 0, last_ = -1;
  std::string message_;
};

// left ⊕ right with the identity and failure rules; `apply(left, right)`
// (both holding values) runs the real operator and may time it. An exception
// from the operator becomes a failed partial naming what went wrong; so does
// combining partials that are not adjacent (a bug, never the user's input).
template <class T, class Apply>
ScanPartial<T> combine_partials(const ScanPartial<T>& left, const ScanPartial<T>& right, Apply&& apply) {
  if (left.failed()) return left;
  if (right.failed()) return right;
  if (left.empty()) return right;
  if (right.empty()) return left;
  if (left.last() + 1 != right.first())
    return ScanPartial<T>::failure(ErrorKind::failure,
                                   "scan: internal error: combining elements " + std::to_string(left.first()) + ".." +
                                       std::to_string(left.last()) + " with " + std::to_string(right.first()) + ".." +
                                       std::to_string(right.last()));
  try {
    return ScanPartial<T>::of(apply(left, right), left.first(), right.last());
  } catch (const Error& e) {
    return ScanPartial<T>::failure(e.kind(), e.what());
  } catch (const std::exception& e) {
    return ScanPartial<T>::failure(ErrorKind::failure, e.what());
  }
}

}  // namespace driftscan::mpi
