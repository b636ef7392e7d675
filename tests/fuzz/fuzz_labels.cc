// libFuzzer target for labels files (kiln optimize --labels, accuracy::read_labels): the first
// byte picks the form (even: a .npy of classes or boxes, odd: text), the rest is the file. Any
// bytes must give Labels or a kiln::Error, never a crash or an allocation the file cannot justify
// (an image index of a boxes file is bounded).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

#include "kiln/accuracy.hpp"
#include "kiln/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::string folder = [] {
    char pattern[] = "/tmp/kiln_fuzz_labels_XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr) std::abort();
    return std::string(made);
  }();
  const std::string path = folder + "/labels" + ((data[0] & 1) ? ".txt" : ".npy");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  try {
    const kiln::accuracy::Labels labels = kiln::accuracy::read_labels(path);
    (void)labels.empty();
  } catch (const kiln::Error&) {
  }
  return 0;
}
