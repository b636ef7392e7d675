// The machine's practical peak: the GFLOPS of a large oneDNN matmul in float32, bfloat16 and int8, the
// yardstick `kiln bench` measures a model's GFLOPS against (see src/backends/onednn/peak.h).
//   peak_gflops [--threads N] [--seconds S]   (defaults: Kiln's thread count, 1 s per dtype)
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <string>

#include "backends/onednn/peak.h"
#include "kiln/error.hpp"
#include "kiln/threading.hpp"

int main(int argc, char** argv) {
  int threads = kiln::num_threads();
  double seconds = 1.0;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 < argc && flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else if (i + 1 < argc && flag == "--seconds") {
      seconds = std::atof(argv[i + 1]);
    } else {
      std::cerr << "usage: " << argv[0] << " [--threads N] [--seconds S]\n";
      return 2;
    }
  }
  try {
    std::cout << std::fixed << std::setprecision(1) << "matmul peak, " << threads
              << " thread(s), median over " << seconds << " s:\n";
    for (const kiln::DType dtype : {kiln::DType::kFloat32, kiln::DType::kBFloat16, kiln::DType::kInt8})
      std::cout << "  " << kiln::dtype_name(dtype) << ": "
                << kiln::onednn::measure_matmul_peak_gflops(threads, dtype, seconds) << " GFLOPS\n";
  } catch (const kiln::Error& e) {
    std::cerr << "peak_gflops: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
