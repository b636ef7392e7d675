// Classification losses over (N, C, d1, ..., dk) scores with (N, d1, ..., dk) class labels:
// SoftmaxCrossEntropyLoss (log-softmax over C, then the negative log-likelihood) and
// NegativeLogLikelihoodLoss (the scores already are log-probabilities). Both take optional
// per-class weights and an ignore_index whose samples contribute neither loss nor weight, and
// reduce with none, sum or mean (mean = sum(loss) / sum(weights of the counted samples)).
//
// Loss and weight sums are accumulated in double over fixed blocks of samples and combined in
// block order, so a reduced loss does not depend on the number of threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/thread_pool.h"
#include "gradient.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

// Elements of work per task: large enough that scheduling is noise next to the work.
constexpr int64_t kLossGrain = 1 << 15;
// Samples handled together along the flattened d1...dk axis: at each class the block's scores
// are contiguous, so every pass over the classes reads whole cache lines.
constexpr int64_t kSampleBlock = 256;

enum class Reduction { kNone, kSum, kMean };

void validate_reduction(const AttrValue& v, const std::string& what) {
  const auto& s = std::get<std::string>(v.variant());
  KILN_CHECK(s == "none" || s == "sum" || s == "mean", ErrorCode::kInvalidArgument, what,
             ": expected one of {none, sum, mean}, got '", s, "'");
}

Reduction reduction_of(const Attrs& attrs) {
  const auto& s = attrs.get_string("reduction");
  if (s == "none") return Reduction::kNone;
  return s == "sum" ? Reduction::kSum : Reduction::kMean;
}

bool dims_conflict(int64_t a, int64_t b) {
  return a != Shape::kUnknown && b != Shape::kUnknown && a != b;
}

// Inputs: 0 scores (N, C, d1..dk), 1 labels (N, d1..dk), 2 optional weights (C). Output 0 is the
// loss: labels' shape for reduction none, a scalar otherwise. `max_outputs` bounds how many
// outputs a caller may request; output 1, when requested, is the scores' shape (log_prob).
std::vector<TensorInfo> infer_loss(InferContext& ctx, int max_outputs) {
  const int outputs = ctx.num_outputs_requested() < 0 ? 1 : ctx.num_outputs_requested();
  KILN_CHECK(outputs >= 1 && outputs <= max_outputs, ErrorCode::kInvalidArgument, "expected ",
             max_outputs == 1 ? "1 output" : "1 to " + std::to_string(max_outputs) + " outputs", ", got ",
             outputs);
  require_dtype(ctx, 0, kFloatDTypes);
  const Shape& scores = ctx.shape(0);
  KILN_CHECK(scores.ndim() >= 2, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected rank >= 2 (N, C, d1, ..., dk), got shape ", scores);
  require_dtype(ctx, 1, kIndexDTypes);
  const Shape& labels = ctx.shape(1);
  KILN_CHECK(labels.ndim() == scores.ndim() - 1, ErrorCode::kShapeMismatch, ctx.input_label(1), ": expected ",
             scores.ndim() - 1, "-D (N, d1, ..., dk) for scores of shape ", scores, ", got shape ", labels);
  for (int i = 0; i < labels.ndim(); ++i) {
    const int s = i == 0 ? 0 : i + 1;
    KILN_CHECK(!dims_conflict(labels[i], scores[s]), ErrorCode::kShapeMismatch, ctx.input_label(1),
               ": expected shape (N, d1, ..., dk) matching scores of shape ", scores,
               " without axis 1, got shape ", labels);
  }
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 0, 2);
    const Shape& weights = ctx.shape(2);
    KILN_CHECK(weights.ndim() == 1 && !dims_conflict(weights[0], scores[1]), ErrorCode::kShapeMismatch,
               ctx.input_label(2), ": expected shape ", Shape{scores[1]},
               " (one weight per class), got shape ", weights);
  }
  const DType dtype = ctx.dtype(0);
  std::vector<TensorInfo> out{{dtype, reduction_of(ctx.attrs()) == Reduction::kNone ? labels : Shape{}}};
  if (outputs == 2) out.push_back(TensorInfo{dtype, scores});
  return out;
}

// The loss of one sample, -log_prob[label] * weight[label], and the weight it counts with.
struct SampleLoss {
  double loss;
  double weight;
};

// The inputs of one loss computation, and the checks and lookups shared by both ops.
template <class T, class Index>
struct LossProblem {
  const T* scores;
  const Index* labels;
  const T* weights;  // null: every class weighs 1
  std::optional<int64_t> ignore_index;
  int64_t classes, samples_per_item;  // C, and d1 * ... * dk
  const char* labels_label;           // "input 1 (labels)": names the labels in errors

  // Checks the label of one sample and returns its class, or -1 when the sample is ignored.
  int64_t class_of(int64_t label) const {
    if (ignore_index && label == *ignore_index) return -1;
    KILN_CHECK(label >= 0 && label < classes, ErrorCode::kOutOfRange, labels_label, ": label ", label,
               " is out of range [0, ", classes, ")",
               ignore_index ? " and is not ignore_index " + std::to_string(*ignore_index) : "");
    return label;
  }

  double weight_of(int64_t c) const {
    return weights ? static_cast<double>(static_cast<compute_t<T>>(weights[c])) : 1.0;
  }
};

// Computes the loss of samples [j0, j0 + count) of batch item n for NegativeLogLikelihoodLoss
// (the scores are log-probabilities) and passes each to `emit(j, SampleLoss)`.
template <class T, class Index, class Emit>
void nll_block(const LossProblem<T, Index>& p, int64_t n, int64_t j0, int64_t count, Emit&& emit) {
  const int64_t d = p.samples_per_item;
  const T* x = p.scores + n * p.classes * d;
  const Index* label = p.labels + n * d;
  for (int64_t j = j0; j < j0 + count; ++j) {
    const int64_t c = p.class_of(static_cast<int64_t>(label[j]));
    if (c < 0) {
      emit(j, SampleLoss{0.0, 0.0});
      continue;
    }
    const double w = p.weight_of(c);
    emit(j, SampleLoss{-static_cast<double>(static_cast<compute_t<T>>(x[c * d + j])) * w, w});
  }
}

// The same for SoftmaxCrossEntropyLoss: log_softmax over the classes first, written to
// `log_prob` (same layout as the scores) when it is not null.
template <class T, class Index, class Emit>
void sce_block(const LossProblem<T, Index>& p, T* log_prob, int64_t n, int64_t j0, int64_t count,
               Emit&& emit) {
  using C = compute_t<T>;
  const int64_t d = p.samples_per_item, classes = p.classes;
  const T* x = p.scores + n * classes * d + j0;
  C max[kSampleBlock];
  double sum[kSampleBlock];
  C log_sum[kSampleBlock];
  std::fill(max, max + count, -std::numeric_limits<C>::infinity());
  std::fill(sum, sum + count, 0.0);
  for (int64_t c = 0; c < classes; ++c)
    for (int64_t j = 0; j < count; ++j) max[j] = std::max(max[j], static_cast<C>(x[c * d + j]));
  for (int64_t c = 0; c < classes; ++c)
    for (int64_t j = 0; j < count; ++j)
      sum[j] += static_cast<double>(std::exp(static_cast<C>(x[c * d + j]) - max[j]));
  for (int64_t j = 0; j < count; ++j) log_sum[j] = static_cast<C>(std::log(sum[j]));
  // (x - max) first: it is exact for nearby values, where max + log(sum) would round.
  auto log_prob_at = [&](int64_t c, int64_t j) {
    return (static_cast<C>(x[c * d + j]) - max[j]) - log_sum[j];
  };
  if (log_prob) {
    T* y = log_prob + n * classes * d + j0;
    for (int64_t c = 0; c < classes; ++c)
      for (int64_t j = 0; j < count; ++j) y[c * d + j] = convert_value<T>(log_prob_at(c, j));
  }
  const Index* label = p.labels + n * d + j0;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t c = p.class_of(static_cast<int64_t>(label[j]));
    if (c < 0) {
      emit(j0 + j, SampleLoss{0.0, 0.0});
      continue;
    }
    const double w = p.weight_of(c);
    emit(j0 + j, SampleLoss{-static_cast<double>(log_prob_at(c, j)) * w, w});
  }
}

template <bool kSoftmax>
void loss_kernel(KernelContext& ctx) {
  const Tensor& scores = ctx.input(0);
  const Tensor& labels = ctx.input(1);
  const Shape& s = scores.shape();
  const int64_t batch = s[0], classes = s[1];
  int64_t samples = 1;
  for (int i = 2; i < s.ndim(); ++i) samples *= s[i];
  const Reduction reduction = reduction_of(ctx.attrs);
  const std::optional<int64_t> ignore_index = ctx.attrs.has("ignore_index")
                                                  ? std::optional<int64_t>(ctx.attrs.get_int("ignore_index"))
                                                  : std::nullopt;

  // Work items: (batch item, block of samples), taken in fixed groups of about kLossGrain elements
  // of work. Each group's partial sums have their own slot, summed in group order at the end.
  const int64_t block = std::max<int64_t>(1, std::min(samples, kSampleBlock));
  const int64_t blocks_per_item = (samples + block - 1) / block;
  const int64_t items = batch * blocks_per_item;
  const int64_t work_per_item = std::max<int64_t>(1, block * (kSoftmax ? 3 * classes : 1));
  const int64_t items_per_group = std::max<int64_t>(1, kLossGrain / work_per_item);
  const int64_t groups = (items + items_per_group - 1) / items_per_group;
  std::vector<double> loss_sums(static_cast<size_t>(reduction == Reduction::kNone ? 0 : groups));
  std::vector<double> weight_sums(loss_sums.size());

  dispatch_dtype(scores.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating(dtype_of<T>)) {
      dispatch_dtype(labels.dtype(), [&](auto index_tag) {
        using Index = typename decltype(index_tag)::type;
        if constexpr (std::is_same_v<Index, int32_t> || std::is_same_v<Index, int64_t>) {
          const LossProblem<T, Index> problem{scores.data<T>(),
                                              labels.data<Index>(),
                                              ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr,
                                              ignore_index,
                                              classes,
                                              samples,
                                              kSoftmax ? "input 1 (labels)" : "input 1 (target)"};
          T* per_sample = reduction == Reduction::kNone ? ctx.output(0).data<T>() : nullptr;
          T* log_prob = kSoftmax && ctx.num_outputs() > 1 ? ctx.output(1).data<T>() : nullptr;
          parallel_for(0, groups, 1, [&](int64_t first_group, int64_t end_group) {
            for (int64_t g = first_group; g < end_group; ++g) {
              double loss_sum = 0.0, weight_sum = 0.0;
              auto emit = [&](int64_t sample, SampleLoss l) {
                if (per_sample) {
                  per_sample[sample] = convert_value<T>(static_cast<compute_t<T>>(l.loss));
                } else {
                  loss_sum += l.loss;
                  weight_sum += l.weight;
                }
              };
              for (int64_t item = g * items_per_group; item < std::min(items, (g + 1) * items_per_group);
                   ++item) {
                const int64_t n = item / blocks_per_item, j0 = (item % blocks_per_item) * block;
                const int64_t count = std::min(block, samples - j0);
                auto emit_at = [&](int64_t j, SampleLoss l) { emit(n * samples + j, l); };
                if constexpr (kSoftmax) {
                  sce_block(problem, log_prob, n, j0, count, emit_at);
                } else {
                  nll_block(problem, n, j0, count, emit_at);
                }
              }
              if (!per_sample) {
                loss_sums[static_cast<size_t>(g)] = loss_sum;
                weight_sums[static_cast<size_t>(g)] = weight_sum;
              }
            }
          });
          if (reduction == Reduction::kNone) return;
          double loss_total = 0.0, weight_total = 0.0;
          for (size_t i = 0; i < loss_sums.size(); ++i) {
            loss_total += loss_sums[i];
            weight_total += weight_sums[i];
          }
          // Mean over no counted samples (all ignored, or none at all) is 0 / 0 = NaN, as in numpy.
          const double result = reduction == Reduction::kSum ? loss_total : loss_total / weight_total;
          ctx.output(0).data<T>()[0] = convert_value<T>(static_cast<compute_t<T>>(result));
        }
      });
    }
  });
}

// NegativeLogLikelihoodLossGrad: the loss's gradient with respect to its log-probabilities:
// -weight[label] times the sample's share of dloss at each sample's label, 0 elsewhere.
void nll_grad_kernel(KernelContext& ctx) {
  const Tensor& dloss = ctx.input(0);
  Tensor& dx = ctx.output(0);
  const Shape& s = dx.shape();
  const int64_t batch = s[0], classes = s[1];
  const int64_t samples = batch * classes == 0 ? 0 : dx.numel() / (batch * classes);
  const auto labels = read_int_values(ctx.input(2), "input 2 (target)");
  const Reduction reduction = reduction_of(ctx.attrs);
  // A flag and a value rather than std::optional: GCC's -Wmaybe-uninitialized misfires on it here.
  const bool has_ignore_index = ctx.attrs.has("ignore_index");
  const int64_t ignore_index = has_ignore_index ? ctx.attrs.get_int("ignore_index") : 0;
  const std::vector<double> weights = ctx.has_input(3)
                                          ? ctx.input(3).cast(DType::kFloat64).to_vector<double>()
                                          : std::vector<double>(static_cast<size_t>(classes), 1.0);
  // Each sample's class (-1: ignored) and the total weight a mean divides by.
  std::vector<int64_t> class_of(labels.size());
  double total_weight = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const int64_t c = labels[i];
    if (has_ignore_index && c == ignore_index) {
      class_of[i] = -1;
      continue;
    }
    KILN_CHECK(c >= 0 && c < classes, ErrorCode::kOutOfRange, "input 2 (target): label ", c,
               " is out of range [0, ", classes, ")");
    class_of[i] = c;
    total_weight += weights[static_cast<size_t>(c)];
  }
  const std::vector<double> upstream = dloss.cast(DType::kFloat64).to_vector<double>();
  dispatch_dtype(dx.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating(dtype_of<T>)) {
      T* out = dx.data<T>();
      std::fill(out, out + dx.numel(), convert_value<T>(0.0));
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t j = 0; j < samples; ++j) {
          const size_t i = static_cast<size_t>(n * samples + j);
          if (class_of[i] < 0) continue;
          const double share = reduction == Reduction::kNone  ? upstream[i]
                               : reduction == Reduction::kSum ? upstream[0]
                                                              : upstream[0] / total_weight;
          out[(n * classes + class_of[i]) * samples + j] =
              convert_value<T>(-weights[static_cast<size_t>(class_of[i])] * share);
        }
    }
  });
}

GradValue nll_input_grad(GradientContext& ctx, GradValue dloss) {
  return ctx.op1("NegativeLogLikelihoodLossGrad", {dloss, ctx.input(0), ctx.input(1), ctx.input(2)},
                 ctx.attrs().values());
}

// The gradients of the scores only; the class weights get none.
void nll_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0, nll_input_grad(ctx, ctx.output_grad(0)));
}

// SoftmaxCrossEntropyLoss = NegativeLogLikelihoodLoss(LogSoftmax(scores, axis 1)): the gradient
// reaching log_prob (from the loss and from output 1) goes through log-softmax's rule,
// dscores = d - e^log_prob * sum over classes of d.
void sce_gradient(GradientContext& ctx) {
  GradValue d = ctx.output_grad(0).defined() ? nll_input_grad(ctx, ctx.output_grad(0)) : GradValue{};
  if (ctx.output_grad(1).defined()) d = d.defined() ? ctx.add(d, ctx.output_grad(1)) : ctx.output_grad(1);
  const GradValue log_prob =
      ctx.num_outputs() > 1 ? ctx.output(1) : ctx.op1("LogSoftmax", {ctx.input(0)}, {{"axis", 1}});
  const GradValue class_sum = ctx.op1("ReduceSum", {d, ctx.ints({1})}, {{"keepdims", 1}});
  ctx.set_input_grad(0, ctx.sub(d, ctx.mul(ctx.op1("Exp", {log_prob}), class_sum)));
}

KILN_REGISTER_OP(SoftmaxCrossEntropyLoss)
    .doc(
        "Softmax cross entropy of scores (N, C, d1, ..., dk) against class labels (N, d1, ..., dk): "
        "-log_softmax(scores, axis 1)[label] * weights[label], 0 where label == ignore_index; reduced "
        "by `reduction` (none, sum, or mean: sum / sum of the counted weights). Output log_prob is "
        "log_softmax(scores) along axis 1.")
    .input("scores")
    .input("labels")
    .input("weights", Arity::kOptional)
    .output("output")
    .output("log_prob", Arity::kOptional)
    .optional_attr("ignore_index", AttrType::kInt)
    .attr("reduction", AttrType::kString, "mean", validate_reduction)
    .infer([](InferContext& ctx) { return infer_loss(ctx, 2); })
    .kernel(loss_kernel<true>)
    .gradient(sce_gradient);

KILN_REGISTER_OP(NegativeLogLikelihoodLoss)
    .doc(
        "Negative log-likelihood of log-probabilities input (N, C, d1, ..., dk) against class "
        "target (N, d1, ..., dk): -input[target] * weight[target], 0 where target == ignore_index; "
        "reduced by `reduction` (none, sum, or mean: sum / sum of the counted weights).")
    .input("input")
    .input("target")
    .input("weight", Arity::kOptional)
    .output("loss")
    .optional_attr("ignore_index", AttrType::kInt)
    .attr("reduction", AttrType::kString, "mean", validate_reduction)
    .infer([](InferContext& ctx) { return infer_loss(ctx, 1); })
    .kernel(loss_kernel<false>)
    .gradient(nll_gradient);

KILN_REGISTER_OP(NegativeLogLikelihoodLossGrad)
    .doc(
        "Kiln: the gradient of NegativeLogLikelihoodLoss (same attributes) with respect to its input, "
        "of the shape of `like`, for the loss gradient dloss.")
    .input("dloss")
    .input("like")
    .input("target")
    .input("weight", Arity::kOptional)
    .output("dinput")
    .optional_attr("ignore_index", AttrType::kInt)
    .attr("reduction", AttrType::kString, "mean", validate_reduction)
    .infer([](InferContext& ctx) {
      require_same_dtype(ctx, 0, 1);
      require_dtype(ctx, 2, kIndexDTypes);
      return std::vector<TensorInfo>{ctx.input(1)};
    })
    .kernel(nll_grad_kernel);

}  // namespace
}  // namespace kiln::ops
