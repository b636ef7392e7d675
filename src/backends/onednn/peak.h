// The machine's practical compute peak: the GFLOPS oneDNN's matmul reaches on a problem large
// enough to keep every core's vector units busy. `kiln bench` and bench/peak_gflops report a
// model's GFLOPS as a share of it.
#pragma once

#include "kiln/dtype.hpp"

namespace kiln::onednn {

// The median GFLOPS of a square float32 or bfloat16 matmul (512 x 512 x 512: the weight fits a
// core's L2 cache, all operands the L3) on `threads` OpenMP threads, one call at a time for about
// `seconds` after a warm-up. For int8 it is the integer matmul of quantized models (uint8 times int8
// into int32), counted the same way: two operations per multiply-add. Throws kiln::Error for other
// dtypes, threads < 1 or seconds <= 0, and kUnsupported for bfloat16 on a CPU where oneDNN computes
// no bfloat16 (cpu_features.h).
double measure_matmul_peak_gflops(int threads, DType dtype, double seconds);

}  // namespace kiln::onednn
