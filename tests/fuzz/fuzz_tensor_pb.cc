// libFuzzer target for ONNX TensorProto files (the backend tests' input_0.pb, output_0.pb, and
// every initializer): any bytes must give a Tensor or a kiln::Error, never a crash, a sanitizer
// report or an allocation the bytes present cannot justify.
#include <cstddef>
#include <cstdint>

#include "frontends/onnx/tensor_proto.h"
#include "kiln/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ::onnx::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  try {
    const kiln::Tensor t = kiln::onnx::tensor_from_proto(proto, {"", "fuzz tensor"});
    (void)t.nbytes();
  } catch (const kiln::Error&) {
  }
  return 0;
}
