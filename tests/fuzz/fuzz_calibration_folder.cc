// libFuzzer target for calibration folders (kiln quantize --calib, quantization::npy_folder_batches):
// the bytes describe a folder, entry by entry: a byte whose low bits pick where the file goes (the
// folder itself or one of four batch folders) and its name (one of four), two bytes of length, and
// the file's bytes. Every batch is then read. Any folder must give batches or a kiln::Error naming
// an entry, never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <unistd.h>

#include "kiln/error.hpp"
#include "kiln/quantize.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path root = [] {
    char pattern[] = "/tmp/kiln_fuzz_calibration_XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr) std::abort();
    return fs::path(made);
  }();
  const fs::path folder = root / "calib";
  fs::remove_all(folder);
  fs::create_directories(folder);
  static const char* const kNames[] = {"0.npy", "1.npy", "data.npy", "notes.txt"};
  for (size_t at = 0; at + 3 <= size;) {
    const uint8_t place = data[at];
    const size_t length = std::min<size_t>(data[at + 1] | (data[at + 2] << 8), size - at - 3);
    const fs::path dir = (place & 7) < 4 ? folder : folder / ("b" + std::to_string(place & 3));
    fs::create_directories(dir);
    std::ofstream(dir / kNames[(place >> 3) & 3], std::ios::binary)
        .write(reinterpret_cast<const char*>(data + at + 3), static_cast<std::streamsize>(length));
    at += 3 + length;
  }
  try {
    const kiln::quantization::CalibrationBatches batches =
        kiln::quantization::npy_folder_batches(folder.string());
    std::map<std::string, kiln::Tensor> batch;
    while (batches(batch)) {
    }
  } catch (const kiln::Error&) {
  }
  return 0;
}
