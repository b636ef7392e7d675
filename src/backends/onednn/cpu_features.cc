// CPU features as oneDNN sees them (its effective ISA honours ONEDNN_MAX_CPU_ISA).
#include "backends/onednn/cpu_features.h"

#include <algorithm>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace kiln::onednn {

namespace {

using isa = dnnl::cpu_isa;

bool effective_isa_is_one_of(std::initializer_list<isa> isas) {
  const isa effective = dnnl::get_effective_cpu_isa();
  return std::find(isas.begin(), isas.end(), effective) != isas.end();
}

}  // namespace

bool cpu_has_int8_dot_product() {
  return effective_isa_is_one_of({isa::avx2_vnni, isa::avx2_vnni_2, isa::avx512_core_vnni,
                                  isa::avx512_core_bf16, isa::avx512_core_fp16, isa::avx512_core_amx,
                                  isa::avx512_core_amx_fp16});
}

bool int8_products_exact(DType source_type, const Tensor& weights) {
  if (cpu_has_int8_dot_product()) return true;
  if (source_type != DType::kUInt8) return false;
  const std::vector<int32_t> w = weights.cast(DType::kInt32).contiguous().to_vector<int32_t>();
  return std::all_of(w.begin(), w.end(), [](int32_t v) { return v >= -64 && v <= 64; });
}

bool cpu_computes_bf16() {
  return effective_isa_is_one_of({isa::avx2_vnni_2, isa::avx512_core, isa::avx512_core_vnni,
                                  isa::avx512_core_bf16, isa::avx512_core_fp16, isa::avx512_core_amx,
                                  isa::avx512_core_amx_fp16});
}

bool cpu_computes_f16() {
  return effective_isa_is_one_of({isa::avx512_core_fp16, isa::avx512_core_amx_fp16});
}

}  // namespace kiln::onednn
