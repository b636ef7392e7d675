// ONNX's string ops: StringConcat (joins two string tensors, broadcasting), StringSplit (cuts each
// string at a delimiter or at runs of whitespace) and StringNormalizer (drops stop words, changes
// case); RegexFullMatch is in string_regex.cc. Strings are UTF-8; changing case and comparing
// without it touch ASCII letters only, as the "C" locale does.
//
// StringSplit's and StringNormalizer's output sizes depend on the strings, so their shape
// inference reads the input's value: the runtime runs them node by node (as every op on strings).
#include <algorithm>
#include <cctype>
#include <set>

#include "infer_util.h"

namespace kiln::ops {
namespace {

void require_strings(const InferContext& ctx, int i) {
  KILN_CHECK(is_string(ctx.dtype(i)), ErrorCode::kTypeMismatch, ctx.input_label(i),
             ": expected a string tensor, got ", dtype_name(ctx.dtype(i)));
}

const std::string* strings_of(const Tensor& t) {
  return t.data<std::string>();
}

// The flat index into `shape` (broadcast to `out`) of each flat index of `out`.
std::vector<int64_t> broadcast_index(const Shape& shape, const Shape& out) {
  const int rank = out.ndim(), offset = out.ndim() - shape.ndim();
  std::vector<int64_t> strides(static_cast<size_t>(rank), 0);
  int64_t stride = 1;
  for (int a = shape.ndim() - 1; a >= 0; --a) {
    if (shape[a] != 1) strides[static_cast<size_t>(a + offset)] = stride;
    stride *= shape[a];
  }
  std::vector<int64_t> index(static_cast<size_t>(out.numel()));
  std::vector<int64_t> at(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < index.size(); ++i) {
    int64_t flat = 0;
    for (int a = 0; a < rank; ++a) flat += at[static_cast<size_t>(a)] * strides[static_cast<size_t>(a)];
    index[i] = flat;
    for (int a = rank - 1; a >= 0; --a) {
      if (++at[static_cast<size_t>(a)] < out[a]) break;
      at[static_cast<size_t>(a)] = 0;
    }
  }
  return index;
}

KILN_REGISTER_OP(StringConcat)
    .doc("Each string of X followed by the string of Y at the same place, with broadcasting.")
    .input("X")
    .input("Y")
    .output("Z")
    .takes_strings()
    .infer([](InferContext& ctx) {
      require_strings(ctx, 0);
      require_strings(ctx, 1);
      return std::vector<TensorInfo>{
          {DType::kString, broadcast_shapes(ctx.shape(0), ctx.shape(1), "StringConcat")}};
    })
    .kernel([](KernelContext& ctx) {
      Tensor& z = ctx.output(0);
      const std::vector<int64_t> xi = broadcast_index(ctx.input(0).shape(), z.shape());
      const std::vector<int64_t> yi = broadcast_index(ctx.input(1).shape(), z.shape());
      const std::string *x = strings_of(ctx.input(0)), *y = strings_of(ctx.input(1));
      std::string* out = z.data<std::string>();
      for (size_t i = 0; i < xi.size(); ++i) out[i] = x[xi[i]] + y[yi[i]];
    });

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

// Python's str.split: at each `delimiter` (empty strings between neighbouring ones), or, with no
// delimiter, at runs of whitespace (none at either end); at most `max_splits` cuts (-1: all).
std::vector<std::string> split(const std::string& s, const std::string& delimiter, int64_t max_splits) {
  std::vector<std::string> pieces;
  if (!delimiter.empty()) {
    size_t start = 0;
    for (int64_t cuts = 0; max_splits < 0 || cuts < max_splits; ++cuts) {
      const size_t at = s.find(delimiter, start);
      if (at == std::string::npos) break;
      pieces.push_back(s.substr(start, at - start));
      start = at + delimiter.size();
    }
    pieces.push_back(s.substr(start));
    return pieces;
  }
  size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  while (i < s.size()) {
    if (max_splits >= 0 && static_cast<int64_t>(pieces.size()) == max_splits) {
      pieces.push_back(s.substr(i));  // the rest, as it is
      break;
    }
    size_t end = i;
    while (end < s.size() && !is_space(s[end])) ++end;
    pieces.push_back(s.substr(i, end - i));
    i = end;
    while (i < s.size() && is_space(s[i])) ++i;
  }
  return pieces;
}

std::vector<std::vector<std::string>> split_all(const Tensor& x, const Attrs& attrs) {
  const std::string delimiter = attrs.has("delimiter") ? attrs.get_string("delimiter") : std::string();
  const int64_t max_splits = attrs.has("maxsplit") ? attrs.get_int("maxsplit") : -1;
  std::vector<std::vector<std::string>> all;
  for (int64_t i = 0; i < x.numel(); ++i) all.push_back(split(strings_of(x)[i], delimiter, max_splits));
  return all;
}

size_t most_pieces(const std::vector<std::vector<std::string>>& all) {
  size_t most = 0;
  for (const auto& pieces : all) most = std::max(most, pieces.size());
  return most;
}

KILN_REGISTER_OP(StringSplit)
    .doc(
        "Each string cut at `delimiter` (at runs of whitespace when it is empty or not given), at most "
        "`maxsplit` times: Y holds the pieces along a new last axis, padded with empty strings; Z "
        "their number.")
    .input("X")
    .output("Y")
    .output("Z")
    .takes_strings()
    .data_dependent_shape()
    .optional_attr("delimiter", AttrType::kString)
    .optional_attr("maxsplit", AttrType::kInt,
                   [](const AttrValue& v, const std::string& what) {
                     KILN_CHECK(std::get<int64_t>(v.variant()) >= 0, ErrorCode::kInvalidArgument, what,
                                ": must be 0 or more");
                   })
    .infer([](InferContext& ctx) {
      require_strings(ctx, 0);
      const auto all = split_all(ctx.value(0).contiguous(), ctx.attrs());
      std::vector<int64_t> dims = ctx.shape(0).dims();
      const std::vector<int64_t> counts = dims;
      dims.push_back(static_cast<int64_t>(most_pieces(all)));
      return std::vector<TensorInfo>{{DType::kString, Shape(dims)}, {DType::kInt64, Shape(counts)}};
    })
    .kernel([](KernelContext& ctx) {
      const auto all = split_all(ctx.input(0), ctx.attrs);
      const size_t width = most_pieces(all);
      std::string* y = ctx.output(0).data<std::string>();
      int64_t* z = ctx.output(1).data<int64_t>();
      for (size_t i = 0; i < all.size(); ++i) {
        z[i] = static_cast<int64_t>(all[i].size());
        for (size_t k = 0; k < all[i].size(); ++k) y[i * width + k] = all[i][k];
      }
    });

std::string with_case(std::string s, const std::string& action) {
  if (action == "LOWER")
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (action == "UPPER")
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The strings StringNormalizer keeps (not stop words), their case changed.
std::vector<std::string> normalized(const Tensor& x, const Attrs& attrs) {
  const bool case_sensitive = attrs.get_int("is_case_sensitive") != 0;
  const auto key = [&](const std::string& s) { return case_sensitive ? s : with_case(s, "LOWER"); };
  std::set<std::string> stop;
  if (attrs.has("stopwords"))
    for (const std::string& w : attrs.get_strings("stopwords")) stop.insert(key(w));
  std::vector<std::string> kept;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::string& s = strings_of(x)[i];
    if (!stop.count(key(s))) kept.push_back(with_case(s, attrs.get_string("case_change_action")));
  }
  return kept;
}

// [C] or [1, C] -> the same rank, with C the strings kept: one empty string when none is.
Shape normalized_shape(const Shape& x, size_t kept) {
  const int64_t c = std::max<int64_t>(static_cast<int64_t>(kept), 1);
  return x.ndim() == 1 ? Shape{c} : Shape{1, c};
}

KILN_REGISTER_OP(StringNormalizer)
    .doc(
        "Drops the stop words (compared with or without case) from a [C] or [1, C] string tensor and "
        "changes the case of the rest (NONE, LOWER, UPPER); when nothing is left, one empty string.")
    .input("X")
    .output("Y")
    .takes_strings()
    .data_dependent_shape()
    .attr("case_change_action", AttrType::kString, std::string("NONE"),
          [](const AttrValue& v, const std::string& what) {
            const std::string& a = std::get<std::string>(v.variant());
            KILN_CHECK(a == "NONE" || a == "LOWER" || a == "UPPER", ErrorCode::kInvalidArgument, what,
                       ": expected NONE, LOWER or UPPER, got '", a, "'");
          })
    .attr("is_case_sensitive", AttrType::kInt, AttrValue(int64_t{0}))
    .optional_attr("locale", AttrType::kString,
                   [](const AttrValue& v, const std::string& what) {
                     // Case changes touch ASCII letters, which every one of these locales agrees on.
                     const std::string& l = std::get<std::string>(v.variant());
                     KILN_CHECK(
                         l.empty() || l == "C" || l == "POSIX" || l.rfind("en_", 0) == 0,
                         ErrorCode::kUnsupported, what, ": locale '", l,
                         "' is not supported; Kiln changes the case of ASCII letters (C and en_* locales)");
                   })
    .optional_attr("stopwords", AttrType::kStrings)
    .infer([](InferContext& ctx) {
      require_strings(ctx, 0);
      const Shape& x = ctx.shape(0);
      KILN_CHECK(x.ndim() == 1 || (x.ndim() == 2 && x[0] == 1), ErrorCode::kShapeMismatch, ctx.input_label(0),
                 ": expected shape [C] or [1, C], got ", x);
      return std::vector<TensorInfo>{
          {DType::kString, normalized_shape(x, normalized(ctx.value(0).contiguous(), ctx.attrs()).size())}};
    })
    .kernel([](KernelContext& ctx) {
      const std::vector<std::string> kept = normalized(ctx.input(0), ctx.attrs);
      std::string* y = ctx.output(0).data<std::string>();
      for (size_t i = 0; i < kept.size(); ++i) y[i] = kept[i];
    });

}  // namespace
}  // namespace kiln::ops
