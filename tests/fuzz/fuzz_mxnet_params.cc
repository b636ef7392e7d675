// libFuzzer target for the MXNet .params reader: any bytes must give arrays or a kiln::Error,
// never a crash, a sanitizer report or an allocation the input cannot justify.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "kiln/error.hpp"
#include "kiln/mxnet_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const kiln::mxnet::NamedTensors params = kiln::mxnet::read_params(in, "fuzz input");
    for (const kiln::Tensor& t : params.tensors) (void)t.nbytes();
  } catch (const kiln::Error&) {
  }
  return 0;
}
