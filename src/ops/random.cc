// Ops that draw random numbers: ONNX's RandomUniform, RandomNormal, RandomUniformLike,
// RandomNormalLike, Bernoulli and Multinomial, and Kiln's Sample* ops for MXNet's distributions
// (mx.nd.random: uniform, normal, gamma, exponential, poisson, negative_binomial,
// generalized_negative_binomial, randint), whose parameters are tensors broadcast together: the
// output is the parameters' broadcast shape followed by `shape`, one draw per parameter element
// and position of `shape` (MXNet's sample_* layout; scalar parameters give `shape` itself).
//
// Element i of the output draws from its own stream: the uniform 64-bit words
// random::counter_hash(counter_hash(seed, i), k) for k = 0, 1, ..., so a draw depends on the
// seed and the element only, never on the threads that compute it or their order. The seed is
// the `seed` attribute when given (the same seed, the same draws), else the call's
// (KernelContext::call_seed) or the next of kiln::random's sequence, which mx.random.seed resets.
// Rejection samplers (gamma, poisson) take as many words as they need; they are libstdc++'s
// distributions over that stream.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "attr_validators.h"
#include "elementwise.h"
#include "infer_util.h"
#include "kiln/random.hpp"

namespace kiln::ops {
namespace {

// The words of element i's stream, as the UniformRandomBitGenerator the std distributions take.
class ElementBits {
 public:
  using result_type = uint64_t;
  ElementBits(uint64_t seed, int64_t element)
      : key_(random::counter_hash(seed, static_cast<uint64_t>(element))) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() { return random::counter_hash(key_, next_++); }
  // In [0, 1), from the top 53 bits.
  double uniform() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

 private:
  uint64_t key_;
  uint64_t next_ = 0;
};

uint64_t call_seed(const KernelContext& ctx) {
  if (ctx.attrs.has("seed")) {
    // ONNX's seed is a float: an integer-sized value names the stream by its integer part (1.0 and
    // 1 agree), anything else (huge, infinite, NaN) by its bits.
    const double seed = ctx.attrs.get_float("seed");
    if (std::abs(seed) < 0x1.0p63) return static_cast<uint64_t>(static_cast<int64_t>(seed));
    return std::bit_cast<uint64_t>(seed);
  }
  return ctx.call_seed ? *ctx.call_seed : random::next_seed();
}

// out[i] = draw(bits_i, i) converted to the output's dtype, over the pool.
template <class Draw>
void fill_draws(KernelContext& ctx, Tensor& out, Draw&& draw) {
  const uint64_t seed = call_seed(ctx);
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = out.data<T>();
    parallel_for(0, out.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        ElementBits bits(seed, i);
        y[i] = convert_value<T>(draw(bits, i));
      }
    });
  });
}

DType dtype_attr(const InferContext& ctx, DType fallback) {
  return ctx.attrs().has("dtype") ? dtype_from_onnx(ctx.attrs().get_int("dtype")) : fallback;
}

void validate_float_dtype(const AttrValue& v, const std::string& what) {
  validate_onnx_dtype(v, what);
  const DType d = dtype_from_onnx(std::get<int64_t>(v.variant()));
  KILN_CHECK(is_floating(d), ErrorCode::kTypeMismatch, what, ": expected a floating-point type, got ",
             dtype_name(d));
}

Shape shape_attr(const Attrs& attrs) {
  const std::vector<int64_t>& dims = attrs.get_ints("shape");
  for (int64_t d : dims)
    KILN_CHECK(d >= 0, ErrorCode::kInvalidArgument, "attribute 'shape' has the negative dimension ", d);
  return Shape(dims);
}

// ---- ONNX: RandomUniform, RandomNormal and their Like forms ------------------------------------

std::vector<TensorInfo> infer_from_shape_attr(InferContext& ctx) {
  return {TensorInfo{dtype_attr(ctx, DType::kFloat32), shape_attr(ctx.attrs())}};
}

std::vector<TensorInfo> infer_like(InferContext& ctx) {
  const DType dtype = dtype_attr(ctx, ctx.dtype(0));
  KILN_CHECK(is_floating(dtype), ErrorCode::kTypeMismatch, ctx.input_label(0), " is ", dtype_name(dtype),
             " and no floating-point 'dtype' is given; the draws are floating-point");
  return {TensorInfo{dtype, ctx.shape(0)}};
}

void uniform_kernel(KernelContext& ctx) {
  const double low = ctx.attrs.get_float("low"), high = ctx.attrs.get_float("high");
  fill_draws(ctx, ctx.output(0),
             [&](ElementBits& bits, int64_t) { return low + (high - low) * bits.uniform(); });
}

void normal_kernel(KernelContext& ctx) {
  const double mean = ctx.attrs.get_float("mean"), scale = ctx.attrs.get_float("scale");
  // A scale of 0 draws the mean (std::normal_distribution needs a positive deviation).
  fill_draws(ctx, ctx.output(0), [&](ElementBits& bits, int64_t) {
    return scale == 0 ? mean : std::normal_distribution<double>(mean, scale)(bits);
  });
}

KILN_REGISTER_OP(RandomUniform)
    .doc("Draws of `shape`, uniform in [low, high), in `dtype` (default float32).")
    .output("output")
    .required_attr("shape", AttrType::kInts)
    .attr("low", AttrType::kFloat, 0.0)
    .attr("high", AttrType::kFloat, 1.0)
    .optional_attr("dtype", AttrType::kInt, validate_float_dtype)
    .optional_attr("seed", AttrType::kFloat)
    .draws_random()
    .infer(infer_from_shape_attr)
    .kernel(uniform_kernel);

KILN_REGISTER_OP(RandomNormal)
    .doc("Draws of `shape` from the normal distribution N(mean, scale^2), in `dtype` (default float32).")
    .output("output")
    .required_attr("shape", AttrType::kInts)
    .attr("mean", AttrType::kFloat, 0.0)
    .attr("scale", AttrType::kFloat, 1.0)
    .optional_attr("dtype", AttrType::kInt, validate_float_dtype)
    .optional_attr("seed", AttrType::kFloat)
    .draws_random()
    .infer(infer_from_shape_attr)
    .kernel(normal_kernel);

KILN_REGISTER_OP(RandomUniformLike)
    .doc("RandomUniform of the input's shape, in `dtype` (the input's when absent).")
    .input("input")
    .output("output")
    .attr("low", AttrType::kFloat, 0.0)
    .attr("high", AttrType::kFloat, 1.0)
    .optional_attr("dtype", AttrType::kInt, validate_float_dtype)
    .optional_attr("seed", AttrType::kFloat)
    .draws_random()
    .reads_shapes_only()
    .infer(infer_like)
    .kernel(uniform_kernel);

KILN_REGISTER_OP(RandomNormalLike)
    .doc("RandomNormal of the input's shape, in `dtype` (the input's when absent).")
    .input("input")
    .output("output")
    .attr("mean", AttrType::kFloat, 0.0)
    .attr("scale", AttrType::kFloat, 1.0)
    .optional_attr("dtype", AttrType::kInt, validate_float_dtype)
    .optional_attr("seed", AttrType::kFloat)
    .draws_random()
    .reads_shapes_only()
    .infer(infer_like)
    .kernel(normal_kernel);

// ---- ONNX: Bernoulli, Multinomial ---------------------------------------------------------------

KILN_REGISTER_OP(Bernoulli)
    .doc("1 with probability input[i] (in [0, 1]), else 0, in `dtype` (the input's when absent).")
    .input("input")
    .output("output")
    .optional_attr("dtype", AttrType::kInt, validate_compute_dtype)
    .optional_attr("seed", AttrType::kFloat)
    .draws_random()
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kFloatDTypes);
      return std::vector<TensorInfo>{{dtype_attr(ctx, ctx.dtype(0)), ctx.shape(0)}};
    })
    .kernel([](KernelContext& ctx) {
      const Tensor p = ctx.input(0).cast(DType::kFloat64);
      const double* prob = p.data<double>();
      for (int64_t i = 0; i < p.numel(); ++i)
        KILN_CHECK(prob[i] >= 0 && prob[i] <= 1, ErrorCode::kInvalidArgument,
                   "input 0 (input): probabilities must lie in [0, 1], got ", prob[i], " at element ", i);
      fill_draws(ctx, ctx.output(0),
                 [&](ElementBits& bits, int64_t i) { return bits.uniform() < prob[i] ? 1 : 0; });
    });

KILN_REGISTER_OP(Multinomial)
    .doc(
        "sample_size class indices per row of the (batch, classes) input of unnormalized log-probabilities, "
        "drawn with probabilities softmax(row), in `dtype` (int32, the default, or int64).")
    .input("input")
    .output("output")
    .attr("sample_size", AttrType::kInt, 1)
    .attr("dtype", AttrType::kInt, static_cast<int64_t>(6))
    .optional_attr("seed", AttrType::kFloat)
    .draws_random()
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kFloatDTypes);
      require_rank(ctx, 0, 2, 2);
      const DType dtype = dtype_from_onnx(ctx.attrs().get_int("dtype"));
      KILN_CHECK(dtype == DType::kInt32 || dtype == DType::kInt64, ErrorCode::kTypeMismatch,
                 "attribute 'dtype': expected int32 or int64, got ", dtype_name(dtype));
      const int64_t samples = ctx.attrs().get_int("sample_size");
      KILN_CHECK(samples >= 0, ErrorCode::kInvalidArgument, "attribute 'sample_size': expected >= 0, got ",
                 samples);
      return std::vector<TensorInfo>{{dtype, Shape{ctx.shape(0)[0], samples}}};
    })
    .kernel([](KernelContext& ctx) {
      const Tensor logits = ctx.input(0).cast(DType::kFloat64);
      const int64_t classes = logits.shape()[1], samples = ctx.attrs.get_int("sample_size");
      KILN_CHECK(classes > 0 || ctx.output(0).numel() == 0, ErrorCode::kInvalidArgument,
                 "input 0 (input): no classes to draw from");
      // Each row's cumulative probabilities, normalized by the row's softmax.
      std::vector<double> cumulative(static_cast<size_t>(logits.numel()));
      const double* l = logits.data<double>();
      for (int64_t r = 0; r < logits.shape()[0]; ++r) {
        double peak = -std::numeric_limits<double>::infinity(), total = 0;
        for (int64_t c = 0; c < classes; ++c) peak = std::max(peak, l[r * classes + c]);
        for (int64_t c = 0; c < classes; ++c) {
          total += std::exp(l[r * classes + c] - peak);
          cumulative[static_cast<size_t>(r * classes + c)] = total;
        }
        for (int64_t c = 0; c < classes; ++c) cumulative[static_cast<size_t>(r * classes + c)] /= total;
      }
      fill_draws(ctx, ctx.output(0), [&](ElementBits& bits, int64_t i) {
        const double* row = cumulative.data() + (i / samples) * classes;
        const int64_t c = std::upper_bound(row, row + classes, bits.uniform()) - row;
        return std::min(c, classes - 1);
      });
    });

// ---- Kiln: MXNet's distributions with tensor parameters ----------------------------------------

// The output of a Sample* op: the parameters' broadcast shape, then `shape`.
std::vector<TensorInfo> infer_sample(InferContext& ctx) {
  Shape params;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    require_dtype(ctx, i, kFloatDTypes);
    params = broadcast_shapes(params, ctx.shape(i), ctx.input_label(i));
  }
  std::vector<int64_t> dims(params.begin(), params.end());
  for (int64_t d : shape_attr(ctx.attrs())) dims.push_back(d);
  return {TensorInfo{dtype_attr(ctx, DType::kFloat32), Shape(std::move(dims))}};
}

// The parameters as float64 tensors of their broadcast shape.
std::vector<Tensor> broadcast_params(const KernelContext& ctx, const Shape& params) {
  std::vector<Tensor> out;
  for (const Tensor& t : ctx.inputs) {
    Dims strides(static_cast<size_t>(params.ndim()), 0);
    const Dims own = contiguous_strides(t.shape());
    for (int a = 0; a < t.ndim(); ++a) {
      const int at = params.ndim() - t.ndim() + a;
      strides[static_cast<size_t>(at)] = t.shape()[a] == 1 ? 0 : own[static_cast<size_t>(a)];
    }
    out.push_back(t.contiguous().as_strided(params, strides, 0).cast(DType::kFloat64));
  }
  return out;
}

// Runs draw(bits, p0, p1) for every output element, p0 and p1 the values of its parameters.
template <class Draw>
void sample_kernel(KernelContext& ctx, Draw&& draw) {
  Tensor& out = ctx.output(0);
  const int extra = static_cast<int>(ctx.attrs.get_ints("shape").size());
  const Shape params(std::vector<int64_t>(out.shape().begin(), out.shape().end() - extra));
  const std::vector<Tensor> values = broadcast_params(ctx, params);
  const int64_t per_param = params.numel() == 0 ? 0 : out.numel() / params.numel();
  const double* p0 = values[0].data<double>();
  const double* p1 = values.size() > 1 ? values[1].data<double>() : p0;
  fill_draws(ctx, out, [&](ElementBits& bits, int64_t i) {
    const int64_t p = i / per_param;
    return draw(bits, p0[p], p1[p]);
  });
}

// Checks a parameter per element before anything is drawn; `what` names the rule it breaks.
template <class Valid>
void check_params(const KernelContext& ctx, int input, Valid&& valid, const char* what) {
  const Tensor t = ctx.input(input).cast(DType::kFloat64);
  const double* v = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i)
    KILN_CHECK(valid(v[i]), ErrorCode::kInvalidArgument, "input ", input, ": ", what, ", got ", v[i],
               " at element ", i);
}

bool positive(double v) {
  return v > 0;
}

// Poisson(lambda) by libstdc++'s sampler; lambda 0 gives 0.
// Past 2^40 a count is drawn from the normal approximation N(lambda, lambda), rounded: the integer
// sampler would overflow for larger means, and the approximation's error (of order
// 1 / sqrt(lambda)) is below 1e-6 there.
double poisson(ElementBits& bits, double lambda) {
  if (lambda == 0) return 0.0;
  if (lambda > 0x1.0p40)
    return std::max(0.0, std::round(std::normal_distribution<double>(lambda, std::sqrt(lambda))(bits)));
  return static_cast<double>(std::poisson_distribution<int64_t>(lambda)(bits));
}

// A Gamma(k, theta) mixture of Poissons: the negative binomial for real k.
double gamma_poisson(ElementBits& bits, double k, double theta) {
  return poisson(bits, std::gamma_distribution<double>(k, theta)(bits));
}

void sample_uniform(KernelContext& ctx) {
  sample_kernel(
      ctx, [](ElementBits& bits, double low, double high) { return low + (high - low) * bits.uniform(); });
}

void sample_normal(KernelContext& ctx) {
  check_params(
      ctx, 1, [](double s) { return s >= 0; }, "sigma must be >= 0");
  sample_kernel(ctx, [](ElementBits& bits, double mu, double sigma) {
    return sigma == 0 ? mu : std::normal_distribution<double>(mu, sigma)(bits);
  });
}

void sample_gamma(KernelContext& ctx) {
  check_params(ctx, 0, positive, "alpha must be > 0");
  check_params(ctx, 1, positive, "beta must be > 0");
  sample_kernel(ctx, [](ElementBits& bits, double alpha, double beta) {
    return std::gamma_distribution<double>(alpha, beta)(bits);
  });
}

void sample_exponential(KernelContext& ctx) {
  check_params(ctx, 0, positive, "the rate lam must be > 0");
  sample_kernel(ctx, [](ElementBits& bits, double lam, double) {
    return std::exponential_distribution<double>(lam)(bits);
  });
}

void sample_poisson(KernelContext& ctx) {
  check_params(
      ctx, 0, [](double l) { return l >= 0; }, "lam must be >= 0");
  sample_kernel(ctx, [](ElementBits& bits, double lam, double) { return poisson(bits, lam); });
}

void sample_negative_binomial(KernelContext& ctx) {
  check_params(ctx, 0, positive, "k must be > 0");
  check_params(
      ctx, 1, [](double p) { return p > 0 && p <= 1; }, "p must lie in (0, 1]");
  sample_kernel(ctx, [](ElementBits& bits, double k, double p) {
    return p == 1 ? 0.0 : gamma_poisson(bits, k, (1 - p) / p);
  });
}

void sample_generalized_negative_binomial(KernelContext& ctx) {
  check_params(
      ctx, 0, [](double m) { return m >= 0; }, "mu must be >= 0");
  check_params(
      ctx, 1, [](double a) { return a >= 0; }, "alpha must be >= 0");
  sample_kernel(ctx, [](ElementBits& bits, double mu, double alpha) {
    return alpha == 0 || mu == 0 ? poisson(bits, mu) : gamma_poisson(bits, 1 / alpha, alpha * mu);
  });
}

// The Sample* ops share their attributes (shape, dtype, seed) and inference; they differ in their
// parameters and kernel.
bool register_sample_op(const char* name, const char* doc, std::initializer_list<const char*> params,
                        void (*kernel)(KernelContext&)) {
  OpSchema& schema = OpRegistry::global().add(name).doc(doc);
  for (const char* param : params) schema.input(param);
  schema.output("output")
      .attr("shape", AttrType::kInts, std::vector<int64_t>{})
      .optional_attr("dtype", AttrType::kInt, validate_compute_dtype)
      .optional_attr("seed", AttrType::kFloat)
      .draws_random()
      .infer(infer_sample)
      .kernel(kernel);
  return true;
}

[[maybe_unused]] const bool kSampleOpsRegistered =
    register_sample_op(
        "SampleUniform",
        "Kiln: draws uniform in [low, high) per element of the broadcast low and high, `shape` each.",
        {"low", "high"}, sample_uniform) &&
    register_sample_op(
        "SampleNormal",
        "Kiln: draws from N(mu, sigma^2) per element of the broadcast mu and sigma (>= 0), `shape` each.",
        {"mu", "sigma"}, sample_normal) &&
    register_sample_op(
        "SampleGamma",
        "Kiln: draws from Gamma(alpha, beta) (shape alpha > 0, scale beta > 0), `shape` per parameter "
        "element.",
        {"alpha", "beta"}, sample_gamma) &&
    register_sample_op(
        "SampleExponential",
        "Kiln: draws from the exponential distribution of rate lam > 0, `shape` per parameter element.",
        {"lam"}, sample_exponential) &&
    register_sample_op("SamplePoisson",
                       "Kiln: draws from Poisson(lam), lam >= 0, `shape` per parameter element.", {"lam"},
                       sample_poisson) &&
    register_sample_op(
        "SampleNegativeBinomial",
        "Kiln: the number of failures before k successes of probability p (k > 0, p in (0, 1]), "
        "`shape` per parameter element; real k through the Gamma-Poisson mixture.",
        {"k", "p"}, sample_negative_binomial) &&
    register_sample_op(
        "SampleGeneralizedNegativeBinomial",
        "Kiln: draws with mean mu >= 0 and dispersion alpha >= 0 (variance mu + alpha mu^2): "
        "Poisson(mu) for alpha 0, else a Gamma(1 / alpha, alpha mu) mixture of Poissons; `shape` per "
        "parameter element.",
        {"mu", "alpha"}, sample_generalized_negative_binomial);

KILN_REGISTER_OP(SampleRandint)
    .doc("Kiln: integers uniform in [low, high) of `shape`, in `dtype` (int32 by default).")
    .output("output")
    .required_attr("low", AttrType::kInt)
    .required_attr("high", AttrType::kInt)
    .required_attr("shape", AttrType::kInts)
    .optional_attr("dtype", AttrType::kInt, validate_compute_dtype)
    .optional_attr("seed", AttrType::kFloat)
    .draws_random()
    .infer([](InferContext& ctx) {
      const int64_t low = ctx.attrs().get_int("low"), high = ctx.attrs().get_int("high");
      KILN_CHECK(low < high, ErrorCode::kInvalidArgument, "attributes 'low' ", low, " and 'high' ", high,
                 ": expected low < high");
      const DType dtype = dtype_attr(ctx, DType::kInt32);
      KILN_CHECK(is_integral(dtype), ErrorCode::kTypeMismatch,
                 "attribute 'dtype': expected an integer type, got ", dtype_name(dtype));
      return std::vector<TensorInfo>{{dtype, shape_attr(ctx.attrs())}};
    })
    .kernel([](KernelContext& ctx) {
      const int64_t low = ctx.attrs.get_int("low"), high = ctx.attrs.get_int("high");
      fill_draws(ctx, ctx.output(0), [&](ElementBits& bits, int64_t) {
        return std::uniform_int_distribution<int64_t>(low, high - 1)(bits);
      });
    });

}  // namespace
}  // namespace kiln::ops
