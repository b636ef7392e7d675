// Spectral ops (ONNX opsets 17 and 20): DFT (forward, inverse and the real-input one-sided forms,
// along any signal axis), STFT (windowed DFTs of sliding frames) and MelWeightMatrix (the
// triangular filter bank that maps a one-sided spectrum to mel bins). Complex values are the last
// axis, [..., 2] = (real, imaginary); a real signal has [..., 1].
//
// Transforms run in double: a radix-2 FFT for power-of-two lengths, the direct O(n^2) sum with an
// exact twiddle table otherwise. Twiddles are indexed by (k * t) mod n, so no angle is rounded
// twice and long transforms keep float32 accuracy.
#include <cmath>
#include <complex>
#include <numbers>
#include <optional>
#include <type_traits>
#include <vector>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

using Complex = std::complex<double>;

inline constexpr DType kIndexScalarDTypes[] = {DType::kInt32, DType::kInt64};

// exp(sign * 2 pi i k / n) for k in [0, n); sign = -1 forward, +1 inverse.
std::vector<Complex> twiddles(int64_t n, bool inverse) {
  std::vector<Complex> w(static_cast<size_t>(n));
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < n; ++k) {
    const double angle = sign * 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
    w[static_cast<size_t>(k)] = {std::cos(angle), std::sin(angle)};
  }
  return w;
}

// In-place iterative Cooley-Tukey for n a power of two, with w = twiddles(n, ...).
void fft_power_of_two(std::vector<Complex>& a, const std::vector<Complex>& w) {
  const size_t n = a.size();
  for (size_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const size_t step = n / len;
    for (size_t start = 0; start < n; start += len) {
      for (size_t k = 0; k < len / 2; ++k) {
        const Complex u = a[start + k], v = a[start + k + len / 2] * w[k * step];
        a[start + k] = u + v;
        a[start + k + len / 2] = u - v;
      }
    }
  }
}

// The first `bins` values of the length-n transform of `signal` (n samples).
void transform(std::vector<Complex>& signal, const std::vector<Complex>& w, int64_t bins, Complex* out) {
  const auto n = static_cast<int64_t>(signal.size());
  if (n > 0 && (n & (n - 1)) == 0) {
    fft_power_of_two(signal, w);
    std::copy_n(signal.begin(), bins, out);
    return;
  }
  for (int64_t k = 0; k < bins; ++k) {
    Complex sum = 0;
    for (int64_t t = 0, index = 0; t < n; ++t, index = (index + k) % n)
      sum += signal[static_cast<size_t>(t)] * w[static_cast<size_t>(index)];
    out[k] = sum;
  }
}

// A scalar integer input's value (dft_length, axis, frame_step, frame_length).
int64_t scalar_value(const InferContext& ctx, int i) {
  require_dtype(ctx, i, kIndexScalarDTypes);
  const auto values = read_int_values(ctx.value(i), ctx.input_label(i));
  KILN_CHECK(values.size() == 1, ErrorCode::kShapeMismatch, ctx.input_label(i), ": expected a scalar, got ",
             values.size(), " values");
  return values[0];
}
int64_t scalar_value(const KernelContext& ctx, int i) {
  return ctx.input(i).cast(DType::kInt64).to_vector<int64_t>().at(0);
}

void require_complex_axis(const InferContext& ctx, int i) {
  const Shape& s = ctx.shape(i);
  KILN_CHECK(s.ndim() >= 2 && (s[s.ndim() - 1] == 1 || s[s.ndim() - 1] == 2 || s[s.ndim() - 1] < 0),
             ErrorCode::kShapeMismatch, ctx.input_label(i),
             ": expected a last axis of 1 (real) or 2 (real, imaginary), got shape ", s);
}

// ---- DFT ----

struct DftGeometry {
  int axis = 0;
  int64_t length = 0;  // dft_length
  bool inverse = false, onesided = false;
  int64_t out_bins = 0;
  int64_t out_parts = 2;  // 1 for the inverse of a one-sided transform (a real signal)
};

// The axis is input 2 (opset 20, default -2), else the attribute of opsets 17 to 19 (the ONNX
// importer turns the attribute, default 1 there, into the input).
DftGeometry dft_geometry(const Attrs& attrs, const Shape& x, std::optional<int64_t> axis_input,
                         std::optional<int64_t> length_input, const std::string& x_label) {
  DftGeometry g;
  const int rank = x.ndim();
  const int64_t axis = axis_input ? *axis_input : attrs.has("axis") ? attrs.get_int("axis") : -2;
  KILN_CHECK((axis >= -rank && axis <= -2) || (axis >= 0 && axis <= rank - 2), ErrorCode::kInvalidArgument,
             "axis ", axis, ": expected a signal axis of ", x_label, " (shape ", x,
             "), in [-rank, -2] or [0, rank - 2]");
  g.axis = static_cast<int>(axis < 0 ? axis + rank : axis);
  g.inverse = attrs.get_int("inverse") != 0;
  g.onesided = attrs.get_int("onesided") != 0;
  const int64_t n = x[g.axis];
  g.length = length_input ? *length_input : (g.inverse && g.onesided ? 2 * (n - 1) : n);
  KILN_CHECK(g.length >= 1, ErrorCode::kInvalidArgument, "dft_length ", g.length, ": expected at least 1");
  if (g.inverse && g.onesided) {
    g.out_bins = g.length;
    g.out_parts = 1;
  } else {
    g.out_bins = g.onesided ? g.length / 2 + 1 : g.length;
  }
  return g;
}

std::vector<TensorInfo> infer_dft(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  require_complex_axis(ctx, 0);
  std::optional<int64_t> length, axis;
  if (ctx.has_input(1)) length = scalar_value(ctx, 1);
  if (ctx.has_input(2)) axis = scalar_value(ctx, 2);
  const Shape& x = ctx.shape(0);
  const DftGeometry g = dft_geometry(ctx.attrs(), x, axis, length, ctx.input_label(0));
  Shape out = x;
  out[g.axis] = g.out_bins;
  out[x.ndim() - 1] = g.out_parts;
  return {TensorInfo{ctx.dtype(0), out}};
}

void dft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  std::optional<int64_t> length, axis;
  if (ctx.has_input(1)) length = scalar_value(ctx, 1);
  if (ctx.has_input(2)) axis = scalar_value(ctx, 2);
  const DftGeometry g = dft_geometry(ctx.attrs, x.shape(), axis, length, "input 0 (input)");
  const Shape& s = x.shape();
  const int64_t parts = s[s.ndim() - 1], n_in = s[g.axis];
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < g.axis; ++a) outer *= s[a];
  for (int a = g.axis + 1; a < s.ndim() - 1; ++a) inner *= s[a];
  const int64_t L = g.length;
  const std::vector<Complex> w = twiddles(L, g.inverse);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const auto sample = [&](int64_t o, int64_t t, int64_t i) {
        const int64_t at = ((o * n_in + t) * inner + i) * parts;
        const auto re = static_cast<double>(static_cast<compute_t<T>>(px[at]));
        return parts == 2 ? Complex(re, static_cast<double>(static_cast<compute_t<T>>(px[at + 1])))
                          : Complex(re, 0);
      };
      parallel_for(0, outer * inner, 1, [&](int64_t begin, int64_t end) {
        std::vector<Complex> line(static_cast<size_t>(L)), result(static_cast<size_t>(g.out_bins));
        for (int64_t line_index = begin; line_index < end; ++line_index) {
          const int64_t o = line_index / inner, i = line_index % inner;
          std::fill(line.begin(), line.end(), Complex(0, 0));
          if (g.inverse && g.onesided) {
            // A one-sided spectrum stands for its Hermitian whole: bins past L/2 mirror the first
            // ones conjugated; the imaginary parts of bin 0 and of an even L's middle bin drop.
            for (int64_t k = 0; k <= L / 2 && k < n_in; ++k) {
              const Complex v = sample(o, k, i);
              line[static_cast<size_t>(k)] = v;
              if (k > 0 && L - k > L / 2) line[static_cast<size_t>(L - k)] = std::conj(v);
            }
            line[0] = {line[0].real(), 0};
            if (L % 2 == 0) line[static_cast<size_t>(L / 2)] = {line[static_cast<size_t>(L / 2)].real(), 0};
          } else {
            for (int64_t t = 0; t < std::min(n_in, L); ++t) line[static_cast<size_t>(t)] = sample(o, t, i);
          }
          transform(line, w, g.out_bins, result.data());
          const double scale = g.inverse ? 1.0 / static_cast<double>(L) : 1.0;
          for (int64_t k = 0; k < g.out_bins; ++k) {
            const int64_t at = ((o * g.out_bins + k) * inner + i) * g.out_parts;
            const Complex v = result[static_cast<size_t>(k)] * scale;
            py[at] = convert_value<T>(v.real());
            if (g.out_parts == 2) py[at + 1] = convert_value<T>(v.imag());
          }
        }
      });
    }
  });
}

KILN_REGISTER_OP(DFT)
    .doc(
        "The discrete Fourier transform along a signal axis of a real [..., 1] or complex [..., 2] input, "
        "zero-padded or cut to dft_length; inverse=1 divides by the length; onesided=1 keeps the "
        "floor(n/2) + 1 unique bins of a real input's transform, or with inverse=1 takes such bins and "
        "returns the real signal [..., 1].")
    .input("input")
    .shape_input("dft_length", Arity::kOptional)
    .shape_input("axis", Arity::kOptional)
    .output("output")
    .optional_attr("axis", AttrType::kInt)
    .attr("inverse", AttrType::kInt, 0, require_flag)
    .attr("onesided", AttrType::kInt, 0, require_flag)
    .infer(infer_dft)
    .kernel(dft_kernel);

// ---- STFT ----

struct StftGeometry {
  int64_t step = 0, frame_length = 0, frames = 0, bins = 0;
};

StftGeometry stft_geometry(int64_t signal_length, int64_t step, std::optional<int64_t> window_length,
                           std::optional<int64_t> frame_length, bool onesided) {
  StftGeometry g;
  g.step = step;
  KILN_CHECK(step >= 1, ErrorCode::kInvalidArgument,
             "input 1 (frame_step): expected a step of at least 1, got ", step);
  g.frame_length = frame_length ? *frame_length : window_length ? *window_length : signal_length;
  KILN_CHECK(!frame_length || !window_length || *frame_length == *window_length, ErrorCode::kShapeMismatch,
             "input 2 (window): expected frame_length = ", g.frame_length, " values, got ", *window_length);
  KILN_CHECK(g.frame_length >= 1 && g.frame_length <= signal_length, ErrorCode::kInvalidArgument,
             "frame length ", g.frame_length, ": expected between 1 and the signal's length, ",
             signal_length);
  g.frames = (signal_length - g.frame_length) / step + 1;
  g.bins = onesided ? g.frame_length / 2 + 1 : g.frame_length;
  return g;
}

std::vector<TensorInfo> infer_stft(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  require_complex_axis(ctx, 0);
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() == 3, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected [batch, signal_length, 1 or 2], got shape ", x);
  std::optional<int64_t> window_length, frame_length;
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 0, 2);
    require_rank(ctx, 2, 1, 1);
    window_length = ctx.shape(2)[0];
  }
  if (ctx.has_input(3)) frame_length = scalar_value(ctx, 3);
  if (x[1] < 0) return {TensorInfo{ctx.dtype(0), Shape{x[0], Shape::kUnknown, Shape::kUnknown, 2}}};
  const StftGeometry g = stft_geometry(x[1], scalar_value(ctx, 1), window_length, frame_length,
                                       ctx.attrs().get_int("onesided") != 0);
  return {TensorInfo{ctx.dtype(0), Shape{x[0], g.frames, g.bins, 2}}};
}

void stft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Shape& s = x.shape();
  std::optional<int64_t> window_length, frame_length;
  if (ctx.has_input(2)) window_length = ctx.input(2).numel();
  if (ctx.has_input(3)) frame_length = scalar_value(ctx, 3);
  const StftGeometry g = stft_geometry(s[1], scalar_value(ctx, 1), window_length, frame_length,
                                       ctx.attrs.get_int("onesided") != 0);
  const int64_t parts = s[2];
  const std::vector<double> window = ctx.has_input(2)
                                         ? ctx.input(2).cast(DType::kFloat64).to_vector<double>()
                                         : std::vector<double>(static_cast<size_t>(g.frame_length), 1.0);
  const std::vector<Complex> w = twiddles(g.frame_length, false);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      parallel_for(0, s[0] * g.frames, 1, [&](int64_t begin, int64_t end) {
        std::vector<Complex> frame(static_cast<size_t>(g.frame_length)), result(static_cast<size_t>(g.bins));
        for (int64_t bf = begin; bf < end; ++bf) {
          const int64_t b = bf / g.frames, f = bf % g.frames;
          for (int64_t t = 0; t < g.frame_length; ++t) {
            const int64_t at = (b * s[1] + f * g.step + t) * parts;
            const auto re = static_cast<double>(static_cast<compute_t<T>>(px[at]));
            const double im = parts == 2 ? static_cast<double>(static_cast<compute_t<T>>(px[at + 1])) : 0.0;
            frame[static_cast<size_t>(t)] = Complex(re, im) * window[static_cast<size_t>(t)];
          }
          transform(frame, w, g.bins, result.data());
          for (int64_t k = 0; k < g.bins; ++k) {
            py[(bf * g.bins + k) * 2] = convert_value<T>(result[static_cast<size_t>(k)].real());
            py[(bf * g.bins + k) * 2 + 1] = convert_value<T>(result[static_cast<size_t>(k)].imag());
          }
        }
      });
    }
  });
}

KILN_REGISTER_OP(STFT)
    .doc(
        "The short-time Fourier transform of signal [batch, length, 1 or 2]: the DFT of each frame of "
        "frame_length samples every frame_step, times the window (all ones when absent); output [batch, "
        "frames, "
        "bins, 2] with frames = (length - frame_length) / frame_step + 1 and bins = frame_length / 2 + 1 "
        "when "
        "onesided.")
    .input("signal")
    .shape_input("frame_step")
    .input("window", Arity::kOptional)
    .shape_input("frame_length", Arity::kOptional)
    .output("output")
    .attr("onesided", AttrType::kInt, 1, require_flag)
    .infer(infer_stft)
    .kernel(stft_kernel);

// ---- MelWeightMatrix ----

struct MelParams {
  int64_t mel_bins = 0, dft_length = 0, sample_rate = 0;
  double lower_hz = 0, upper_hz = 0;
};

// Inputs 0-2 are integers and 3-4 floats, all scalars.
MelParams mel_params(const std::vector<double>& values) {
  MelParams p{static_cast<int64_t>(values[0]), static_cast<int64_t>(values[1]),
              static_cast<int64_t>(values[2]), values[3], values[4]};
  KILN_CHECK(p.mel_bins >= 1, ErrorCode::kInvalidArgument,
             "input 0 (num_mel_bins): expected at least 1, got ", p.mel_bins);
  KILN_CHECK(p.dft_length >= 1, ErrorCode::kInvalidArgument,
             "input 1 (dft_length): expected at least 1, got ", p.dft_length);
  KILN_CHECK(p.sample_rate >= 1, ErrorCode::kInvalidArgument,
             "input 2 (sample_rate): expected at least 1, got ", p.sample_rate);
  KILN_CHECK(p.lower_hz >= 0 && p.lower_hz < p.upper_hz && p.upper_hz <= p.sample_rate / 2.0 + 1e-9,
             ErrorCode::kInvalidArgument,
             "inputs 3-4 (lower_edge_hertz, upper_edge_hertz): expected 0 <= ", p.lower_hz, " < ", p.upper_hz,
             " <= sample_rate / 2 = ", p.sample_rate / 2.0);
  return p;
}

std::vector<double> mel_inputs(const std::vector<Tensor>& inputs) {
  std::vector<double> values;
  for (const Tensor& t : inputs) {
    KILN_CHECK(t.numel() == 1, ErrorCode::kShapeMismatch,
               "MelWeightMatrix: expected scalar inputs, got shape ", t.shape());
    values.push_back(t.cast(DType::kFloat64).to_vector<double>()[0]);
  }
  return values;
}

std::vector<TensorInfo> infer_mel(InferContext& ctx) {
  for (int i = 0; i < 3; ++i) require_dtype(ctx, i, kIndexScalarDTypes);
  for (int i = 3; i < 5; ++i) require_dtype(ctx, i, kFloatDTypes);
  std::vector<Tensor> inputs;
  for (int i = 0; i < 5; ++i) inputs.push_back(ctx.value(i));
  const MelParams p = mel_params(mel_inputs(inputs));
  return {TensorInfo{dtype_from_onnx(ctx.attrs().get_int("output_datatype")),
                     Shape{p.dft_length / 2 + 1, p.mel_bins}}};
}

// Triangles between mel_bins + 2 points evenly spaced in mel, mapped back to hertz and then to
// spectrogram bins as floor((dft_length + 1) * hz / sample_rate); each peaks at 1 on its center.
void mel_kernel(KernelContext& ctx) {
  const MelParams p = mel_params(mel_inputs(ctx.inputs));
  const auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low = mel(p.lower_hz), high = mel(p.upper_hz);
  const double step = (high - low) / static_cast<double>(p.mel_bins + 2);
  std::vector<int64_t> points(static_cast<size_t>(p.mel_bins + 2));
  for (size_t i = 0; i < points.size(); ++i) {
    const double hz = 700.0 * std::expm1((static_cast<double>(i) * step + low) / 2595.0 * std::numbers::ln10);
    points[i] = static_cast<int64_t>(
        std::floor(static_cast<double>(p.dft_length + 1) * hz / static_cast<double>(p.sample_rate)));
  }
  const int64_t rows = p.dft_length / 2 + 1;
  std::vector<double> m(static_cast<size_t>(rows * p.mel_bins), 0.0);
  const auto at = [&](int64_t row, int64_t bin) -> double& {
    KILN_CHECK(row >= 0 && row < rows, ErrorCode::kInvalidArgument, "MelWeightMatrix: mel bin ", bin,
               " reaches spectrogram bin ", row, ", past the ", rows, " there are");
    return m[static_cast<size_t>(row * p.mel_bins + bin)];
  };
  for (int64_t i = 0; i < p.mel_bins; ++i) {
    const int64_t left = points[static_cast<size_t>(i)], center = points[static_cast<size_t>(i + 1)],
                  right = points[static_cast<size_t>(i + 2)];
    if (center == left) {
      at(center, i) = 1;
    } else {
      for (int64_t j = left; j <= center; ++j)
        at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
    }
    for (int64_t j = center; j < right; ++j)
      at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
  }
  Tensor values = Tensor::from_vector<double>(m, Shape{rows, p.mel_bins});
  ctx.output(0).copy_from(values.cast(ctx.output(0).dtype()));
}

KILN_REGISTER_OP(MelWeightMatrix)
    .doc(
        "The [dft_length / 2 + 1, num_mel_bins] matrix of triangular mel filters (mel(f) = 2595 log10(1 + "
        "f / 700)) between lower_edge_hertz and upper_edge_hertz, each peaking at 1; a one-sided spectrogram "
        "times it gives a mel spectrogram.")
    .shape_input("num_mel_bins")
    .shape_input("dft_length")
    .shape_input("sample_rate")
    .shape_input("lower_edge_hertz")
    .shape_input("upper_edge_hertz")
    .output("output")
    .attr("output_datatype", AttrType::kInt, 1, validate_output_datatype)
    .infer(infer_mel)
    .kernel(mel_kernel);

}  // namespace
}  // namespace kiln::ops
