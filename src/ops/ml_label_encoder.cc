// ONNX-ML's LabelEncoder: maps each element of X (strings, integers or floats) through a table of
// keys and values given as attributes (keys_strings / keys_int64s / keys_floats / keys_tensor, the
// same for values), to the default for a key not in the table. The ONNX importer maps the
// ai.onnx.ml domain's node to it (frontends/onnx/domains.h).
#include <bit>
#include <cmath>
#include <unordered_map>

#include "infer_util.h"

namespace kiln::ops {
namespace {

// The one attribute of `kind` ("keys" or "values") that holds the table's column, as a tensor.
Tensor column(const Attrs& attrs, const std::string& kind) {
  std::vector<Tensor> given;
  if (attrs.has(kind + "_tensor")) given.push_back(attrs.get_tensor(kind + "_tensor").contiguous());
  if (attrs.has(kind + "_strings")) {
    const auto& v = attrs.get_strings(kind + "_strings");
    Tensor t = Tensor::empty(Shape{static_cast<int64_t>(v.size())}, DType::kString);
    std::copy(v.begin(), v.end(), t.data<std::string>());
    given.push_back(t);
  }
  if (attrs.has(kind + "_int64s")) {
    const auto& v = attrs.get_ints(kind + "_int64s");
    given.push_back(Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}));
  }
  if (attrs.has(kind + "_floats")) {
    std::vector<float> v;
    for (double d : attrs.get_floats(kind + "_floats")) v.push_back(static_cast<float>(d));
    given.push_back(Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}));
  }
  KILN_CHECK(given.size() == 1, ErrorCode::kInvalidArgument, "expected exactly one of ", kind, "_strings, ",
             kind, "_int64s, ", kind, "_floats and ", kind, "_tensor, got ", given.size());
  return given.front();
}

// What a value of `dtype` maps to when its key is missing: default_tensor, else the default
// attribute of its type (ONNX's defaults: "_Unused", -1, -0.0).
Tensor default_value(const Attrs& attrs, DType dtype) {
  if (attrs.has("default_tensor")) return attrs.get_tensor("default_tensor").contiguous().reshape(Shape{});
  Tensor t = Tensor::empty(Shape{}, dtype);
  if (is_string(dtype)) {
    t.data<std::string>()[0] = attrs.has("default_string") ? attrs.get_string("default_string") : "_Unused";
  } else if (dtype == DType::kInt64) {
    t.data<int64_t>()[0] = attrs.has("default_int64") ? attrs.get_int("default_int64") : -1;
  } else {
    return Tensor::scalar(attrs.has("default_float") ? attrs.get_float("default_float") : -0.0, dtype);
  }
  return t;
}

// A column's elements as table keys: strings as they are, integers in decimal, floats by the bits
// of their float64 value (so -0.0 and 0.0 differ, as keys say them; every NaN is one key).
std::vector<std::string> keys_of(const Tensor& t) {
  std::vector<std::string> keys;
  if (is_string(t.dtype())) {
    const Tensor c = t.contiguous();
    keys.assign(c.data<std::string>(), c.data<std::string>() + c.numel());
  } else if (is_integral(t.dtype())) {
    for (int64_t v : t.cast(DType::kInt64).to_vector<int64_t>()) keys.push_back(std::to_string(v));
  } else {
    for (double v : t.cast(DType::kFloat64).to_vector<double>())
      keys.push_back(std::isnan(v) ? std::string("nan") : std::to_string(std::bit_cast<uint64_t>(v)));
  }
  return keys;
}

KILN_REGISTER_OP(LabelEncoder)
    .doc("Each element of X replaced by the value its key has in the table, or the default.")
    .input("X")
    .output("Y")
    .takes_strings()
    .optional_attr("keys_strings", AttrType::kStrings)
    .optional_attr("keys_int64s", AttrType::kInts)
    .optional_attr("keys_floats", AttrType::kFloats)
    .optional_attr("keys_tensor", AttrType::kTensor)
    .optional_attr("values_strings", AttrType::kStrings)
    .optional_attr("values_int64s", AttrType::kInts)
    .optional_attr("values_floats", AttrType::kFloats)
    .optional_attr("values_tensor", AttrType::kTensor)
    .optional_attr("default_string", AttrType::kString)
    .optional_attr("default_int64", AttrType::kInt)
    .optional_attr("default_float", AttrType::kFloat)
    .optional_attr("default_tensor", AttrType::kTensor)
    .infer([](InferContext& ctx) {
      const Tensor keys = column(ctx.attrs(), "keys"), values = column(ctx.attrs(), "values");
      KILN_CHECK(keys.numel() == values.numel(), ErrorCode::kInvalidArgument, keys.numel(), " keys but ",
                 values.numel(), " values");
      KILN_CHECK(is_string(keys.dtype()) == is_string(ctx.dtype(0)), ErrorCode::kTypeMismatch,
                 ctx.input_label(0), " is ", dtype_name(ctx.dtype(0)), " but the keys are ",
                 dtype_name(keys.dtype()));
      KILN_CHECK(default_value(ctx.attrs(), values.dtype()).dtype() == values.dtype(),
                 ErrorCode::kTypeMismatch, "default_tensor is not of the values' type ",
                 dtype_name(values.dtype()));
      return std::vector<TensorInfo>{{values.dtype(), ctx.shape(0)}};
    })
    .kernel([](KernelContext& ctx) {
      const std::vector<std::string> keys = keys_of(column(ctx.attrs, "keys").cast(ctx.input(0).dtype()));
      std::unordered_map<std::string, int64_t> row;
      for (size_t k = 0; k < keys.size(); ++k) row.emplace(keys[k], static_cast<int64_t>(k));
      const Tensor values = column(ctx.attrs, "values");
      const Tensor fallback = default_value(ctx.attrs, values.dtype());
      const std::vector<std::string> wanted = keys_of(ctx.input(0));
      Tensor& y = ctx.output(0);
      for (size_t i = 0; i < wanted.size(); ++i) {
        const auto it = row.find(wanted[i]);
        const Tensor from =
            it == row.end() ? fallback : values.slice(0, it->second, it->second + 1).reshape(Shape{});
        Tensor(y.storage(), Shape{}, y.dtype(), {}, y.offset() + static_cast<int64_t>(i)).copy_from(from);
      }
    });

}  // namespace
}  // namespace kiln::ops
