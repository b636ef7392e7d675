// Einsum (ONNX opset 28), with numpy.einsum's semantics: letters label axes, "..." stands for
// broadcast axes (right-aligned across operands), a letter repeated within one operand takes a
// diagonal, and without "->" the output holds the ellipsis axes then the letters used once, in
// ASCII order. Axes of size 1 broadcast against the same label elsewhere, as numpy allows.
//
// Every equation reduces to views, sums and batched matrix products: repeated labels become
// strided views (diagonals), labels of one operand alone that the output lacks are summed out at
// once, and the operands are then contracted left to right, each pair as one batched matrix
// product after a permutation: labels on both and still needed are the batch, labels on both and
// no longer needed are summed over, the rest are the rows and columns.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "infer_util.h"
#include "kiln/threading.hpp"
#include "matmul_kernel.h"

namespace kiln::ops {
namespace {

inline constexpr DType kEinsumDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                          DType::kInt8,    DType::kUInt8,   DType::kInt32,   DType::kInt64};

// Label ids: 'A'..'Z' are 0..25 and 'a'..'z' 26..51 (ASCII order, which the implicit output
// uses); the axes an ellipsis stands for follow from kLetterLabels on.
constexpr int kLetterLabels = 52;
constexpr int kEllipsis = -1;   // where "..." stands in a parsed term
constexpr int64_t kUnset = -2;  // a label no operand has sized yet

using LabelFn = std::function<std::string(int)>;

// The equation's terms, before they are matched against operand shapes.
struct Subscripts {
  std::vector<std::vector<int>> inputs;    // letter ids, kEllipsis where "..." stands
  std::optional<std::vector<int>> output;  // the explicit right-hand side, if any
};

// What the equation means for operands of given shapes.
struct EinsumPlan {
  std::vector<std::vector<int>> inputs;  // the label of every operand axis
  std::vector<int> output;               // the label of every output axis
  std::vector<int64_t> sizes;            // by label; -1 where not known before run time
  int ellipsis_rank = 0;
};

char letter(int id) {
  return static_cast<char>(id < 26 ? 'A' + id : 'a' + (id - 26));
}

std::string term_text(const std::vector<int>& term) {
  std::string text;
  for (int id : term) {
    if (id == kEllipsis) {
      text += "...";
    } else {
      text += letter(id);
    }
  }
  return text;
}

std::string label_name(int label) {
  if (label < kLetterLabels) return std::string{'\'', letter(label), '\''};
  return "ellipsis axis " + std::to_string(label - kLetterLabels);
}

std::vector<int> parse_term(const std::string& term, const std::string& what) {
  std::vector<int> ids;
  bool has_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c >= 'A' && c <= 'Z') {
      ids.push_back(c - 'A');
    } else if (c >= 'a' && c <= 'z') {
      ids.push_back(26 + (c - 'a'));
    } else if (c == '.') {
      KILN_CHECK(term.compare(i, 3, "...") == 0, ErrorCode::kInvalidArgument, what, ": a '.' in term '", term,
                 "' that is not part of an ellipsis '...'");
      KILN_CHECK(!has_ellipsis, ErrorCode::kInvalidArgument, what, ": term '", term,
                 "' has more than one ellipsis");
      has_ellipsis = true;
      ids.push_back(kEllipsis);
      i += 2;
    } else {
      raise(ErrorCode::kInvalidArgument, what, ": unexpected character '", std::string(1, c), "' in term '",
            term, "' (expected letters, '...', ',' and '->')");
    }
  }
  return ids;
}

// Syntax only: letters, ellipses, commas, one "->" with a single term after it. Spaces are ignored.
Subscripts parse_subscripts(const std::string& equation, const std::string& what) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  Subscripts s;
  const size_t arrow = eq.find("->");
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    KILN_CHECK(rhs.find(',') == std::string::npos && rhs.find("->") == std::string::npos,
               ErrorCode::kInvalidArgument, what, ": expected one output term after '->', got '", rhs, "'");
    s.output = parse_term(rhs, what);
  }
  const std::string lhs = eq.substr(0, arrow);
  for (size_t begin = 0;;) {
    const size_t comma = lhs.find(',', begin);
    s.inputs.push_back(parse_term(lhs.substr(begin, comma - begin), what));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return s;
}

void validate_equation(const AttrValue& v, const std::string& what) {
  parse_subscripts(std::get<std::string>(v.variant()), what);
}

// Sizes label `label` with dimension `d` of another operand: equal sizes, or 1 broadcasting.
void merge_size(int64_t& size, int64_t d, int label, const std::string& where) {
  if (size == kUnset || size == 1) {
    size = d;
  } else if (d == 1 || d == Shape::kUnknown) {
    return;
  } else if (size == Shape::kUnknown) {
    size = d;
  } else {
    KILN_CHECK(size == d, ErrorCode::kShapeMismatch, where, ": label ", label_name(label), " has size ", d,
               ", but size ", size, " in an earlier input");
  }
}

// Matches the terms with the operand shapes. Errors name the operand through `input_label`.
EinsumPlan plan_einsum(const Subscripts& s, const std::vector<Shape>& shapes, const LabelFn& input_label) {
  const size_t n = shapes.size();
  KILN_CHECK(s.inputs.size() == n, ErrorCode::kInvalidArgument, "attribute 'equation': ", s.inputs.size(),
             " input terms for ", n, " inputs");
  EinsumPlan plan;
  std::vector<int> ellipsis_axes(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto& term = s.inputs[i];
    const int letters =
        static_cast<int>(std::count_if(term.begin(), term.end(), [](int id) { return id >= 0; }));
    const bool has_ellipsis = static_cast<int>(term.size()) > letters;
    const int rank = shapes[i].ndim();
    KILN_CHECK(has_ellipsis ? rank >= letters : rank == letters, ErrorCode::kShapeMismatch,
               input_label(static_cast<int>(i)), ": equation term '", term_text(term), "' expects ",
               has_ellipsis ? "rank >= " : "rank ", letters, ", got shape ", shapes[i]);
    ellipsis_axes[i] = rank - letters;
    plan.ellipsis_rank = std::max(plan.ellipsis_rank, ellipsis_axes[i]);
  }
  plan.sizes.assign(static_cast<size_t>(kLetterLabels + plan.ellipsis_rank), kUnset);
  std::vector<int> uses(plan.sizes.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    const std::string where = input_label(static_cast<int>(i));
    std::vector<int> labels;
    for (int id : s.inputs[i]) {
      if (id != kEllipsis) {
        labels.push_back(id);
        continue;
      }
      for (int e = 0; e < ellipsis_axes[i]; ++e)
        labels.push_back(kLetterLabels + plan.ellipsis_rank - ellipsis_axes[i] + e);
    }
    for (size_t a = 0; a < labels.size(); ++a) {
      const int64_t d = shapes[i][static_cast<int>(a)];
      for (size_t b = 0; b < a; ++b) {
        const int64_t earlier = shapes[i][static_cast<int>(b)];
        KILN_CHECK(labels[b] != labels[a] || d == earlier || d < 0 || earlier < 0, ErrorCode::kShapeMismatch,
                   where, ": label ", label_name(labels[a]), " repeats over axes ", b, " and ", a,
                   " of different sizes in shape ", shapes[i]);
      }
      merge_size(plan.sizes[static_cast<size_t>(labels[a])], d, labels[a], where);
      ++uses[static_cast<size_t>(labels[a])];
    }
    plan.inputs.push_back(std::move(labels));
  }
  if (s.output) {
    bool has_ellipsis = false;
    for (int id : *s.output) {
      if (id == kEllipsis) {
        has_ellipsis = true;
        for (int e = 0; e < plan.ellipsis_rank; ++e) plan.output.push_back(kLetterLabels + e);
        continue;
      }
      KILN_CHECK(uses[static_cast<size_t>(id)] > 0, ErrorCode::kInvalidArgument,
                 "attribute 'equation': output label ", label_name(id), " is in no input term");
      KILN_CHECK(std::find(plan.output.begin(), plan.output.end(), id) == plan.output.end(),
                 ErrorCode::kInvalidArgument, "attribute 'equation': output label ", label_name(id),
                 " repeats");
      plan.output.push_back(id);
    }
    KILN_CHECK(has_ellipsis || plan.ellipsis_rank == 0, ErrorCode::kInvalidArgument,
               "attribute 'equation': the inputs' ellipses stand for ", plan.ellipsis_rank,
               " axes, but the output term '", term_text(*s.output), "' has no '...' to put them");
  } else {
    for (int e = 0; e < plan.ellipsis_rank; ++e) plan.output.push_back(kLetterLabels + e);
    for (int id = 0; id < kLetterLabels; ++id)
      if (uses[static_cast<size_t>(id)] == 1) plan.output.push_back(id);
  }
  return plan;
}

std::vector<TensorInfo> infer_einsum(InferContext& ctx) {
  std::vector<Shape> shapes;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    require_dtype(ctx, i, kEinsumDTypes);
    if (i) require_same_dtype(ctx, 0, i);
    shapes.push_back(ctx.shape(i));
  }
  const Subscripts s = parse_subscripts(ctx.attrs().get_string("equation"), "attribute 'equation'");
  const EinsumPlan plan = plan_einsum(s, shapes, [&ctx](int i) { return ctx.input_label(i); });
  std::vector<int64_t> dims;
  for (int label : plan.output) dims.push_back(plan.sizes[static_cast<size_t>(label)]);
  return {TensorInfo{ctx.dtype(0), Shape(dims)}};
}

// An operand during evaluation: a tensor (any strides) with a distinct label on every axis.
struct Term {
  Tensor tensor;
  std::vector<int> labels;
};

int axis_of(const Term& term, int label) {
  const auto it = std::find(term.labels.begin(), term.labels.end(), label);
  KILN_CHECK(it != term.labels.end(), ErrorCode::kInternal, "Einsum: label ", label_name(label),
             " is not on the operand");
  return static_cast<int>(it - term.labels.begin());
}

bool has_label(const Term& term, int label) {
  return std::find(term.labels.begin(), term.labels.end(), label) != term.labels.end();
}

// Merges the axes of a repeated label into one that walks their diagonal (a view).
Term take_diagonals(const Tensor& t, const std::vector<int>& labels) {
  Term term;
  std::vector<int64_t> dims, strides;
  for (size_t a = 0; a < labels.size(); ++a) {
    const int64_t stride = t.strides()[a];
    if (has_label(term, labels[a])) {
      strides[static_cast<size_t>(axis_of(term, labels[a]))] += stride;
      continue;
    }
    term.labels.push_back(labels[a]);
    dims.push_back(t.shape()[static_cast<int>(a)]);
    strides.push_back(stride);
  }
  term.tensor = term.labels.size() == labels.size() ? t : t.as_strided(Shape(dims), strides, t.offset());
  return term;
}

// The term with its axes in the order of `labels`, each of size sizes[label]: an axis of size 1
// is repeated (stride 0) when the size asked for is larger. A view.
Tensor arranged(const Term& term, const std::vector<int>& labels, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> dims, strides;
  for (int label : labels) {
    const int axis = axis_of(term, label);
    const int64_t own = term.tensor.shape()[axis];
    const int64_t size = sizes[static_cast<size_t>(label)];
    dims.push_back(size);
    strides.push_back(own == size ? term.tensor.strides()[static_cast<size_t>(axis)] : 0);
  }
  return term.tensor.as_strided(Shape(dims), strides, term.tensor.offset());
}

std::vector<int64_t> own_sizes(const Term& term, size_t num_labels) {
  std::vector<int64_t> sizes(num_labels, 1);
  for (size_t a = 0; a < term.labels.size(); ++a)
    sizes[static_cast<size_t>(term.labels[a])] = term.tensor.shape()[static_cast<int>(a)];
  return sizes;
}

int64_t product(const std::vector<int>& labels, const std::vector<int64_t>& sizes) {
  int64_t p = 1;
  for (int label : labels) p *= sizes[static_cast<size_t>(label)];
  return p;
}

// Integers sum in uint64 (wrapping, which after the final narrowing matches numpy's wrapping in
// the operand type); floats in compute_t.
template <class T>
using SumAccumulator = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_t<T>>;

// y[r] = sum of the `len` values of row r of x.
template <class T>
void sum_rows(const T* x, T* y, int64_t rows, int64_t len) {
  using A = SumAccumulator<T>;
  parallel_for(0, rows, std::max<int64_t>(1, gemm_detail::kTaskWork / std::max<int64_t>(len, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t r = b; r < e; ++r) {
                   A acc = 0;
                   const T* row = x + r * len;
                   for (int64_t j = 0; j < len; ++j) acc += static_cast<A>(static_cast<compute_t<T>>(row[j]));
                   y[r] = convert_value<T>(static_cast<compute_t<T>>(acc));
                 }
               });
}

// Sums out every label of the term that `keep` does not mark.
Term sum_out(const Term& term, const std::vector<bool>& keep) {
  std::vector<int> kept, dropped;
  for (int label : term.labels) (keep[static_cast<size_t>(label)] ? kept : dropped).push_back(label);
  if (dropped.empty()) return term;
  const std::vector<int64_t> sizes = own_sizes(term, keep.size());
  std::vector<int> order = kept;
  order.insert(order.end(), dropped.begin(), dropped.end());
  const Tensor x = arranged(term, order, sizes).contiguous();
  std::vector<int64_t> dims;
  for (int label : kept) dims.push_back(sizes[static_cast<size_t>(label)]);
  Term out{Tensor::empty(Shape(dims), x.dtype()), kept};
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>)
      sum_rows<T>(x.data<T>(), out.tensor.data<T>(), product(kept, sizes), product(dropped, sizes));
  });
  return out;
}

// Rows [r0, r1) of c = op(a) * op(b) (m x k times k x n; a is stored k x m when trans_a, b n x k
// when trans_b), each accumulated over the rows of op(b) in `acc`. The products the tiled GEMM
// does not take: integers, which accumulate in uint64 so that overflow wraps (narrowing then gives
// numpy's result in the operand type) instead of being undefined, and a handful of float outputs,
// where the GEMM's setup would cost more than the products.
template <class T>
void product_rows(bool trans_a, bool trans_b, int64_t r0, int64_t r1, int64_t m, int64_t n, int64_t k,
                  const T* a, const T* b, T* c, std::vector<SumAccumulator<T>>& acc) {
  using A = SumAccumulator<T>;
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
  acc.resize(static_cast<size_t>(n));
  for (int64_t r = r0; r < r1; ++r) {
    std::fill(acc.begin(), acc.end(), A(0));
    for (int64_t p = 0; p < k; ++p) {
      const A x = static_cast<A>(static_cast<compute_t<T>>(trans_a ? a[p * lda + r] : a[r * lda + p]));
      for (int64_t col = 0; col < n; ++col) {
        const T y = trans_b ? b[col * ldb + p] : b[p * ldb + col];
        acc[static_cast<size_t>(col)] += x * static_cast<A>(static_cast<compute_t<T>>(y));
      }
    }
    for (int64_t col = 0; col < n; ++col)
      c[r * n + col] = convert_value<T>(static_cast<compute_t<T>>(acc[static_cast<size_t>(col)]));
  }
}

// c[i] = op(a[i]) * op(b[i]) for i < batches, each m x k times k x n (see product_rows).
template <class T>
void batched_product(bool trans_a, bool trans_b, int64_t batches, int64_t m, int64_t n, int64_t k, const T* a,
                     const T* b, T* c) {
  using Rows = std::vector<SumAccumulator<T>>;
  const bool tiled = !std::is_integral_v<T> && m * n > 16;
  auto tiled_product = [&](int64_t i) {
    gemm_reference<T>(trans_a, trans_b, m, n, k, a + i * m * k, trans_a ? m : k, b + i * k * n,
                      trans_b ? k : n, c + i * m * n, n);
  };
  auto some_rows = [&](int64_t i, int64_t r0, int64_t r1, Rows& acc) {
    product_rows<T>(trans_a, trans_b, r0, r1, m, n, k, a + i * m * k, b + i * k * n, c + i * m * n, acc);
  };
  // Many products: one per task, each serial. Few: each splits its own rows.
  if (batches >= num_threads()) {
    parallel_for(0, batches, std::max<int64_t>(1, gemm_detail::kTaskWork / std::max<int64_t>(1, m * n * k)),
                 [&](int64_t first, int64_t last) {
                   Rows acc;
                   for (int64_t i = first; i < last; ++i) tiled ? tiled_product(i) : some_rows(i, 0, m, acc);
                 });
    return;
  }
  for (int64_t i = 0; i < batches; ++i) {
    if (tiled) {
      tiled_product(i);
      continue;
    }
    parallel_for(0, m, std::max<int64_t>(1, gemm_detail::kTaskWork / std::max<int64_t>(1, n * k)),
                 [&](int64_t r0, int64_t r1) {
                   Rows acc;
                   some_rows(i, r0, r1, acc);
                 });
  }
}

// Contracts two terms. Labels on both that `needed` marks (used later or by the output) are the
// batch; labels on both that it does not mark are summed over; the rest are rows (from a) and
// columns (from b). The result's axes are batch, rows, columns.
Term contract(const Term& a, const Term& b, const std::vector<bool>& needed) {
  std::vector<int> batch, summed, rows, cols;
  for (int label : a.labels) {
    if (!has_label(b, label)) {
      rows.push_back(label);
    } else {
      (needed[static_cast<size_t>(label)] ? batch : summed).push_back(label);
    }
  }
  for (int label : b.labels)
    if (!has_label(a, label)) cols.push_back(label);
  // A label's size on one side is 1 (it broadcasts) or the same as on the other.
  std::vector<int64_t> sizes = own_sizes(a, needed.size());
  for (size_t i = 0; i < b.labels.size(); ++i) {
    int64_t& size = sizes[static_cast<size_t>(b.labels[i])];
    if (!has_label(a, b.labels[i]) || size == 1) size = b.tensor.shape()[static_cast<int>(i)];
  }
  auto concat = [](std::vector<int> x, const std::vector<int>& y, const std::vector<int>& z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  // Either layout of each operand suits the product; the one it already has saves a copy.
  const bool trans_a = !arranged(a, concat(batch, rows, summed), sizes).is_contiguous() &&
                       arranged(a, concat(batch, summed, rows), sizes).is_contiguous();
  const bool trans_b = !arranged(b, concat(batch, summed, cols), sizes).is_contiguous() &&
                       arranged(b, concat(batch, cols, summed), sizes).is_contiguous();
  const Tensor pa =
      arranged(a, trans_a ? concat(batch, summed, rows) : concat(batch, rows, summed), sizes).contiguous();
  const Tensor pb =
      arranged(b, trans_b ? concat(batch, cols, summed) : concat(batch, summed, cols), sizes).contiguous();
  Term out;
  out.labels = concat(batch, rows, cols);
  std::vector<int64_t> dims;
  for (int label : out.labels) dims.push_back(sizes[static_cast<size_t>(label)]);
  out.tensor = Tensor::empty(Shape(dims), a.tensor.dtype());
  dispatch_dtype(pa.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>)
      batched_product<T>(trans_a, trans_b, product(batch, sizes), product(rows, sizes), product(cols, sizes),
                         product(summed, sizes), pa.data<T>(), pb.data<T>(), out.tensor.data<T>());
  });
  return out;
}

void einsum_kernel(KernelContext& ctx) {
  std::vector<Shape> shapes;
  for (const Tensor& t : ctx.inputs) shapes.push_back(t.shape());
  const Subscripts s = parse_subscripts(ctx.attrs.get_string("equation"), "attribute 'equation'");
  const EinsumPlan plan = plan_einsum(s, shapes, [](int i) { return "input " + std::to_string(i); });
  const size_t num_labels = plan.sizes.size();
  std::vector<Term> terms;
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    terms.push_back(take_diagonals(ctx.inputs[i], plan.inputs[i]));

  std::vector<bool> in_output(num_labels, false);
  for (int label : plan.output) in_output[static_cast<size_t>(label)] = true;
  std::vector<int> terms_using(num_labels, 0);
  for (const Term& t : terms)
    for (int label : t.labels) ++terms_using[static_cast<size_t>(label)];
  // Labels of one operand alone, absent from the output, are summed before any product.
  for (Term& t : terms) {
    std::vector<bool> keep = in_output;
    for (int label : t.labels)
      keep[static_cast<size_t>(label)] =
          keep[static_cast<size_t>(label)] || terms_using[static_cast<size_t>(label)] > 1;
    t = sum_out(t, keep);
  }
  Term result = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    std::vector<bool> needed = in_output;
    for (size_t later = i + 1; later < terms.size(); ++later)
      for (int label : terms[later].labels) needed[static_cast<size_t>(label)] = true;
    result = contract(result, terms[i], needed);
  }
  result = sum_out(result, in_output);
  ctx.output(0).copy_from(arranged(result, plan.output, plan.sizes));
}

KILN_REGISTER_OP(Einsum)
    .doc(
        "Einstein summation over the inputs as `equation` says (numpy.einsum semantics: ellipsis "
        "broadcasting, repeated letters for diagonals, implicit output when there is no '->').")
    .input("Inputs", Arity::kVariadic)
    .output("Output")
    .required_attr("equation", AttrType::kString, validate_equation)
    .infer(infer_einsum)
    .kernel(einsum_kernel);

}  // namespace
}  // namespace kiln::ops
