// The shared pieces of the oneDNN backend; see onednn_common.h.
#include "backends/onednn/onednn_common.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string_view>

#include "backends/onednn/cpu_features.h"
#include "backends/onednn/loop_layout.h"
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
  return plain_desc(shape, *type);
}

dnnl::memory::desc plain_desc(const Shape& shape, dnnl::memory::data_type type) {
  // oneDNN has no 0-d memory: a scalar is a 1-element vector.
  if (shape.ndim() == 0) return dnnl::memory::desc({1}, type, dnnl::memory::dims{1});
  const std::vector<int64_t> strides = contiguous_strides(shape);
  return dnnl::memory::desc(to_dims(shape), type, dnnl::memory::dims(strides.begin(), strides.end()));
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
  for (const graph::Value* v : node.inputs) {
    // A constant int64 (Reshape's shape) is read by the kernel maker, never by a primitive.
    if (v != nullptr && v->is_constant() && v->info->dtype == DType::kInt64) continue;
    if (v != nullptr && !to_dnnl(v->info->dtype)) return false;
  }
  for (const graph::Value* v : node.outputs)
    if (!to_dnnl(v->info->dtype)) return false;
  return true;
}

dnnl::memory wrap(const dnnl::memory::desc& desc, const Tensor& tensor) {
  // oneDNN takes a non-const handle even for inputs it only reads.
  return dnnl::memory(desc, cpu_engine(), const_cast<void*>(tensor.raw_data()));
}

namespace {

// A stream per thread: streams are cheap but not free, and one must not be shared by threads.
dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

}  // namespace

void create_for(double flops) {
  omp_set_num_threads(flops < kSerialFlops ? 1 : num_threads());
}

Reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  const double flops = streamed_flops(from);
  create_for(flops);
  return {from, to,
          Prepared<dnnl::reorder>(
              dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to, base_attr()), flops)};
}

dnnl::memory prepare_constant(const dnnl::memory& source, const dnnl::memory::desc& desc) {
  dnnl::memory prepared(desc, cpu_engine());
  dnnl::memory from = source;  // a handle: execute() takes non-const ones
  omp_set_num_threads(num_threads());
  dnnl::reorder(from, prepared).execute(thread_stream(), from, prepared);
  thread_stream().wait();
  return prepared;
}

PackedConstant pack_constant(const Tensor& given, const dnnl::memory::desc& stored,
                             const dnnl::memory::desc& packed) {
  PackedConstant result;
  result.bytes = Storage::allocate(std::max<size_t>(packed.get_size(), 1), cpu());
  result.memory = dnnl::memory(packed, cpu_engine(), result.bytes->data());
  dnnl::memory from = wrap(stored, given);
  omp_set_num_threads(num_threads());
  dnnl::reorder(from, result.memory).execute(thread_stream(), from, result.memory);
  thread_stream().wait();
  return result;
}

std::function<Tensor()> unpack_constant(const PackedConstant& packed, const Tensor& given,
                                        const dnnl::memory::desc& stored) {
  return [packed, stored, shape = given.shape(), dtype = given.dtype()] {
    Tensor rebuilt = Tensor::empty(shape, dtype);
    dnnl::memory from = packed.memory;
    dnnl::memory to = wrap(stored, rebuilt);
    omp_set_num_threads(num_threads());
    dnnl::reorder(from, to).execute(thread_stream(), from, to);
    thread_stream().wait();
    return rebuilt;
  };
}

void* temporary_bytes(size_t bytes, std::shared_ptr<Storage>& owner) {
  owner = Storage::allocate(std::max<size_t>(bytes, 1), cpu());
  return owner->data();
}

PrimitiveBindings::Binding& PrimitiveBindings::bind(const dnnl::primitive& primitive,
                                                    const dnnl::primitive_desc_base& pd,
                                                    std::span<const Arg> args) {
  for (Binding& b : bindings_) {
    if (b.primitive != primitive.get() || b.ids.size() != args.size()) continue;
    size_t i = 0;
    bool same_ids = true;
    for (const Arg& arg : args) same_ids = same_ids && b.ids[i++] == arg.id;
    if (!same_ids) continue;
    i = 0;
    for (const Arg& arg : args) {
      if (b.data[i] != arg.data) {
        b.memories[i].set_data_handle(const_cast<void*>(arg.data));
        b.data[i] = arg.data;
      }
      ++i;
    }
    return b;
  }
  Binding& b = bindings_.emplace_back();
  b.primitive = primitive.get();
  for (const Arg& arg : args) {
    b.ids.push_back(arg.id);
    b.data.push_back(arg.data);
    // oneDNN takes a non-const handle even for inputs it only reads.
    b.memories.emplace_back(arg.desc, cpu_engine(), const_cast<void*>(arg.data));
    b.args.push_back({arg.id, b.memories.back().get()});
  }
  const dnnl::memory::desc scratchpad = pd.scratchpad_desc();
  if (scratchpad.get_size() != 0) {
    b.scratchpad = Storage::allocate(scratchpad.get_size(), cpu());
    b.memories.emplace_back(scratchpad, cpu_engine(), b.scratchpad->data());
    b.args.push_back({DNNL_ARG_SCRATCHPAD, b.memories.back().get()});
  }
  return b;
}

void PrimitiveBindings::execute(const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
                                std::span<const Arg> args, bool serial) {
  // oneDNN runs on OpenMP, whose thread count is a per-calling-thread setting: each executor
  // thread gets Kiln's, so --threads limits oneDNN too and the two pools do not oversubscribe.
  omp_set_num_threads(serial ? 1 : num_threads());
  const Binding& b = bind(primitive, pd, args);
  dnnl::stream& stream = thread_stream();
  dnnl::error::wrap_c_api(
      dnnl_primitive_execute(b.primitive, stream.get(), static_cast<int>(b.args.size()), b.args.data()),
      "could not execute a primitive");
  stream.wait();
}

void execute(ops::KernelContext& ctx, const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
             std::span<const Arg> args, bool serial) {
  if (auto* bindings = dynamic_cast<PrimitiveBindings*>(ctx.state))
    return bindings->execute(primitive, pd, args, serial);
  PrimitiveBindings throwaway;
  throwaway.execute(primitive, pd, args, serial);
}

void reorder(ops::KernelContext& ctx, const Reorder& r, const void* from, void* to) {
  execute(ctx, r.prepared, {Arg{DNNL_ARG_FROM, r.from, from}, Arg{DNNL_ARG_TO, r.to, to}});
}

namespace {

const char* type_name(dnnl::memory::data_type type) {
  using dt = dnnl::memory::data_type;
  switch (type) {
    case dt::f32:
      return "f32";
    case dt::bf16:
      return "bf16";
    case dt::f16:
      return "f16";
    case dt::s8:
      return "s8";
    case dt::u8:
      return "u8";
    case dt::s32:
      return "s32";
    default:
      return "?";
  }
}

}  // namespace

std::string OnednnLayout::describe() const {
  // oneDNN's own notation: dims as letters, outermost first by stride, a blocked dim in capitals,
  // then the inner blocks (nChw16c is aBcd16b).
  const dnnl::memory::dims strides = desc_.get_strides();
  const dnnl::memory::dims inner = desc_.get_inner_blks();
  const dnnl::memory::dims inner_idxs = desc_.get_inner_idxs();
  std::vector<size_t> order(strides.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] > strides[b]; });
  std::string tag;
  for (size_t d : order) {
    const bool blocked =
        std::find(inner_idxs.begin(), inner_idxs.end(), static_cast<int64_t>(d)) != inner_idxs.end();
    tag += static_cast<char>((blocked ? 'A' : 'a') + static_cast<int>(d));
  }
  for (size_t i = 0; i < inner.size(); ++i)
    tag += std::to_string(inner[i]) + static_cast<char>('a' + static_cast<int>(inner_idxs[i]));
  return "oneDNN " + tag + " " + type_name(desc_.get_data_type());
}

bool OnednnLayout::same_as(const runtime::ValueLayout& other) const {
  const auto* o = dynamic_cast<const OnednnLayout*>(&other);
  return o != nullptr && o->desc_ == desc_;
}

runtime::KernelChoice OnednnLayout::to_row_major() const {
  auto conversion = std::make_shared<ToRowMajor>(desc_, plain_desc(logical_.shape, logical_.dtype));
  return {[conversion](ops::KernelContext& ctx) {
            conversion->run(ctx, ctx.input(0).raw_data(), ctx.output(0).raw_data());
          },
          {},
          [] { return std::make_unique<PrimitiveBindings>(); }};
}

std::optional<dnnl::memory::desc> stored_desc(const runtime::KernelQuery& query, int i) {
  const runtime::LayoutPtr& layout = query.input_layouts.at(static_cast<size_t>(i));
  if (layout == nullptr) return plain_desc(input_info(query.node, i).shape, input_info(query.node, i).dtype);
  const auto* own = dynamic_cast<const OnednnLayout*>(layout.get());
  if (own == nullptr) return std::nullopt;
  return own->desc();
}

dnnl::memory::data_type compute_type(const runtime::KernelQuery& query, DType dtype) {
  // On a CPU without the low-precision arithmetic, float32 stays float32: oneDNN would refuse the
  // primitive and leave the node to the slower reference kernels.
  if (dtype == DType::kFloat32 && query.precision == runtime::Precision::kBFloat16 && cpu_computes_bf16())
    return dnnl::memory::data_type::bf16;
  if (dtype == DType::kFloat32 && query.precision == runtime::Precision::kFloat16 && cpu_computes_f16())
    return dnnl::memory::data_type::f16;
  return *to_dnnl(dtype);
}

std::optional<dnnl::memory::desc> stored_plain_desc(const runtime::KernelQuery& query, int i) {
  const std::optional<dnnl::memory::desc> stored = stored_desc(query, i);
  if (!stored) return std::nullopt;
  if (*stored != plain_desc(input_info(query.node, i).shape, stored->get_data_type())) return std::nullopt;
  return stored;
}

namespace {

// Whether `value` reaches a normalization (Softmax, LogSoftmax, LayerNormalization) through
// elementwise arithmetic alone: attention scores on their way to Softmax (scaled, masked), the
// residual stream of a transformer (both operands of the residual sum, and the sum).
bool reaches_normalization(const graph::Value& value, int depth = 0) {
  constexpr int kMaxDepth = 4;
  for (const graph::Node* user : value.users) {
    const std::string& op = user->op;
    if (op == "Softmax" || op == "LogSoftmax" || op == "LayerNormalization") return true;
    // The addend of a fused op (a residual, a mask) is summed into its output like an Add's operand.
    const bool addend = op.rfind("Fused", 0) == 0 && user->inputs.size() > 2 && user->inputs[0] != &value &&
                        user->inputs[1] != &value;
    const bool arithmetic = addend || op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
    if (arithmetic && depth < kMaxDepth && reaches_normalization(*user->outputs[0], depth + 1)) return true;
  }
  return false;
}

}  // namespace

dnnl::memory::desc plain_output_store(const runtime::KernelQuery& query, int i, runtime::LayoutPtr& layout) {
  const ops::TensorInfo& info = output_info(query.node, i);
  // Float32 islands: bf16 logits would change softmax probabilities by percents (e^x amplifies
  // the 2^-8 rounding of x by x), and a residual stream rounded to bf16 at every layer drifts.
  // Measured on BERT-base (max error over the hidden states' range): 1.4e-2 in bf16 throughout,
  // 1.2e-2 with only the scores and the residual sums in float32, 3.8e-3 with the normalized
  // values and the sum's operands in float32 too (each MatMul then converts its input).
  const bool island = reaches_normalization(*query.node.outputs[static_cast<size_t>(i)]);
  const auto type = island ? *to_dnnl(info.dtype) : compute_type(query, info.dtype);
  return output_store(query, i, plain_desc(info.shape, type), layout);
}

dnnl::memory::desc output_store(const runtime::KernelQuery& query, int i, const dnnl::memory::desc& written,
                                runtime::LayoutPtr& layout) {
  const ops::TensorInfo& info = output_info(query.node, i);
  const dnnl::memory::desc row_major = plain_desc(info.shape, info.dtype);
  layout = nullptr;
  if (query.output_row_major.at(static_cast<size_t>(i)) || written == row_major) return row_major;
  layout = std::make_shared<OnednnLayout>(written, info);
  return written;
}

Port input_port(const dnnl::memory::desc& stored, const dnnl::memory::desc& used) {
  Port port{stored, used, std::nullopt};
  if (stored != used) port.reorder = make_reorder(stored, used);
  return port;
}

Port output_port(const dnnl::memory::desc& stored, const dnnl::memory::desc& used) {
  Port port{stored, used, std::nullopt};
  if (stored != used) port.reorder = make_reorder(used, stored);
  return port;
}

const void* read_port(ops::KernelContext& ctx, const Port& port, const Tensor& tensor,
                      std::shared_ptr<Storage>& temp) {
  if (!port.reorder) return tensor.raw_data();
  void* used = temporary_bytes(port.used.get_size(), temp);
  reorder(ctx, *port.reorder, tensor.raw_data(), used);
  return used;
}

void* write_port(const Port& port, const Tensor& tensor, std::shared_ptr<Storage>& temp) {
  return port.reorder ? temporary_bytes(port.used.get_size(), temp) : const_cast<void*>(tensor.raw_data());
}

void finish_write(ops::KernelContext& ctx, const Port& port, const void* written, const Tensor& tensor) {
  if (port.reorder) reorder(ctx, *port.reorder, written, const_cast<void*>(tensor.raw_data()));
}

KernelMakers& KernelMakers::global() {
  static KernelMakers makers;
  return makers;
}

int KernelMakers::add(const std::string& op, KernelMaker maker) {
  makers_.emplace(op, std::move(maker));
  return 0;
}

int KernelMakers::add_row_major(const std::string& op, RowMajorKernelMaker maker) {
  return add(op, [maker = std::move(maker)](const runtime::KernelQuery& query) -> runtime::KernelChoice {
    for (const runtime::LayoutPtr& layout : query.input_layouts)
      if (layout != nullptr) return {};
    return {maker(query.node, query.attrs), {}};
  });
}

const KernelMaker* KernelMakers::find(const std::string& op) const {
  auto it = makers_.find(op);
  return it == makers_.end() ? nullptr : &it->second;
}

}  // namespace kiln::onednn
