// kiln::Error: the one exception type Kiln throws. Its message names the place (op, node,
// input) and the expected and actual values; its code lets callers and the C ABI classify it.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace kiln {

enum class ErrorCode {
  kInvalidArgument,  // a bad attribute, argument or configuration
  kShapeMismatch,    // shapes that do not fit the op
  kTypeMismatch,     // dtypes that do not fit the op
  kOutOfRange,       // an axis, index or size outside its range
  kUnsupported,      // valid input that Kiln does not implement (yet)
  kNotFound,         // an unknown op, file or name
  kRuntime,          // a failure while running (e.g. an async op threw)
  kIo,               // reading or writing a file failed
  kInternal,         // a broken invariant inside Kiln: a bug
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

namespace detail {
template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

// Throws kiln::Error(code, the arguments streamed together).
template <class... Args>
[[noreturn]] void raise(ErrorCode code, Args&&... args) {
  throw Error(code, detail::concat(std::forward<Args>(args)...));
}

}  // namespace kiln

// KILN_CHECK(cond, code, message parts...): throws kiln::Error when cond is false.
#define KILN_CHECK(cond, code, ...)                  \
  do {                                               \
    if (!(cond)) ::kiln::raise((code), __VA_ARGS__); \
  } while (false)
