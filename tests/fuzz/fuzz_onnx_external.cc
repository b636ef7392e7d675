// libFuzzer target for ONNX models whose tensors live in an external data file of their folder:
// the model bytes are fuzzed against a fixed 64 KiB `weights.bin` beside them, so that locations,
// offsets and lengths that leave the folder, run past the file or overflow are all tried. Any
// bytes must give a Graph or a kiln::Error, never a crash, a read outside the file or an
// allocation the file cannot justify.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "frontends/onnx/import.h"
#include "kiln/error.hpp"

namespace {

// The model folder, made once: weights.bin holds bytes i % 251, so every float is finite.
const std::string& model_folder() {
  static const std::string folder = [] {
    char pattern[] = "/tmp/kiln_fuzz_external_XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr) std::abort();
    std::ofstream weights(std::filesystem::path(made) / "weights.bin", std::ios::binary);
    for (int i = 0; i < 65536; ++i) weights.put(static_cast<char>(i % 251));
    return std::string(made);
  }();
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto graph = kiln::onnx::import_model_bytes(
        std::string_view(reinterpret_cast<const char*>(data), size), model_folder(), "fuzz");
    (void)graph.num_nodes();
  } catch (const kiln::Error&) {
  }
  return 0;
}
