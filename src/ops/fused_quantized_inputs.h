// The input order of the fused int8 ops, which both their schemas (src/ops/fused_q*.cc) and their
// oneDNN kernels (src/backends/onednn) index.
#pragma once

namespace kiln::ops {

namespace qlinear_conv_input {
enum Input {
  kX,
  kXScale,
  kXZero,
  kW,
  kWScale,
  kWZero,
  kYScale,
  kYZero,
  kBias,
  kZ,
  kZScale,
  kZZero,
  kMidScale,
  kMidZero
};
}  // namespace qlinear_conv_input

namespace qlinear_matmul_input {
enum Input { kA, kAScale, kAZero, kB, kBScale, kBZero, kYScale, kYZero, kBias };
}  // namespace qlinear_matmul_input

namespace dynamic_qlinear_matmul_input {
enum Input { kA, kB, kBScale, kBZero, kBias };
}  // namespace dynamic_qlinear_matmul_input

}  // namespace kiln::ops
