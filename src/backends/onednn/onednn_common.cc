// The shared pieces of the oneDNN backend; see onednn_common.h.
#include "backends/onednn/onednn_common.h"

#include <omp.h>

#include <algorithm>
#include <string_view>

#include "kiln/error.hpp"
#include "kiln/storage.hpp"
#include "kiln/threading.hpp"
#include "ops/fused_activation.h"

namespace kiln::onednn {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

std::optional<dnnl::memory::data_type> to_dnnl(DType dtype) {
  using dt = dnnl::memory::data_type;
  switch (dtype) {
    case DType::kFloat32:
      return dt::f32;
    case DType::kBFloat16:
      return dt::bf16;
    case DType::kFloat16:
      return dt::f16;
    case DType::kInt8:
      return dt::s8;
    case DType::kUInt8:
      return dt::u8;
    case DType::kInt32:
      return dt::s32;
    default:
      return std::nullopt;
  }
}

bool is_float(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kBFloat16 || dtype == DType::kFloat16;
}

bool is_generic_impl(const dnnl::primitive_desc_base& pd) {
  return std::string_view(pd.impl_info_str()).find("ref:") != std::string_view::npos;
}

dnnl::memory::dims to_dims(const Shape& shape) {
  return dnnl::memory::dims(shape.begin(), shape.end());
}

dnnl::memory::desc plain_desc(const Shape& shape, DType dtype) {
  const auto type = to_dnnl(dtype);
  KILN_CHECK(type.has_value(), ErrorCode::kInternal, "oneDNN has no type for ", dtype_name(dtype));
  // oneDNN has no 0-d memory: a scalar is a 1-element vector.
  if (shape.ndim() == 0) return dnnl::memory::desc({1}, *type, dnnl::memory::dims{1});
  const std::vector<int64_t> strides = contiguous_strides(shape);
  return dnnl::memory::desc(to_dims(shape), *type, dnnl::memory::dims(strides.begin(), strides.end()));
}

dnnl::primitive_attr base_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void append_activation(dnnl::post_ops& post, const Attrs& attrs) {
  if (!attrs.has("activation")) return;
  const ops::FusedActivation act =
      ops::parse_fused_activation(attrs.get_string("activation"), attrs.get_floats("activation_params"));
  using alg = dnnl::algorithm;
  using ops::Activation;
  const auto add = [&](alg algorithm, double alpha = 0, double beta = 0) {
    post.append_eltwise(algorithm, static_cast<float>(alpha), static_cast<float>(beta));
  };
  switch (act.kind) {
    case Activation::kNone:
      return;
    case Activation::kRelu:
      return add(alg::eltwise_relu);
    case Activation::kLeakyRelu:
      return add(alg::eltwise_relu, act.alpha);
    case Activation::kElu:
      return add(alg::eltwise_elu, act.alpha);
    case Activation::kSigmoid:
      return add(alg::eltwise_logistic);
    case Activation::kHardSigmoid:
      return add(alg::eltwise_hardsigmoid, act.alpha, act.beta);
    case Activation::kTanh:
      return add(alg::eltwise_tanh);
    case Activation::kClip:
      return add(alg::eltwise_clip, act.alpha, act.beta);
    case Activation::kHardSwish:
      return add(alg::eltwise_hardswish, 1.0 / 6, 0.5);
    case Activation::kSiLU:
      return add(alg::eltwise_swish, 1.0);
    case Activation::kGelu:
      return add(alg::eltwise_gelu_erf);
    case Activation::kGeluTanh:
      return add(alg::eltwise_gelu_tanh);
  }
}

const ops::TensorInfo& input_info(const graph::Node& node, int i) {
  return *node.inputs.at(static_cast<size_t>(i))->info;
}

const ops::TensorInfo& output_info(const graph::Node& node, int i) {
  return *node.outputs.at(static_cast<size_t>(i))->info;
}

bool has_input(const graph::Node& node, int i) {
  return i < static_cast<int>(node.inputs.size()) && node.inputs[static_cast<size_t>(i)] != nullptr;
}

const Tensor* constant_input(const graph::Node& node, int i) {
  if (!has_input(node, i)) return nullptr;
  const graph::Value* v = node.inputs[static_cast<size_t>(i)];
  return v->is_constant() ? &v->constant : nullptr;
}

bool all_dtypes_supported(const graph::Node& node) {
  for (const graph::Value* v : node.inputs)
    if (v != nullptr && !to_dnnl(v->info->dtype)) return false;
  for (const graph::Value* v : node.outputs)
    if (!to_dnnl(v->info->dtype)) return false;
  return true;
}

dnnl::memory wrap(const dnnl::memory::desc& desc, const Tensor& tensor) {
  // oneDNN takes a non-const handle even for inputs it only reads.
  return dnnl::memory(desc, cpu_engine(), const_cast<void*>(tensor.raw_data()));
}

dnnl::memory prepare_constant(const dnnl::memory& source, const dnnl::memory::desc& desc) {
  dnnl::memory prepared(desc, cpu_engine());
  dnnl::memory from = source;  // a handle: execute() takes non-const ones
  reorder(from, prepared);
  return prepared;
}

namespace {

// A stream per thread: streams are cheap but not free, and one must not be shared by threads.
dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

}  // namespace

dnnl::memory temporary_memory(const dnnl::memory::desc& desc, std::shared_ptr<Storage>& owner) {
  owner = Storage::allocate(std::max<size_t>(desc.get_size(), 1), cpu());
  return dnnl::memory(desc, cpu_engine(), owner->data());
}

void reorder(dnnl::memory& from, dnnl::memory& to) {
  omp_set_num_threads(num_threads());
  dnnl::reorder(from, to).execute(thread_stream(), from, to);
  thread_stream().wait();
}

void execute(const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
             std::unordered_map<int, dnnl::memory>& args) {
  // oneDNN runs on OpenMP, whose thread count is a per-calling-thread setting: each executor
  // thread gets Kiln's, so --threads limits oneDNN too and the two pools do not oversubscribe.
  omp_set_num_threads(num_threads());
  const dnnl::memory::desc scratchpad_desc = pd.scratchpad_desc();
  std::shared_ptr<Storage> scratchpad;
  if (scratchpad_desc.get_size() != 0)
    args[DNNL_ARG_SCRATCHPAD] = temporary_memory(scratchpad_desc, scratchpad);
  primitive.execute(thread_stream(), args);
  thread_stream().wait();
}

KernelMakers& KernelMakers::global() {
  static KernelMakers makers;
  return makers;
}

int KernelMakers::add(const std::string& op, KernelMaker maker) {
  makers_.emplace(op, std::move(maker));
  return 0;
}

const KernelMaker* KernelMakers::find(const std::string& op) const {
  auto it = makers_.find(op);
  return it == makers_.end() ? nullptr : &it->second;
}

}  // namespace kiln::onednn
