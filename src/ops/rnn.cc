// Recurrent layers: RNN, GRU and LSTM, each one layer run forward, in reverse or both ways
// (bidirectional), over time-major (layout 0) or batch-major (layout 1) sequences, with optional
// biases, per-sequence lengths, initial states, LSTM peepholes, gate clipping and any of the
// activation functions ONNX names. 16-bit floats are computed in float.
//
// Where ONNX leaves a detail open, Kiln does what ONNX Runtime does: activation_alpha/beta are
// consumed in order by the functions that take them (extra values are ignored), clip bounds the
// gate pre-activations but not the LSTM cell state fed to h, a sequence runs in reverse over its
// own length, and a sequence of length 0 has zero final states.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"
#include "matmul_kernel.h"

namespace kiln::ops {
namespace {

enum class Cell { kRnn, kGru, kLstm };

// Input positions; RNN and GRU stop at initial_h.
constexpr int kX = 0, kW = 1, kR = 2, kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6, kP = 7;

// Rows of W and R per hidden unit: RNN has one gate, GRU z, r, h, LSTM i, o, f, c.
int64_t gate_count(Cell cell) {
  return cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
}

// Activation functions per direction: RNN f, GRU f and g, LSTM f, g and h.
size_t function_count(Cell cell) {
  return cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 2 : 3;
}

std::vector<std::string> default_functions(Cell cell) {
  switch (cell) {
    case Cell::kRnn:
      return {"Tanh"};
    case Cell::kGru:
      return {"Sigmoid", "Tanh"};
    case Cell::kLstm:
      return {"Sigmoid", "Tanh", "Tanh"};
  }
  return {};
}

// ---- Activation functions ----

enum class ActivationKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus
};

struct ActivationSpec {
  const char* name;
  ActivationKind kind;
  bool takes_alpha, takes_beta;
  double default_alpha, default_beta;
};

// The defaults are those of the ONNX operators of the same names; ScaledTanh has none there, and
// 1, 1 make it plain Tanh.
constexpr ActivationSpec kActivationSpecs[] = {
    {"Relu", ActivationKind::kRelu, false, false, 0, 0},
    {"Tanh", ActivationKind::kTanh, false, false, 0, 0},
    {"Sigmoid", ActivationKind::kSigmoid, false, false, 0, 0},
    {"Affine", ActivationKind::kAffine, true, true, 1.0, 0.0},
    {"LeakyRelu", ActivationKind::kLeakyRelu, true, false, 0.01, 0},
    {"ThresholdedRelu", ActivationKind::kThresholdedRelu, true, false, 1.0, 0},
    {"ScaledTanh", ActivationKind::kScaledTanh, true, true, 1.0, 1.0},
    {"HardSigmoid", ActivationKind::kHardSigmoid, true, true, 0.2, 0.5},
    {"Elu", ActivationKind::kElu, true, false, 1.0, 0},
    {"Softsign", ActivationKind::kSoftsign, false, false, 0, 0},
    {"Softplus", ActivationKind::kSoftplus, false, false, 0, 0},
};

// Names match case-insensitively, as in ONNX Runtime (exporters write both "Tanh" and "tanh").
const ActivationSpec* find_activation(const std::string& name) {
  for (const auto& spec : kActivationSpecs) {
    const std::string known = spec.name;
    if (known.size() == name.size() &&
        std::equal(known.begin(), known.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return &spec;
  }
  return nullptr;
}

struct Activation {
  ActivationKind kind;
  double alpha, beta;
};

template <class C>
C sigmoid(C x) {
  // Split by sign so that exp never overflows.
  if (x >= 0) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}

// x[i] = act(clamp(x[i], -clip, clip)) for i < n; the switch stays outside the element loop.
template <class C>
void activate(const Activation& act, std::optional<C> clip, C* x, int64_t n) {
  const C alpha = static_cast<C>(act.alpha), beta = static_cast<C>(act.beta);
  auto each = [&](auto f) {
    if (clip) {
      const C bound = *clip;
      for (int64_t i = 0; i < n; ++i) x[i] = f(std::clamp(x[i], -bound, bound));
    } else {
      for (int64_t i = 0; i < n; ++i) x[i] = f(x[i]);
    }
  };
  switch (act.kind) {
    case ActivationKind::kRelu:
      return each([](C v) { return v > C(0) ? v : C(0); });
    case ActivationKind::kTanh:
      return each([](C v) { return std::tanh(v); });
    case ActivationKind::kSigmoid:
      return each([](C v) { return sigmoid(v); });
    case ActivationKind::kAffine:
      return each([&](C v) { return alpha * v + beta; });
    case ActivationKind::kLeakyRelu:
      return each([&](C v) { return v >= C(0) ? v : alpha * v; });
    case ActivationKind::kThresholdedRelu:
      return each([&](C v) { return v > alpha ? v : C(0); });
    case ActivationKind::kScaledTanh:
      return each([&](C v) { return alpha * std::tanh(beta * v); });
    case ActivationKind::kHardSigmoid:
      return each([&](C v) { return std::clamp(alpha * v + beta, C(0), C(1)); });
    case ActivationKind::kElu:
      return each([&](C v) { return v >= C(0) ? v : alpha * std::expm1(v); });
    case ActivationKind::kSoftsign:
      return each([](C v) { return v / (C(1) + std::abs(v)); });
    case ActivationKind::kSoftplus:
      return each([](C v) { return v > C(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); });
  }
}

void validate_activations(const AttrValue& v, const std::string& what) {
  for (const auto& name : std::get<std::vector<std::string>>(v.variant())) {
    if (find_activation(name)) continue;
    std::string known;
    for (const auto& spec : kActivationSpecs) known += (known.empty() ? "" : ", ") + std::string(spec.name);
    raise(ErrorCode::kInvalidArgument, what, ": expected each of {", known, "}, got '", name, "'");
  }
}

int64_t direction_count(const Attrs& attrs) {
  return attrs.get_string("direction") == "bidirectional" ? 2 : 1;
}

// The activation functions of each direction, in (f, g, h) order. The list names one set for
// every direction, or two sets (forward, reverse); a one-direction op given two sets, as the ONNX
// RNN default {Tanh, Tanh} is, uses the first.
std::vector<std::vector<Activation>> resolve_activations(const Attrs& attrs, Cell cell, int64_t dirs) {
  const size_t per = function_count(cell);
  const std::vector<std::string> names =
      attrs.has("activations") ? attrs.get_strings("activations") : default_functions(cell);
  const size_t n = names.size();
  KILN_CHECK(n == per || n == 2 * per, ErrorCode::kInvalidArgument, "attribute 'activations': expected ", per,
             " names (one set for every direction) or ", 2 * per, " (forward set, then reverse set), got ",
             n);
  static const std::vector<double> kNone;
  const auto& alphas = attrs.has("activation_alpha") ? attrs.get_floats("activation_alpha") : kNone;
  const auto& betas = attrs.has("activation_beta") ? attrs.get_floats("activation_beta") : kNone;
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> listed;
  for (const auto& name : names) {
    const ActivationSpec* spec = find_activation(name);
    KILN_CHECK(spec != nullptr, ErrorCode::kInvalidArgument, "attribute 'activations': unknown function '",
               name, "'");
    Activation act{spec->kind, spec->default_alpha, spec->default_beta};
    if (spec->takes_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (spec->takes_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    listed.push_back(act);
  }
  std::vector<std::vector<Activation>> by_direction;
  for (int64_t d = 0; d < dirs; ++d) {
    const size_t first = n == 2 * per && dirs == 2 ? static_cast<size_t>(d) * per : 0;
    by_direction.emplace_back(listed.begin() + static_cast<std::ptrdiff_t>(first),
                              listed.begin() + static_cast<std::ptrdiff_t>(first + per));
  }
  return by_direction;
}

// ---- Attribute validators ----

void validate_direction(const AttrValue& v, const std::string& what) {
  const auto& s = std::get<std::string>(v.variant());
  KILN_CHECK(s == "forward" || s == "reverse" || s == "bidirectional", ErrorCode::kInvalidArgument, what,
             ": expected one of {forward, reverse, bidirectional}, got '", s, "'");
}

void validate_positive_int(const AttrValue& v, const std::string& what) {
  const int64_t n = std::get<int64_t>(v.variant());
  KILN_CHECK(n > 0, ErrorCode::kInvalidArgument, what, ": expected > 0, got ", n);
}

void validate_clip(const AttrValue& v, const std::string& what) {
  const double clip = std::get<double>(v.variant());
  KILN_CHECK(clip > 0, ErrorCode::kInvalidArgument, what, ": expected a threshold > 0, got ", clip);
}

// ---- Shape inference ----

bool known(int64_t d) {
  return d >= 0;
}

int64_t known_product(int64_t a, int64_t b) {
  return known(a) && known(b) ? a * b : -1;
}

// Throws kShapeMismatch unless input i has `expected` (unknown dims on either side match anything).
void require_shape(const InferContext& ctx, int i, const Shape& expected, const char* meaning) {
  const Shape& actual = ctx.shape(i);
  bool fits = actual.ndim() == expected.ndim();
  for (int a = 0; fits && a < actual.ndim(); ++a)
    fits = !known(actual[a]) || !known(expected[a]) || actual[a] == expected[a];
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(i), ": expected shape ", meaning, " = ",
             expected, ", got ", actual);
}

std::vector<TensorInfo> infer_recurrent(InferContext& ctx, Cell cell) {
  const int max_outputs = cell == Cell::kLstm ? 3 : 2;
  const int outputs = ctx.num_outputs_requested() < 0 ? max_outputs : ctx.num_outputs_requested();
  KILN_CHECK(outputs >= 1 && outputs <= max_outputs, ErrorCode::kInvalidArgument, "expected 1 to ",
             max_outputs, " outputs, got ", outputs);
  require_dtype(ctx, kX, kFloatDTypes);
  for (int i : {kW, kR, kB, kInitialH, kInitialC, kP})
    if (ctx.has_input(i)) require_same_dtype(ctx, kX, i);
  for (int i : {kX, kW, kR}) require_rank(ctx, i, 3, 3);

  const Attrs& attrs = ctx.attrs();
  const int64_t dirs = direction_count(attrs), gates = gate_count(cell);
  const bool batch_major = attrs.get_int("layout") == 1;
  const Shape& x = ctx.shape(kX);
  const int64_t seq = x[batch_major ? 1 : 0], batch = x[batch_major ? 0 : 1], input = x[2];
  const int64_t hidden = attrs.has("hidden_size") ? attrs.get_int("hidden_size") : ctx.shape(kR)[2];
  const std::string gate_rows = gates == 1 ? "hidden_size" : std::to_string(gates) + "*hidden_size";
  require_shape(ctx, kW, Shape{dirs, known_product(gates, hidden), input},
                ("(num_directions, " + gate_rows + ", input_size)").c_str());
  require_shape(ctx, kR, Shape{dirs, known_product(gates, hidden), hidden},
                ("(num_directions, " + gate_rows + ", hidden_size)").c_str());
  if (ctx.has_input(kB))
    require_shape(ctx, kB, Shape{dirs, known_product(2 * gates, hidden)},
                  ("(num_directions, " + std::to_string(2 * gates) + "*hidden_size)").c_str());
  if (ctx.has_input(kSequenceLens)) {
    require_dtype(ctx, kSequenceLens, kIndexDTypes);
    require_shape(ctx, kSequenceLens, Shape{batch}, "(batch_size)");
  }
  const Shape state = batch_major ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  const char* state_meaning =
      batch_major ? "(batch_size, num_directions, hidden_size)" : "(num_directions, batch_size, hidden_size)";
  if (ctx.has_input(kInitialH)) require_shape(ctx, kInitialH, state, state_meaning);
  if (cell == Cell::kLstm) {
    if (ctx.has_input(kInitialC)) require_shape(ctx, kInitialC, state, state_meaning);
    if (ctx.has_input(kP))
      require_shape(ctx, kP, Shape{dirs, known_product(3, hidden)}, "(num_directions, 3*hidden_size)");
  }
  resolve_activations(attrs, cell, dirs);

  const DType dtype = ctx.dtype(kX);
  std::vector<TensorInfo> out{
      {dtype, batch_major ? Shape{batch, seq, dirs, hidden} : Shape{seq, dirs, batch, hidden}}};
  for (int k = 1; k < outputs; ++k) out.push_back({dtype, state});
  return out;
}

// ---- Kernel ----

// Sizes and memory layouts of one call.
struct Geometry {
  int64_t seq, batch, input, hidden, dirs, gates;
  bool batch_major;

  int64_t gate_width() const { return gates * hidden; }
  // The row of X (and of the projected inputs) that holds step t of sequence b.
  int64_t x_row(int64_t t, int64_t b) const { return batch_major ? b * seq + t : t * batch + b; }
  // Where Y[t, d, b, :] (layout 0) or Y[b, t, d, :] (layout 1) starts.
  int64_t y_offset(int64_t t, int64_t d, int64_t b) const {
    return (batch_major ? (b * seq + t) * dirs + d : (t * dirs + d) * batch + b) * hidden;
  }
  // Where the state of (d, b) starts in initial_h, initial_c, Y_h and Y_c.
  int64_t state_offset(int64_t d, int64_t b) const {
    return (batch_major ? b * dirs + d : d * batch + b) * hidden;
  }
};

// A tensor's values in the compute type: its own data when T is already C, a converted copy otherwise.
template <class T>
class ComputeView {
 public:
  using C = compute_t<T>;
  explicit ComputeView(const Tensor& t) {
    if (!t.defined()) return;
    if constexpr (std::is_same_v<T, C>) {
      data_ = t.data<T>();
    } else {
      const T* src = t.data<T>();
      copy_.resize(static_cast<size_t>(t.numel()));
      for (size_t i = 0; i < copy_.size(); ++i) copy_[i] = convert_value<C>(src[i]);
      data_ = copy_.data();
    }
  }
  const C* data() const { return data_; }

 private:
  std::vector<C> copy_;
  const C* data_ = nullptr;
};

// Multiply-adds (or activations) per parallel task, as the GEMM uses.
constexpr int64_t kTaskWork = gemm_detail::kTaskWork;

template <class T>
class Recurrence {
 public:
  using C = compute_t<T>;

  Recurrence(KernelContext& ctx, Cell cell)
      : ctx_(ctx),
        cell_(cell),
        x_(ctx.input(kX)),
        w_(ctx.input(kW)),
        r_(ctx.input(kR)),
        b_(ctx.has_input(kB) ? ctx.input(kB) : Tensor()),
        h0_(ctx.has_input(kInitialH) ? ctx.input(kInitialH) : Tensor()),
        c0_(cell == Cell::kLstm && ctx.has_input(kInitialC) ? ctx.input(kInitialC) : Tensor()),
        p_(cell == Cell::kLstm && ctx.has_input(kP) ? ctx.input(kP) : Tensor()) {
    const Attrs& attrs = ctx.attrs;
    const Shape& xs = ctx.input(kX).shape();
    geo_.batch_major = attrs.get_int("layout") == 1;
    geo_.seq = xs[geo_.batch_major ? 1 : 0];
    geo_.batch = xs[geo_.batch_major ? 0 : 1];
    geo_.input = xs[2];
    geo_.hidden = ctx.input(kR).shape()[2];
    geo_.dirs = direction_count(attrs);
    geo_.gates = gate_count(cell);
    reverse_only_ = attrs.get_string("direction") == "reverse";
    activations_ = resolve_activations(attrs, cell, geo_.dirs);
    if (attrs.has("clip")) clip_ = static_cast<C>(attrs.get_float("clip"));
    linear_before_reset_ = cell == Cell::kGru && attrs.get_int("linear_before_reset") == 1;
    input_forget_ = cell == Cell::kLstm && attrs.get_int("input_forget") == 1;
    read_lengths();
  }

  void run() {
    const Geometry& g = geo_;
    if (g.batch == 0 || g.hidden == 0) return;  // every output is empty
    for (int64_t d = 0; d < g.dirs; ++d) run_direction(d, reverse_only_ || d == 1);
    // Steps past a sequence's end hold zeros.
    T* y = ctx_.output(0).data<T>();
    for (int64_t d = 0; d < g.dirs; ++d)
      for (int64_t b = 0; b < g.batch; ++b)
        for (int64_t t = lengths_[static_cast<size_t>(b)]; t < g.seq; ++t)
          std::fill_n(y + g.y_offset(t, d, b), g.hidden, convert_value<T>(C(0)));
  }

 private:
  void read_lengths() {
    lengths_.assign(static_cast<size_t>(geo_.batch), geo_.seq);
    if (!ctx_.has_input(kSequenceLens)) return;
    const std::string label = "input 4 (sequence_lens)";
    lengths_ = read_int_values(ctx_.input(kSequenceLens), label);
    for (size_t b = 0; b < lengths_.size(); ++b)
      KILN_CHECK(lengths_[b] >= 0 && lengths_[b] <= geo_.seq, ErrorCode::kOutOfRange, label, ": expected ",
                 "lengths in [0, ", geo_.seq, "] (the sequence length), got ", lengths_[b],
                 " for batch entry ", b);
  }

  // X * W^T for every step of every sequence at once, plus the biases that do not depend on the
  // state: [rows of X, gates * hidden].
  std::vector<C> project_inputs(int64_t d) const {
    const Geometry& g = geo_;
    const int64_t width = g.gate_width();
    std::vector<C> bias(static_cast<size_t>(width), C(0));
    if (b_.data()) {
      const C* wb = b_.data() + d * 2 * width;
      const C* rb = wb + width;
      for (int64_t j = 0; j < width; ++j) bias[static_cast<size_t>(j)] = wb[j] + rb[j];
      // With linear_before_reset the recurrence bias of h is applied inside r * (...).
      if (linear_before_reset_)
        for (int64_t j = 2 * g.hidden; j < width; ++j) bias[static_cast<size_t>(j)] = wb[j];
    }
    std::vector<C> projected(static_cast<size_t>(g.seq * g.batch * width));
    gemm_tiles<C>(false, true, g.seq * g.batch, width, g.input, x_.data(), g.input,
                  w_.data() + d * width * g.input, g.input,
                  [&](int64_t i, int64_t j0, int64_t len, const C* acc) {
                    C* row = projected.data() + i * width + j0;
                    for (int64_t j = 0; j < len; ++j) row[j] = acc[j] + bias[static_cast<size_t>(j0 + j)];
                  });
    return projected;
  }

  // R^T of direction d, [hidden, gates * hidden], so each step's product reads it row by row.
  std::vector<C> transposed_recurrence(int64_t d) const {
    const int64_t width = geo_.gate_width(), hidden = geo_.hidden;
    const C* r = r_.data() + d * width * hidden;
    std::vector<C> rt(static_cast<size_t>(hidden * width));
    for (int64_t j = 0; j < width; ++j)
      for (int64_t k = 0; k < hidden; ++k) rt[static_cast<size_t>(k * width + j)] = r[j * hidden + k];
    return rt;
  }

  // The initial state of direction d ([batch, hidden]): from `given`, or zeros.
  std::vector<C> initial_state(const ComputeView<T>& given, int64_t d) const {
    std::vector<C> state(static_cast<size_t>(geo_.batch * geo_.hidden), C(0));
    if (given.data())
      for (int64_t b = 0; b < geo_.batch; ++b)
        std::copy_n(given.data() + geo_.state_offset(d, b), geo_.hidden, state.data() + b * geo_.hidden);
    return state;
  }

  void run_direction(int64_t d, bool reverse) {
    const Geometry& g = geo_;
    const int64_t width = g.gate_width(), hidden = g.hidden;
    std::vector<C> gates = project_inputs(d);  // updated in place, one row per (step, sequence)
    const std::vector<C> rt = transposed_recurrence(d);
    std::vector<C> h = initial_state(h0_, d), c = initial_state(c0_, d);
    // The state times R^T; for GRU without linear_before_reset, columns [2H, 3H) get (r * H) R_h^T.
    std::vector<C> recurrent(static_cast<size_t>(g.batch * width));
    std::vector<C> reset_state(cell_ == Cell::kGru ? static_cast<size_t>(g.batch * hidden) : 0);
    const std::vector<Activation>& act = activations_[static_cast<size_t>(d)];
    const C* peepholes = p_.data() ? p_.data() + d * 3 * hidden : nullptr;
    const C* rb_h =
        b_.data() && linear_before_reset_ ? b_.data() + d * 2 * width + width + 2 * hidden : nullptr;
    T* y = ctx_.output(0).data<T>();
    const int64_t steps = *std::max_element(lengths_.begin(), lengths_.end());
    const int64_t grain = std::max<int64_t>(1, kTaskWork / std::max<int64_t>(1, width));

    // Calls fn(b, t, gate row of (t, b)) for each sequence b still running at step s, where t is the
    // time index that step reaches in b; the sequences are split across the pool.
    auto for_active = [&](int64_t s, auto&& fn) {
      parallel_for(0, g.batch, grain, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t len = lengths_[static_cast<size_t>(b)];
          if (s >= len) continue;
          const int64_t t = reverse ? len - 1 - s : s;
          fn(b, t, gates.data() + g.x_row(t, b) * width);
        }
      });
    };

    const bool gru_two_products = cell_ == Cell::kGru && !linear_before_reset_;
    for (int64_t s = 0; s < steps; ++s) {
      gemm_reference<C>(false, false, g.batch, gru_two_products ? 2 * hidden : width, hidden, h.data(),
                        hidden, rt.data(), width, recurrent.data(), width);
      switch (cell_) {
        case Cell::kRnn:
          for_active(s, [&](int64_t b, int64_t t, C* gate) {
            const C* rec = recurrent.data() + b * width;
            C* hb = h.data() + b * hidden;
            for (int64_t j = 0; j < hidden; ++j) hb[j] = gate[j] + rec[j];
            activate(act[0], clip_, hb, hidden);
            store(y + g.y_offset(t, d, b), hb);
          });
          break;
        case Cell::kGru:
          // z and r first: without linear_before_reset, h's product needs r * H.
          for_active(s, [&](int64_t b, int64_t, C* gate) {
            const C* rec = recurrent.data() + b * width;
            for (int64_t j = 0; j < 2 * hidden; ++j) gate[j] += rec[j];
            activate(act[0], clip_, gate, 2 * hidden);
            if (!linear_before_reset_) {
              const C* r = gate + hidden;
              const C* hb = h.data() + b * hidden;
              C* rh = reset_state.data() + b * hidden;
              for (int64_t j = 0; j < hidden; ++j) rh[j] = r[j] * hb[j];
            }
          });
          if (gru_two_products)
            gemm_reference<C>(false, false, g.batch, hidden, hidden, reset_state.data(), hidden,
                              rt.data() + 2 * hidden, width, recurrent.data() + 2 * hidden, width);
          for_active(s, [&](int64_t b, int64_t t, C* gate) {
            const C* rec_h = recurrent.data() + b * width + 2 * hidden;
            const C *z = gate, *r = gate + hidden;
            C* candidate = gate + 2 * hidden;
            if (linear_before_reset_) {
              for (int64_t j = 0; j < hidden; ++j)
                candidate[j] += r[j] * (rec_h[j] + (rb_h ? rb_h[j] : C(0)));
            } else {
              for (int64_t j = 0; j < hidden; ++j) candidate[j] += rec_h[j];
            }
            activate(act[1], clip_, candidate, hidden);
            C* hb = h.data() + b * hidden;
            for (int64_t j = 0; j < hidden; ++j) hb[j] = (C(1) - z[j]) * candidate[j] + z[j] * hb[j];
            store(y + g.y_offset(t, d, b), hb);
          });
          break;
        case Cell::kLstm:
          for_active(s, [&](int64_t b, int64_t t, C* gate) {
            const C* rec = recurrent.data() + b * width;
            for (int64_t j = 0; j < width; ++j) gate[j] += rec[j];
            lstm_update(act, peepholes, gate, c.data() + b * hidden, h.data() + b * hidden);
            store(y + g.y_offset(t, d, b), h.data() + b * hidden);
          });
          break;
      }
    }
    store_final_state(1, h, d);
    if (cell_ == Cell::kLstm) store_final_state(2, c, d);
  }

  // One LSTM step of one sequence: gate holds the pre-activations [i, o, f, c]; cell and hidden
  // hold C(t-1) and H(t-1) and receive C(t) and H(t).
  void lstm_update(const std::vector<Activation>& act, const C* peepholes, C* gate, C* cell,
                   C* hidden_state) const {
    const int64_t hidden = geo_.hidden;
    C *in = gate, *out = gate + hidden, *forget = gate + 2 * hidden, *candidate = gate + 3 * hidden;
    if (peepholes)
      for (int64_t j = 0; j < hidden; ++j) in[j] += peepholes[j] * cell[j];
    activate(act[0], clip_, in, hidden);
    if (input_forget_) {
      for (int64_t j = 0; j < hidden; ++j) forget[j] = C(1) - in[j];
    } else {
      if (peepholes)
        for (int64_t j = 0; j < hidden; ++j) forget[j] += peepholes[2 * hidden + j] * cell[j];
      activate(act[0], clip_, forget, hidden);
    }
    activate(act[1], clip_, candidate, hidden);
    for (int64_t j = 0; j < hidden; ++j) cell[j] = forget[j] * cell[j] + in[j] * candidate[j];
    if (peepholes)
      for (int64_t j = 0; j < hidden; ++j) out[j] += peepholes[hidden + j] * cell[j];
    activate(act[0], clip_, out, hidden);
    // h(C(t)) goes through the spent candidate slot: the cell state itself must stay unactivated.
    std::copy_n(cell, hidden, candidate);
    activate(act[2], std::optional<C>(), candidate, hidden);
    for (int64_t j = 0; j < hidden; ++j) hidden_state[j] = out[j] * candidate[j];
  }

  void store(T* dst, const C* src) const {
    for (int64_t j = 0; j < geo_.hidden; ++j) dst[j] = convert_value<T>(src[j]);
  }

  // Writes direction d's final states into output k (Y_h or Y_c) when it was asked for.
  void store_final_state(int k, const std::vector<C>& state, int64_t d) {
    if (ctx_.num_outputs() <= k) return;
    T* out = ctx_.output(k).data<T>();
    for (int64_t b = 0; b < geo_.batch; ++b) {
      T* dst = out + geo_.state_offset(d, b);
      if (lengths_[static_cast<size_t>(b)] == 0)
        std::fill_n(dst, geo_.hidden, convert_value<T>(C(0)));
      else
        store(dst, state.data() + b * geo_.hidden);
    }
  }

  KernelContext& ctx_;
  Cell cell_;
  ComputeView<T> x_, w_, r_, b_, h0_, c0_, p_;
  Geometry geo_{};
  bool reverse_only_ = false;
  std::vector<std::vector<Activation>> activations_;
  std::optional<C> clip_;
  bool linear_before_reset_ = false, input_forget_ = false;
  std::vector<int64_t> lengths_;
};

void recurrent_kernel(KernelContext& ctx, Cell cell) {
  dispatch_dtype(ctx.input(kX).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      Recurrence<T>(ctx, cell).run();
    } else {
      raise(ErrorCode::kInternal, "inference admits only floating-point X, got ", dtype_name(dtype_of<T>));
    }
  });
}

// The attributes the three ops share.
OpSchema& common_attrs(OpSchema& schema) {
  return schema.optional_attr("activation_alpha", AttrType::kFloats)
      .optional_attr("activation_beta", AttrType::kFloats)
      .optional_attr("activations", AttrType::kStrings, validate_activations)
      .optional_attr("clip", AttrType::kFloat, validate_clip)
      .attr("direction", AttrType::kString, "forward", validate_direction)
      .optional_attr("hidden_size", AttrType::kInt, validate_positive_int)
      .attr("layout", AttrType::kInt, 0, require_flag);
}

OpSchema& common_io(OpSchema& schema) {
  return schema.input("X")
      .input("W")
      .input("R")
      .input("B", Arity::kOptional)
      .input("sequence_lens", Arity::kOptional)
      .input("initial_h", Arity::kOptional);
}

[[maybe_unused]] OpSchema& kRnnSchema =
    common_attrs(common_io(OpRegistry::global().add("RNN")))
        .doc("One-layer Elman RNN: H(t) = f(X(t) W^T + H(t-1) R^T + Wb + Rb), f = Tanh by default.")
        .output("Y", Arity::kOptional)
        .output("Y_h", Arity::kOptional)
        .infer([](InferContext& ctx) { return infer_recurrent(ctx, Cell::kRnn); })
        .kernel([](KernelContext& ctx) { recurrent_kernel(ctx, Cell::kRnn); });

[[maybe_unused]] OpSchema& kGruSchema =
    common_attrs(common_io(OpRegistry::global().add("GRU")))
        .doc(
            "One-layer GRU with update gate z, reset gate r and candidate h (f = Sigmoid, g = Tanh by "
            "default): H(t) = (1 - z) * h + z * H(t-1).")
        .attr("linear_before_reset", AttrType::kInt, 0, require_flag)
        .output("Y", Arity::kOptional)
        .output("Y_h", Arity::kOptional)
        .infer([](InferContext& ctx) { return infer_recurrent(ctx, Cell::kGru); })
        .kernel([](KernelContext& ctx) { recurrent_kernel(ctx, Cell::kGru); });

[[maybe_unused]] OpSchema& kLstmSchema =
    common_attrs(common_io(OpRegistry::global().add("LSTM")))
        .doc(
            "One-layer LSTM with input, output and forget gates, optional peepholes P and coupled input "
            "and forget gates (input_forget); f = Sigmoid, g = h = Tanh by default.")
        .input("initial_c", Arity::kOptional)
        .input("P", Arity::kOptional)
        .attr("input_forget", AttrType::kInt, 0, require_flag)
        .output("Y", Arity::kOptional)
        .output("Y_h", Arity::kOptional)
        .output("Y_c", Arity::kOptional)
        .infer([](InferContext& ctx) { return infer_recurrent(ctx, Cell::kLstm); })
        .kernel([](KernelContext& ctx) { recurrent_kernel(ctx, Cell::kLstm); });

}  // namespace
}  // namespace kiln::ops
