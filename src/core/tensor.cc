#include "kiln/tensor.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "kiln/error.hpp"
#include "storage_types.h"
#include "strided_copy.h"
#include "thread_pool.h"

namespace kiln {

namespace {
// contiguous_strides, kept inline in Dims (no heap allocation for up to Dims::kInline axes).
Dims row_major_strides(const Shape& shape) {
  Dims strides(static_cast<size_t>(shape.ndim()), 0);
  uint64_t s = 1;  // unsigned, as in contiguous_strides: empty tensors' strides must not overflow
  for (int i = shape.ndim() - 1; i >= 0; --i) {
    strides[static_cast<size_t>(i)] = static_cast<int64_t>(s);
    s *= static_cast<uint64_t>(std::max<int64_t>(shape[i], 1));
  }
  return strides;
}
// A string tensor's storage: `count` empty std::strings constructed in place, destroyed with it.
std::shared_ptr<Storage> string_storage(int64_t count, Device device) {
  KILN_CHECK(device.is_cpu(), ErrorCode::kUnsupported, "string tensors live on the CPU, not on ", device);
  auto* strings = new std::string[static_cast<size_t>(count)];
  return Storage::wrap(strings, static_cast<size_t>(count) * sizeof(std::string), device,
                       [](void* p) { delete[] static_cast<std::string*>(p); });
}

// dst = src element by element, each side with its own strides (strings are objects: no memcpy).
void copy_strings(std::string* dst, const Dims& dst_strides, const std::string* src, const Dims& src_strides,
                  const Shape& shape) {
  const int rank = shape.ndim();
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  for (int64_t i = 0, n = shape.numel(); i < n; ++i) {
    int64_t d = 0, s = 0;
    for (int a = 0; a < rank; ++a) {
      d += index[static_cast<size_t>(a)] * dst_strides[static_cast<size_t>(a)];
      s += index[static_cast<size_t>(a)] * src_strides[static_cast<size_t>(a)];
    }
    dst[d] = src[s];
    for (int a = rank - 1; a >= 0; --a) {
      if (++index[static_cast<size_t>(a)] < shape[a]) break;
      index[static_cast<size_t>(a)] = 0;
    }
  }
}

}  // namespace

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype, Dims strides, int64_t offset)
    : storage_(std::move(storage)),
      shape_(std::move(shape)),
      dtype_(dtype),
      strides_(std::move(strides)),
      offset_(offset) {
  KILN_CHECK(shape_.is_known(), ErrorCode::kShapeMismatch, "Tensor: shape ", shape_,
             " has unknown dimensions");
  if (strides_.empty() && shape_.ndim() > 0) strides_ = row_major_strides(shape_);
  KILN_CHECK(static_cast<int>(strides_.size()) == shape_.ndim(), ErrorCode::kInternal,
             "Tensor: ", strides_.size(), " strides for shape ", shape_);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  KILN_CHECK(shape.is_known(), ErrorCode::kShapeMismatch, "Tensor::empty: shape ", shape,
             " has unknown dimensions");
  if (is_string(dtype)) return Tensor(string_storage(shape.numel(), device), shape, dtype);
  const size_t nbytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  return Tensor(Storage::allocate(nbytes, device), shape, dtype);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (is_string(dtype)) return t;                            // empty strings
  if (t.nbytes()) std::memset(t.raw_data(), 0, t.nbytes());  // all-zero bits are 0 in every dtype
  return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = convert_value<T>(value);
    T* p = t.data<T>();
    parallel_for(0, t.numel(), 1 << 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = v;
    });
  });
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) {
  Tensor t(Storage::small_host(dtype_size(dtype)), Shape{}, dtype);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *t.data<T>() = convert_value<T>(value);
  });
  return t;
}

bool Tensor::is_contiguous() const {
  // An empty tensor has no element out of place (and the product of its other dimensions may
  // exceed int64, as contiguous_strides allows).
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[static_cast<size_t>(i)] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

Tensor Tensor::sequence(DType element_dtype, std::vector<Tensor> elements) {
  for (size_t i = 0; i < elements.size(); ++i) {
    const Tensor& e = elements[i];
    KILN_CHECK(e.defined() && !e.is_sequence(), ErrorCode::kInvalidArgument, "Tensor::sequence: element ", i,
               " is ", e.is_sequence() ? "a sequence" : "undefined", "; a sequence holds tensors");
    KILN_CHECK(e.dtype() == element_dtype, ErrorCode::kTypeMismatch, "Tensor::sequence: element ", i, " is ",
               dtype_name(e.dtype()), ", the sequence holds ", dtype_name(element_dtype));
  }
  Tensor t;
  t.dtype_ = element_dtype;
  t.shape_ = Shape{0};
  t.strides_ = Dims(1, 1);
  t.elements_ = std::make_shared<const std::vector<Tensor>>(std::move(elements));
  return t;
}

const std::vector<Tensor>& Tensor::elements() const {
  KILN_CHECK(elements_ != nullptr, ErrorCode::kTypeMismatch, "Tensor::elements: a ",
             defined() ? "tensor" : "undefined tensor", " is not a sequence");
  return *elements_;
}

void* Tensor::raw_data() const {
  KILN_CHECK(storage_ != nullptr, ErrorCode::kInvalidArgument, "Tensor: ",
             is_sequence() ? "a sequence has no data of its own; its elements() have"
                           : "reading data of an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize());
}

double Tensor::item() const {
  KILN_CHECK(numel() == 1, ErrorCode::kShapeMismatch, "Tensor::item: expected one element, got shape ",
             shape_);
  return dispatch_dtype(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return convert_value<double>(*static_cast<const T*>(raw_data()));
  });
}

void Tensor::check_dtype(DType expected, const std::string& what) const {
  KILN_CHECK(dtype_ == expected, ErrorCode::kTypeMismatch, what, ": expected dtype ", dtype_name(expected),
             ", got ", dtype_name(dtype_));
}

Tensor Tensor::reshape(const Shape& shape) const {
  KILN_CHECK(shape.numel() == numel(), ErrorCode::kShapeMismatch, "reshape: cannot view shape ", shape_, " (",
             numel(), " elements) as ", shape, " (", shape.numel(), " elements)");
  KILN_CHECK(is_contiguous(), ErrorCode::kInvalidArgument,
             "reshape: a view needs a contiguous tensor; shape ", shape_,
             " has strides that are not row-major (call contiguous() first)");
  return Tensor(storage_, shape, dtype_, {}, offset_);
}

Tensor Tensor::slice(int64_t axis, int64_t begin, int64_t end, int64_t step) const {
  const int a = normalize_axis(axis, ndim(), "slice");
  KILN_CHECK(step > 0, ErrorCode::kInvalidArgument, "slice: step must be positive, got ", step);
  const int64_t dim = shape_[a];
  auto clamp = [dim](int64_t i) { return std::min(std::max(i < 0 ? i + dim : i, int64_t{0}), dim); };
  begin = clamp(begin);
  end = std::max(clamp(end), begin);
  Shape shape = shape_;
  shape[a] = (end - begin + step - 1) / step;
  Dims strides = strides_;
  strides[static_cast<size_t>(a)] *= step;
  return Tensor(storage_, shape, dtype_, strides, offset_ + begin * strides_[static_cast<size_t>(a)]);
}

Tensor Tensor::transpose(const std::vector<int64_t>& perm) const {
  KILN_CHECK(static_cast<int>(perm.size()) == ndim(), ErrorCode::kInvalidArgument, "transpose: perm has ",
             perm.size(), " entries for a tensor of rank ", ndim());
  std::vector<bool> seen(perm.size(), false);
  std::vector<int64_t> dims(perm.size()), strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const int p = normalize_axis(perm[i], ndim(), "transpose");
    KILN_CHECK(!seen[static_cast<size_t>(p)], ErrorCode::kInvalidArgument, "transpose: axis ", p,
               " appears twice in perm");
    seen[static_cast<size_t>(p)] = true;
    dims[i] = shape_[p];
    strides[i] = strides_[static_cast<size_t>(p)];
  }
  return Tensor(storage_, Shape(dims), dtype_, strides, offset_);
}

Tensor Tensor::as_strided(const Shape& shape, Dims strides, int64_t offset) const {
  return Tensor(storage_, shape, dtype_, std::move(strides), offset);
}

Tensor Tensor::contiguous() const {
  if (!defined() || is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  if (!defined()) return *this;
  if (is_sequence()) {
    std::vector<Tensor> copies;
    for (const Tensor& e : *elements_) copies.push_back(e.clone());
    return sequence(dtype_, std::move(copies));
  }
  Tensor out = empty(shape_, dtype_, device());
  out.copy_from(*this);
  return out;
}

void Tensor::copy_from(const Tensor& src) {
  KILN_CHECK(!is_sequence() && !src.is_sequence(), ErrorCode::kTypeMismatch,
             "copy_from: a sequence is not copied into a tensor or from one");
  KILN_CHECK(src.shape() == shape_, ErrorCode::kShapeMismatch, "copy_from: source shape ", src.shape(),
             " differs from destination shape ", shape_);
  KILN_CHECK(src.dtype() == dtype_, ErrorCode::kTypeMismatch, "copy_from: source dtype ", src.dtype(),
             " differs from destination dtype ", dtype_);
  KILN_CHECK(src.device().is_cpu() && device().is_cpu(), ErrorCode::kUnsupported,
             "copy_from: copies between ", src.device(), " and ", device(), " need the CUDA backend");
  if (numel() == 0) return;
  if (is_string(dtype_)) {
    copy_strings(data<std::string>(), strides_, src.data<std::string>(), src.strides(), shape_);
    return;
  }
  if (is_contiguous() && src.is_contiguous()) {
    std::memcpy(raw_data(), src.raw_data(), nbytes());
    return;
  }
  copy_strided(static_cast<char*>(raw_data()), strides_, static_cast<const char*>(src.raw_data()),
               src.strides(), shape_.dims(), itemsize());
}

namespace {

// A storage type's elements as the int64 (its integers) or float64 (its floats) values they hold,
// exactly.
Tensor widen_storage(const Tensor& src) {
  const bool integer = !is_storage_float(src.dtype());
  Tensor out = Tensor::empty(src.shape(), integer ? DType::kInt64 : DType::kFloat64, src.device());
  const auto* s = static_cast<const uint8_t*>(src.raw_data());
  parallel_for(0, src.numel(), 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const double v = storage_to_double(src.dtype(), s[i]);
      if (integer)
        out.data<int64_t>()[i] = static_cast<int64_t>(v);
      else
        out.data<double>()[i] = v;
    }
  });
  return out;
}

// Into a storage type: integers into a storage integer keep their low bits (as integer casts
// do); everything else goes through its exact float64 value.
void narrow_into_storage(const Tensor& src, Tensor& out, const CastOptions& options) {
  const DType to = out.dtype();
  auto* d = static_cast<uint8_t*>(out.raw_data());
  const bool from_integer = src.dtype() == DType::kBool || is_integral(src.dtype()) ||
                            (is_storage_type(src.dtype()) && !is_storage_float(src.dtype()));
  if (!is_storage_float(to) && from_integer) {
    const Tensor values = src.cast(DType::kInt64);
    const int64_t* v = values.data<int64_t>();
    parallel_for(0, src.numel(), 1 << 15, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) d[i] = storage_int_from_integer(to, v[i]);
    });
    return;
  }
  const Tensor values = src.cast(DType::kFloat64);
  const double* v = values.data<double>();
  parallel_for(0, src.numel(), 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      d[i] = is_storage_float(to) ? storage_float_from_double(to, v[i], options)
                                  : storage_int_from_double(to, v[i]);
  });
}

// Text to numbers: each string read as strtod reads a float ("NaN", "INF", "+INF", "-INF" too) or
// strtoll / strtoull an integer; a string that is not a number is an error naming its element.
Tensor parse_strings(const Tensor& src, DType to) {
  const bool integer = is_integral(to) || to == DType::kBool;
  const bool is_unsigned =
      to == DType::kUInt8 || to == DType::kUInt16 || to == DType::kUInt32 || to == DType::kUInt64;
  Tensor values = Tensor::empty(src.shape(), integer && is_unsigned ? DType::kUInt64
                                             : integer              ? DType::kInt64
                                                                    : DType::kFloat64);
  const std::string* s = src.data<std::string>();
  for (int64_t i = 0; i < src.numel(); ++i) {
    const char* begin = s[i].c_str();
    char* end = nullptr;
    if (!integer) {
      values.data<double>()[i] = std::strtod(begin, &end);
    } else if (is_unsigned) {
      values.data<uint64_t>()[i] = std::strtoull(begin, &end, 10);
    } else {
      values.data<int64_t>()[i] = std::strtoll(begin, &end, 10);
    }
    KILN_CHECK(end != begin && *end == '\0', ErrorCode::kInvalidArgument, "Cast: element ", i, " '", s[i],
               "' is not ", integer ? "an integer" : "a number");
  }
  return values.cast(to);
}

// A number as text: a float by its shortest form that reads back the same ("0.039187793"; "NaN",
// "INF", "-INF"), an integer in decimal, a bool as 1 or 0.
template <class T>
std::string format_number(T v) {
  if constexpr (std::is_floating_point_v<compute_t<T>>) {
    const compute_t<T> x = static_cast<compute_t<T>>(v);
    if (std::isnan(x)) return "NaN";
    if (std::isinf(x)) return x > 0 ? "INF" : "-INF";
    char text[64];
    const auto written = std::to_chars(text, text + sizeof(text), x);
    return std::string(text, written.ptr);
  } else {
    return std::to_string(+v);
  }
}

Tensor format_numbers(const Tensor& src) {
  const Tensor values = is_storage_type(src.dtype()) ? widen_storage(src) : src;
  Tensor out = Tensor::empty(src.shape(), DType::kString);
  std::string* d = out.data<std::string>();
  dispatch_dtype(values.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = values.data<T>();
    for (int64_t i = 0; i < values.numel(); ++i) d[i] = format_number(v[i]);
  });
  return out;
}

// A contiguous complex tensor read as its parts: its real type with a trailing axis of 2 (real,
// imaginary), sharing its storage.
Tensor complex_parts(const Tensor& c) {
  std::vector<int64_t> dims(c.shape().begin(), c.shape().end());
  dims.push_back(2);
  return Tensor(c.storage(), Shape(std::move(dims)),
                c.dtype() == DType::kComplex64 ? DType::kFloat32 : DType::kFloat64, {}, c.offset() * 2);
}

// Into a complex type: a complex number's parts convert one by one; a real number becomes the
// real part, with an imaginary part of 0.
Tensor cast_to_complex(const Tensor& src, DType to) {
  Tensor out = Tensor::zeros(src.shape(), to, src.device());
  Tensor parts = complex_parts(out);
  if (is_complex(src.dtype())) {
    parts.copy_from(complex_parts(src).cast(parts.dtype()));
    return out;
  }
  std::vector<int64_t> column(src.shape().begin(), src.shape().end());
  column.push_back(1);
  parts.slice(src.ndim(), 0, 1).copy_from(src.cast(parts.dtype()).reshape(Shape(std::move(column))));
  return out;
}

}  // namespace

Tensor Tensor::cast(DType dtype, const CastOptions& options) const {
  KILN_CHECK(is_castable(dtype_, dtype), ErrorCode::kTypeMismatch, "Tensor::cast: ", dtype_name(dtype_),
             " does not convert to ", dtype_name(dtype),
             is_complex(dtype_) ? " (it would drop the imaginary part)" : "");
  if (dtype == dtype_) return clone();
  const Tensor src = contiguous();
  if (is_complex(dtype)) return cast_to_complex(src, dtype);
  if (is_string(dtype_)) return parse_strings(src, dtype);
  if (is_string(dtype)) return format_numbers(src);
  if (is_storage_type(dtype_) && !is_storage_type(dtype)) return widen_storage(src).cast(dtype);
  Tensor out = empty(shape_, dtype, device());
  if (is_storage_type(dtype)) {
    narrow_into_storage(src, out, options);
    return out;
  }
  dispatch_dtype(dtype_, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    dispatch_dtype(dtype, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* s = src.data<From>();
      To* d = out.data<To>();
      parallel_for(0, numel(), 1 << 15, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) d[i] = convert_value<To>(s[i]);
      });
    });
  });
  return out;
}

namespace {

// numpy-style nested brackets. Arrays with more than `max_elements` elements show the first and
// last three entries of each axis with "..." between.
template <class T>
void print_values(std::ostream& os, const T* data, const Shape& shape, int axis, int64_t offset,
                  const Dims& strides, bool summarize) {
  const int64_t n = shape[axis];
  auto print_one = [&](int64_t i) {
    if (axis + 1 == shape.ndim()) {
      const T v = data[offset + i * strides[static_cast<size_t>(axis)]];
      if constexpr (std::is_same_v<T, bool>) {
        os << (v ? "true" : "false");
      } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
        os << static_cast<int>(v);
      } else {
        os << static_cast<compute_t<T>>(v);
      }
    } else {
      print_values(os, data, shape, axis + 1, offset + i * strides[static_cast<size_t>(axis)], strides,
                   summarize);
    }
  };
  // Innermost values are separated by a space; rows by a newline and the indent of their depth.
  std::string separator = " ";
  if (axis + 1 < shape.ndim()) {
    separator = "\n";
    separator.append(static_cast<size_t>(axis + 1), ' ');
  }
  os << '[';
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 6 && i == 3) {
      os << "..." << separator;
      i = n - 3;
    }
    print_one(i);
    if (i + 1 < n) os << separator;
  }
  os << ']';
}

}  // namespace

std::string Tensor::to_string(int64_t max_elements) const {
  std::ostringstream os;
  if (!defined()) return "<Tensor undefined>";
  if (is_string(dtype_)) {
    const Tensor c = contiguous();
    os << '[';
    for (int64_t i = 0; i < std::min(numel(), max_elements); ++i)
      os << (i ? " '" : "'") << c.data<std::string>()[i] << "'";
    os << (numel() > max_elements ? " ...]" : "]") << "\n<Tensor " << shape_ << " string>";
    return os.str();
  }
  if (is_sequence()) {
    os << "[";
    for (size_t i = 0; i < elements_->size(); ++i)
      os << (i ? ",\n" : "") << (*elements_)[i].to_string(max_elements);
    os << "]\n<sequence of " << elements_->size() << ' ' << dtype_name(dtype_) << " tensors>";
    return os.str();
  }
  // Storage types print as the numbers they hold, complex numbers as (real,imaginary).
  const Tensor c = is_storage_type(dtype_) ? widen_storage(contiguous()) : contiguous();
  const auto print = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (ndim() == 0) {
      os << static_cast<compute_t<T>>(*c.data<T>());
    } else if (numel() == 0) {
      os << "[]";
    } else {
      print_values(os, c.data<T>(), shape_, 0, 0, c.strides(), numel() > max_elements);
    }
  };
  if (dtype_ == DType::kComplex64) {
    print(TypeTag<std::complex<float>>{});
  } else if (dtype_ == DType::kComplex128) {
    print(TypeTag<std::complex<double>>{});
  } else {
    dispatch_dtype(c.dtype(), print);
  }
  os << "\n<Tensor " << shape_ << ' ' << dtype_name(dtype_) << '>';
  return os.str();
}

}  // namespace kiln
