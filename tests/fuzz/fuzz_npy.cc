// libFuzzer target for the .npy reader: any bytes must give a tensor or a kiln::Error, never a
// crash, a sanitizer report or an allocation the input cannot justify.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "kiln/error.hpp"
#include "kiln/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const kiln::Tensor t = kiln::npy::read(in, "fuzz input");
    (void)t.nbytes();
  } catch (const kiln::Error&) {
  }
  return 0;
}
