// libFuzzer target for the ONNX importer: any bytes must give a Graph or a kiln::Error, never a
// crash, a sanitizer report or an allocation the input cannot justify (declared tensor sizes are
// checked against the bytes present before anything is allocated).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontends/onnx/import.h"
#include "kiln/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto graph =
        kiln::onnx::import_model_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "", "fuzz");
    (void)graph.num_nodes();
  } catch (const kiln::Error&) {
  }
  return 0;
}
