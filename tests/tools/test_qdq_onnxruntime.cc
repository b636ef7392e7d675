// The QDQ round trip with ONNX Runtime (tests/tools/qdq_onnxruntime.py, .venv): a small CNN
// quantized by onnxruntime.quantization.quantize_static runs in Kiln with ORT's outputs, and the
// same CNN quantized by Kiln and exported as QDQ ONNX runs in ORT with Kiln's outputs.
#include <cpuid.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "graph/graph.h"
#include "kiln/npy.hpp"
#include "kiln/predictor.hpp"
#include "kiln/quantize.hpp"
#include "test_support.h"

namespace kiln::quantization {
namespace {

const std::string kPython = std::string(KILN_SOURCE_DIR) + "/.venv/bin/python";
const std::string kScript = std::string(KILN_SOURCE_DIR) + "/tests/tools/qdq_onnxruntime.py";

void run_script(const std::string& args) {
  int status = 0;
  const std::string out = testing::run_command(kPython + " " + kScript + " " + args + " 2>&1", status);
  ASSERT_EQ(status, 0) << out;
}

// Without VNNI (AVX2) the int8 kernels of ONNX Runtime saturate sums of full-range weights; both
// sides then quantize weights to 7 bits (reduce_range), as ONNX Runtime recommends for such CPUs.
// CPUID leaf 7: AVX512_VNNI is bit 11 of ECX in sub-leaf 0, AVX-VNNI bit 4 of EAX in sub-leaf 1
// (read directly, as not every compiler's __builtin_cpu_supports knows "avxvnni").
bool cpu_has_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool avx512_vnni = (ecx >> 11) & 1U;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return avx512_vnni;
  return avx512_vnni || ((eax >> 4) & 1U);
}

bool have_onnxruntime() {
  int status = 0;
  testing::run_command(kPython + " -c 'import onnxruntime' 2>/dev/null", status);
  return status == 0;
}

float max_abs(const Tensor& t) {
  const float* p = t.data<float>();
  float m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::abs(p[i]));
  return m;
}

float max_abs_difference(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const float *pa = a.data<float>(), *pb = b.data<float>();
  float m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(pa[i] - pb[i]));
  return m;
}

// Runs a model in Kiln; `int8_ops` gets how many of its nodes became int8 kernels' ops.
Tensor run_kiln(const std::string& model, const Tensor& x, size_t* int8_ops = nullptr) {
  const Predictor predictor = Predictor::load(model, {.opt_level = "all"});
  if (int8_ops) {
    *int8_ops = 0;
    for (const graph::Node* n : predictor.graph().nodes())
      *int8_ops +=
          n->op == "FusedQLinearConv" || n->op == "FusedQLinearMatMul" || n->op == "FusedQLinearAveragePool";
  }
  return predictor.predict({x})[0];
}

class QdqOnnxRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(have_onnxruntime()) << "no onnxruntime in .venv: run scripts/setup.sh";
    run_script("make " + dir_.path().string() + (cpu_has_vnni() ? "" : " --reduce-range"));
    x_ = npy::load(dir_ / "input.npy");
    fp32_ = run_kiln(dir_ / "float.onnx", x_);
  }
  testing::TempDir dir_;
  Tensor x_, fp32_;
};

// The integer kernels of ONNX Runtime and Kiln's (or the float reference of a QDQ graph) may round
// an intermediate value to the neighbouring 8-bit step, which carries through the layers: 1% of
// the output's range is about one step of the output's own quantization. A wrong scale, zero
// point or axis is off by far more; quantization itself moves this model's outputs by about 1.5%.
constexpr float kAgreement = 0.01f;

TEST_F(QdqOnnxRuntime, OrtQuantizedModelRunsInKiln) {
  const Tensor ort = npy::load(dir_ / "ort_qdq_output.npy");
  size_t int8_ops = 0;
  const Tensor kiln = run_kiln(dir_ / "ort_qdq.onnx", x_, &int8_ops);
  // The three Convs (the residual Add and the Relus folded in), the GlobalAveragePool (between
  // the DequantizeLinear of the last Relu and the QuantizeLinear of the Gemm's input) and the Gemm
  // run as int8 ops.
  EXPECT_EQ(int8_ops, 5u);
  std::cout << "ORT's QDQ model: |Kiln - ORT| " << max_abs_difference(kiln, ort) << ", |Kiln - fp32| "
            << max_abs_difference(kiln, fp32_) << ", max |fp32| " << max_abs(fp32_) << "\n";
  EXPECT_LE(max_abs_difference(kiln, ort), kAgreement * max_abs(ort));
  // And quantization changed the outputs by little: the model is the float one.
  EXPECT_LE(max_abs_difference(kiln, fp32_), 0.05f * max_abs(fp32_));
}

TEST_F(QdqOnnxRuntime, KilnQuantizedModelRunsInOrt) {
  for (const char* mode : {"naive", "entropy", "percentile"}) {
    quantize_model_file(dir_ / "float.onnx", dir_ / "calib", dir_ / "kiln_qdq.onnx",
                        {.calib_mode = mode, .reduce_range = !cpu_has_vnni()});
    size_t int8_ops = 0;
    const Tensor kiln = run_kiln(dir_ / "kiln_qdq.onnx", x_, &int8_ops);
    EXPECT_EQ(int8_ops, 5u) << mode;
    run_script("run " + (dir_ / "kiln_qdq.onnx") + " " + (dir_ / "input.npy") + " " +
               (dir_ / "ort_on_kiln.npy"));
    const Tensor ort = npy::load(dir_ / "ort_on_kiln.npy");
    std::cout << "Kiln's QDQ model (" << mode << "): |Kiln - ORT| " << max_abs_difference(kiln, ort)
              << ", |Kiln - fp32| " << max_abs_difference(kiln, fp32_) << ", max |fp32| " << max_abs(fp32_)
              << "\n";
    EXPECT_LE(max_abs_difference(kiln, ort), kAgreement * max_abs(ort)) << mode;
    EXPECT_LE(max_abs_difference(kiln, fp32_), 0.05f * max_abs(fp32_)) << mode;
  }
}

}  // namespace
}  // namespace kiln::quantization
