// What oneDNN computes exactly and natively on the CPU it runs on. Kernel makers ask before taking
// a node whose result would otherwise depend on the CPU; tests ask to know what to expect.
#pragma once

#include "kiln/dtype.hpp"
#include "kiln/tensor.hpp"

namespace kiln::onednn {

// True when oneDNN's effective ISA sums u8 x s8 products straight into int32 (VNNI: vpdpbusd on
// AVX512-VNNI or AVX-VNNI; AMX's tdpbusd).
bool cpu_has_int8_dot_product();

// True when oneDNN's 8-bit convolutions and matmuls compute exactly what the reference kernels do
// for a source of `source_type` and these constant s8 `weights`. Without VNNI oneDNN multiplies
// with vpmaddubsw, which adds each pair of u8 x s8 products in int16 with saturation, and it halves
// the weights of an s8 source to keep those sums in range; so there only a u8 source whose
// weights lie in [-64, 64] is exact (2 * 255 * 64 < 32767). This is why ONNX Runtime's quantizer
// offers 7-bit weights ("reduce_range") for CPUs without VNNI.
bool int8_products_exact(DType source_type, const Tensor& weights);

// True when oneDNN computes bfloat16 on this CPU (AVX-512, or AVX2 with AVX-NE-CONVERT); elsewhere
// its primitives refuse bf16 and such nodes stay with the reference kernels.
bool cpu_computes_bf16();

// True when oneDNN computes float16 on this CPU (AVX512-FP16, as in Sapphire Rapids and later).
bool cpu_computes_f16();

}  // namespace kiln::onednn
