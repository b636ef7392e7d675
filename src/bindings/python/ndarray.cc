// NDArray bindings: the array class (properties, arithmetic with broadcasting, in-place ops,
// indexing, copies to and from numpy) and the op functions kiln.nd builds on. The GIL is released
// whenever Kiln works: pushing ops, waiting for them, copying values.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <sstream>
#include <string>

#include <kiln/kiln.hpp>
#include <kiln/mxnet_format.hpp>

#include "bindings.h"
#include "dlpack.h"
#include "small_calls.h"

namespace kiln::python {

namespace {

using Release = py::call_guard<py::gil_scoped_release>;

// `a op b`, with the GIL released unless the call is small.
template <class Other, class Op>
auto arithmetic(Op op) {
  return [op](const NDArray& a, const Other& b) {
    if (is_small(a, b)) return op(a, b);
    py::gil_scoped_release release;
    return op(a, b);
  };
}

// `x += y` and the like: writes into x's storage and returns x itself, as MXNet does (Python binds
// the name to what __iadd__ returns; a new wrapper would cost an allocation and an NDArray copy on
// every in-place statement).
template <class Other, class Op>
auto in_place(Op op) {
  return [op](const py::object& self, const Other& other) {
    NDArray& a = self.cast<NDArray&>();
    if (is_small(a, other)) {
      op(a, other);
    } else {
      py::gil_scoped_release release;
      op(a, other);
    }
    return self;  // copying a Python reference needs the GIL back
  };
}

NDArray from_numpy(const py::array& array, Device device) {
  const DType dtype = dtype_from_py(array.dtype());
  KILN_CHECK(array.flags() & py::array::c_style, ErrorCode::kInvalidArgument,
             "nd.array: the numpy array must be C-contiguous");
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  Tensor t = Tensor::empty(Shape(std::move(dims)), dtype, device);
  {
    py::gil_scoped_release release;
    if (t.nbytes()) std::memcpy(t.raw_data(), array.data(), t.nbytes());
  }
  return NDArray(std::move(t));
}

// A copy of the values; bfloat16, which numpy lacks, comes out as float32.
py::array to_numpy(const NDArray& a) {
  Tensor t;
  {
    py::gil_scoped_release release;
    t = (a.dtype() == DType::kBFloat16 ? a.astype(DType::kFloat32) : a).tensor().contiguous();
  }
  std::vector<py::ssize_t> dims(t.shape().begin(), t.shape().end());
  py::array out(py::dtype(dtype_name(t.dtype())), dims);
  if (t.nbytes()) std::memcpy(out.mutable_data(), t.raw_data(), t.nbytes());
  return out;
}

NDArray scalar_like(const NDArray& a, double value) {
  return nd::scalar(value, a.dtype());
}

// Python's % (ONNX Mod needs fmod for floats).
NDArray mod(const NDArray& a, const NDArray& b) {
  return nd::invoke1("Mod", {a, b}, {{"fmod", is_floating(a.dtype()) ? 1 : 0}});
}

// MXNet's comparisons give 0/1 in the inputs' dtype.
NDArray compare(const char* op, const NDArray& a, const NDArray& b) {
  return nd::cast(nd::invoke1(op, {a, b}), a.dtype());
}

std::vector<int64_t> axes_from_py(const py::object& axis, int ndim, bool exclude) {
  std::vector<int64_t> axes;
  if (!axis.is_none()) {
    if (py::isinstance<py::int_>(axis)) {
      axes.push_back(axis.cast<int64_t>());
    } else {
      for (const py::handle a : axis) axes.push_back(a.cast<int64_t>());
    }
  }
  for (auto& a : axes) a = normalize_axis(a, ndim, "reduce: axis");
  if (!exclude) return axes;
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < ndim; ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) kept.push_back(i);
  return kept;
}

// A reduction over `axis` (None: all axes; `exclude`: all but those), as MXNet's sum/mean/...;
// reducing every axis gives shape (1,), as in MXNet.
NDArray reduce(const std::string& op, const NDArray& x, const py::object& axis, bool keepdims, bool exclude) {
  std::vector<int64_t> axes = axes_from_py(axis, x.ndim(), exclude);
  if (axes.empty() && (exclude || x.ndim() == 0)) return x.copy();
  py::gil_scoped_release release;
  std::vector<NDArray> inputs{x};
  if (!axes.empty()) inputs.push_back(nd::array(axes, Shape{static_cast<int64_t>(axes.size())}));
  const NDArray out = nd::invoke1(op, inputs, {{"keepdims", keepdims}});
  return out.ndim() == 0 ? out.reshape(Shape{1}) : out;  // MXNet 1.x has no 0-d arrays
}

// One step of basic indexing: what an int or slice does to the current axis.
struct IndexedView {
  NDArray view;   // the indexed region, with every indexed axis kept (size 1 for ints)
  Shape dropped;  // its shape without the axes indexed by ints
  bool drops_axes = false;
  // Axes of `view` sliced with a negative step: `view` holds their elements in increasing order
  // (a positive-step view of the same elements), which the key reverses.
  std::vector<int64_t> reversed;
};

NDArray int64_vector(const std::vector<int64_t>& values) {
  return nd::array(values, Shape{static_cast<int64_t>(values.size())});
}

// `x` with the order along `axes` reversed (a copy: ONNX Slice with step -1).
NDArray reverse_axes(const NDArray& x, const std::vector<int64_t>& axes) {
  const auto n = axes.size();
  return nd::invoke1("Slice", {x, int64_vector(std::vector<int64_t>(n, -1)),
                               int64_vector(std::vector<int64_t>(n, std::numeric_limits<int64_t>::min())),
                               int64_vector(axes), int64_vector(std::vector<int64_t>(n, -1))});
}

IndexedView basic_index(const NDArray& a, const py::object& key) {
  py::tuple items = py::isinstance<py::tuple>(key) ? key.cast<py::tuple>() : py::make_tuple(key);
  KILN_CHECK(static_cast<int>(items.size()) <= a.ndim(), ErrorCode::kOutOfRange,
             "NDArray indexing: ", items.size(), " indices for an array of ", a.ndim(), " dimensions");
  IndexedView out{a, Shape{}, false};
  std::vector<int64_t> kept_dims;
  for (int axis = 0; axis < a.ndim(); ++axis) {
    const int64_t n = a.shape()[axis];
    if (axis >= static_cast<int>(items.size())) {
      kept_dims.push_back(n);
      continue;
    }
    const py::handle item = items[static_cast<size_t>(axis)];
    if (py::isinstance<py::slice>(item)) {
      py::ssize_t start = 0, stop = 0, step = 0, length = 0;
      if (!item.cast<py::slice>().compute(static_cast<py::ssize_t>(n), &start, &stop, &step, &length))
        throw py::error_already_set();
      if (step < 0) {
        // start, start + step, ...: the same elements as a positive step from the last one.
        const py::ssize_t lowest = length > 0 ? start + (length - 1) * step : 0;
        out.view = out.view.slice(axis, lowest, length > 0 ? start + 1 : 0, -step);
        out.reversed.push_back(axis);
      } else if (start != 0 || length != n || step != 1) {
        out.view = out.view.slice(axis, start, start + (length - 1) * step + 1, step);
      }
      kept_dims.push_back(length);
    } else {
      int64_t index = item.cast<int64_t>();
      KILN_CHECK(index >= -n && index < n, ErrorCode::kOutOfRange, "NDArray indexing: index ", index,
                 " is out of range for axis ", axis, " of size ", n);
      if (index < 0) index += n;
      out.view = out.view.slice(axis, index, index + 1);
      out.drops_axes = true;
    }
  }
  out.dropped = Shape(std::move(kept_dims));
  return out;
}

bool is_advanced_index(const py::object& key) {
  return py::isinstance<NDArray>(key) || py::isinstance<py::list>(key) || py::isinstance<py::array>(key);
}

// An advanced key: integer indices into axis 0, or a boolean mask over the leading axes (numpy's
// rules; an NDArray key is a mask when its dtype is bool).
struct AdvancedIndex {
  NDArray indices;  // int64, as given
  NDArray mask;     // bool
};

AdvancedIndex advanced_index(const py::object& key) {
  if (py::isinstance<NDArray>(key)) {
    const auto a = key.cast<NDArray>();
    if (a.dtype() == DType::kBool) return {NDArray(), a};
    py::gil_scoped_release release;
    return {a.astype(DType::kInt64), NDArray()};
  }
  const py::array values = py::module_::import("numpy").attr("ascontiguousarray")(key);
  if (values.dtype().kind() == 'b') return {NDArray(), from_numpy(values, cpu())};
  return {from_numpy(py::array_t<int64_t, py::array::c_style | py::array::forcecast>(values), cpu()),
          NDArray()};
}

// The coordinates of a mask's true elements, (count, mask rank), in row-major order as numpy's
// nonzero gives them. Reads the mask (waits for it): the count decides the result's shape.
NDArray true_coordinates(const NDArray& a, const NDArray& mask) {
  const Shape& m = mask.shape();
  bool prefix = m.ndim() <= a.ndim();
  for (int i = 0; prefix && i < m.ndim(); ++i) prefix = m[i] == a.shape()[i];
  KILN_CHECK(prefix, ErrorCode::kShapeMismatch, "NDArray boolean indexing: the mask's shape ", m,
             " must equal the leading dimensions of the array's shape ", a.shape());
  const std::vector<uint8_t> flags = mask.astype(DType::kUInt8).to_vector<uint8_t>();
  std::vector<int64_t> coords;
  for (size_t flat = 0; flat < flags.size(); ++flat) {
    if (!flags[flat]) continue;
    const size_t first = coords.size();
    coords.resize(first + static_cast<size_t>(m.ndim()));
    size_t rest = flat;
    for (int axis = m.ndim() - 1; axis >= 0; --axis) {
      coords[first + static_cast<size_t>(axis)] = static_cast<int64_t>(rest % static_cast<size_t>(m[axis]));
      rest /= static_cast<size_t>(m[axis]);
    }
  }
  const auto count = static_cast<int64_t>(coords.size()) / std::max(m.ndim(), 1);
  return nd::array(coords, Shape{m.ndim() == 0 ? static_cast<int64_t>(flags[0] != 0) : count, m.ndim()});
}

// Integer indices into axis 0 as GatherND / ScatterND coordinates: a trailing axis of 1.
NDArray axis0_coordinates(const NDArray& indices) {
  std::vector<int64_t> dims = indices.shape().dims();
  dims.push_back(1);
  return indices.reshape(Shape(std::move(dims)));
}

// The shape that GatherND of `a` at `coords` gives, which a ScatterND at them writes.
Shape gathered_shape(const NDArray& a, const NDArray& coords) {
  std::vector<int64_t> dims(coords.shape().begin(), coords.shape().end() - 1);
  const int64_t depth = coords.shape()[coords.ndim() - 1];
  for (int axis = static_cast<int>(depth); axis < a.ndim(); ++axis) dims.push_back(a.shape()[axis]);
  return Shape(std::move(dims));
}

// As in MXNet 1.x, indexing every axis with an int gives shape (1,), not a 0-d array.
NDArray getitem(const NDArray& a, const py::object& key) {
  if (is_advanced_index(key)) {
    const AdvancedIndex index = advanced_index(key);
    py::gil_scoped_release release;
    if (index.mask.defined()) return nd::invoke1("GatherND", {a, true_coordinates(a, index.mask)});
    return nd::invoke1("Gather", {a, index.indices}, {{"axis", 0}});
  }
  if (py::isinstance<py::int_>(key) && a.ndim() > 0) {
    const auto index = key.cast<int64_t>();
    py::gil_scoped_release release;
    const NDArray row = a.at(index);
    return row.ndim() == 0 ? row.reshape(Shape{1}) : row;
  }
  IndexedView v = basic_index(a, key);
  if (!v.drops_axes && v.reversed.empty()) return v.view;
  py::gil_scoped_release release;
  const NDArray ordered = v.reversed.empty() ? v.view : reverse_axes(v.view, v.reversed);
  if (!v.drops_axes) return ordered;
  return ordered.reshape(v.dropped.ndim() == 0 ? Shape{1} : v.dropped);
}

bool is_python_scalar(const py::object& value) {
  return py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value) ||
         py::isinstance<py::bool_>(value);
}

// The assigned value as an array of `a`'s dtype broadcast to `target`.
NDArray assigned_values(const NDArray& a, const py::object& value, const Shape& target) {
  NDArray source;
  if (py::isinstance<NDArray>(value)) {
    source = value.cast<NDArray>();
  } else {
    py::object np_array =
        py::module_::import("numpy").attr("ascontiguousarray")(value, numpy_type(a.dtype()));
    source = from_numpy(np_array.cast<py::array>(), a.device());
  }
  py::gil_scoped_release release;
  if (source.dtype() != a.dtype()) source = source.astype(a.dtype());
  if (source.shape() != target) source = nd::invoke1("Expand", {source, int64_vector(target.dims())});
  return source;
}

// a[index] = value for an advanced key: ScatterND at the indexed rows or the mask's true
// elements; a scalar through a mask is a Where, which needs no read of the mask.
void setitem_advanced(const NDArray& a, const py::object& key, const py::object& value) {
  const AdvancedIndex index = advanced_index(key);
  if (index.mask.defined() && is_python_scalar(value)) {
    const double x = value.cast<double>();
    py::gil_scoped_release release;
    std::vector<int64_t> dims = index.mask.shape().dims();
    KILN_CHECK(index.mask.ndim() <= a.ndim(), ErrorCode::kShapeMismatch,
               "NDArray boolean indexing: the mask's shape ", index.mask.shape(),
               " must equal the leading dimensions of the array's shape ", a.shape());
    dims.resize(static_cast<size_t>(a.ndim()), 1);  // the mask broadcast over the trailing axes
    NDArray mask = index.mask.reshape(Shape(std::move(dims)));
    for (int i = 0; i < index.mask.ndim(); ++i)
      KILN_CHECK(mask.shape()[i] == a.shape()[i], ErrorCode::kShapeMismatch,
                 "NDArray boolean indexing: the mask's shape ", index.mask.shape(),
                 " must equal the leading dimensions of the array's shape ", a.shape());
    nd::invoke_into("Where", {mask, nd::scalar(x, a.dtype()), a}, {a});
    return;
  }
  NDArray coords;
  {
    py::gil_scoped_release release;
    coords = index.mask.defined() ? true_coordinates(a, index.mask) : axis0_coordinates(index.indices);
  }
  const NDArray updates = assigned_values(a, value, gathered_shape(a, coords));
  py::gil_scoped_release release;
  nd::invoke_into("ScatterND", {a, coords, updates}, {a});
}

void setitem(const NDArray& a, const py::object& key, const py::object& value) {
  if (is_advanced_index(key)) return setitem_advanced(a, key, value);
  const IndexedView v = basic_index(a, key);
  if (is_python_scalar(value)) {
    const double x = value.cast<double>();
    py::gil_scoped_release release;
    const Shape& s = v.view.shape();
    nd::invoke_into("ConstantOfShape", {int64_vector(s.dims())}, {v.view},
                    {{"value", Tensor::scalar(x, a.dtype())}});
    return;
  }
  NDArray source = assigned_values(a, value, v.dropped);
  py::gil_scoped_release release;
  if (source.shape() != v.view.shape()) source = source.reshape(v.view.shape());
  if (!v.reversed.empty()) source = reverse_axes(source, v.reversed);
  nd::invoke_into("Identity", {source}, {v.view});
}

// MXNet's reshape: 0 copies the input's dimension, -1 is inferred.
NDArray reshape(const NDArray& a, const py::args& args, const py::kwargs& kwargs) {
  py::object shape_obj;
  if (kwargs.contains("shape")) {
    shape_obj = kwargs["shape"];
  } else if (args.size() == 1 && !py::isinstance<py::int_>(args[0])) {
    shape_obj = args[0];
  } else {
    shape_obj = args;
  }
  std::vector<int64_t> dims = shape_from_py(shape_obj).dims();
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == 0 && static_cast<int>(i) < a.ndim()) dims[i] = a.shape()[static_cast<int>(i)];
  py::gil_scoped_release release;
  return a.reshape(Shape(std::move(dims)));
}

// The arrays of a list, a dict (names kept) or one array, as MXNet's save takes them.
mxnet::NamedTensors named_tensors(const py::object& data) {
  mxnet::NamedTensors named;
  auto add = [&](const NDArray& a) {
    py::gil_scoped_release release;
    named.tensors.push_back(a.tensor().contiguous());
  };
  if (py::isinstance<py::dict>(data)) {
    for (const auto& [k, v] : data.cast<py::dict>()) {
      named.names.push_back(k.cast<std::string>());
      add(v.cast<NDArray>());
    }
  } else if (py::isinstance<NDArray>(data)) {
    add(data.cast<NDArray>());
  } else {
    for (const py::handle v : data) add(v.cast<NDArray>());
  }
  return named;
}

// A list of arrays, or a dict when the file names them, as MXNet's load gives them.
py::object list_or_dict(mxnet::NamedTensors named) {
  if (named.names.empty()) {
    py::list out;
    for (auto& t : named.tensors) out.append(NDArray(std::move(t)));
    return out;
  }
  py::dict out;
  for (size_t i = 0; i < named.tensors.size(); ++i) out[py::str(named.names[i])] = NDArray(named.tensors[i]);
  return out;
}

void save(const std::string& path, const py::object& data) {
  const mxnet::NamedTensors named = named_tensors(data);
  py::gil_scoped_release release;
  mxnet::save_params(path, named);
}

// The bytes save() would write to a file.
py::bytes save_to_bytes(const py::object& data) {
  const mxnet::NamedTensors named = named_tensors(data);
  std::ostringstream out;
  {
    py::gil_scoped_release release;
    mxnet::write_params(out, named, "save_to_bytes");
  }
  return py::bytes(out.str());
}

py::object load_frombuffer(const py::bytes& buffer) {
  std::istringstream in(std::string{buffer});
  mxnet::NamedTensors named;
  {
    py::gil_scoped_release release;
    named = mxnet::read_params(in, "load_frombuffer");
  }
  return list_or_dict(std::move(named));
}

py::object load(const std::string& path) {
  mxnet::NamedTensors named;
  {
    py::gil_scoped_release release;
    named = mxnet::load_params(path);
  }
  return list_or_dict(std::move(named));
}

}  // namespace

void bind_ndarray(py::module_& m) {
  py::class_<Device>(m, "Context")
      .def(py::init([](const std::string& type, int index) {
             KILN_CHECK(type == "cpu" || type == "gpu", ErrorCode::kInvalidArgument,
                        "Context: device type must be 'cpu' or 'gpu', got '", type, "'");
             return type == "cpu" ? cpu(index) : gpu(index);
           }),
           py::arg("device_type"), py::arg("device_id") = 0)
      .def_property_readonly("device_type", [](const Device& d) { return d.is_cpu() ? "cpu" : "gpu"; })
      .def_readonly("device_id", &Device::index)
      .def("__eq__", &Device::operator==, py::is_operator())
      .def("__hash__", [](const Device& d) { return static_cast<int>(d.type) * 1000 + d.index; })
      .def("__repr__", &Device::to_string)
      .def("__str__", &Device::to_string);
  m.def("cpu", &cpu, py::arg("device_id") = 0);
  m.def("gpu", &gpu, py::arg("device_id") = 0);
  m.def("num_gpus", &num_gpus);

  py::class_<NDArray> nd(m, "NDArray");
  nd.def_property_readonly("shape", [](const NDArray& a) { return shape_to_py(a.shape()); })
      .def_property_readonly("dtype", [](const NDArray& a) { return numpy_type(a.dtype()); })
      .def_property_readonly("size", &NDArray::size)
      .def_property_readonly("ndim", &NDArray::ndim)
      .def_property_readonly("context", &NDArray::device)
      .def_property_readonly("ctx", &NDArray::device)
      .def_property_readonly("T",
                             [](const NDArray& a) {
                               py::gil_scoped_release release;
                               return a.T();
                             })
      .def("__len__",
           [](const NDArray& a) {
             KILN_CHECK(a.ndim() > 0, ErrorCode::kInvalidArgument, "len() of a 0-d NDArray");
             return a.shape()[0];
           })
      .def("__hash__", [](const NDArray& a) { return reinterpret_cast<intptr_t>(a.chunk().get()); })
      .def("asnumpy", &to_numpy)
      .def("copy", &NDArray::copy, Release())
      // A view of the same storage that autograd does not trace back through.
      .def("detach", [](const NDArray& a) { return NDArray(a.chunk(), a.view()); })
      .def("copyto",
           [](const NDArray& a, const py::object& target) -> NDArray {
             if (py::isinstance<Device>(target)) return a.copyto(target.cast<Device>());
             NDArray out = target.cast<NDArray>();
             py::gil_scoped_release release;
             nd::invoke_into("Identity", {a}, {out});
             return out;
           })
      .def("as_in_context", [](const NDArray& a, Device d) { return d == a.device() ? a : a.copyto(d); })
      .def(
          "astype",
          [](const NDArray& a, const py::object& dtype, bool copy) {
            const DType t = dtype_from_py(dtype);
            py::gil_scoped_release release;
            return (!copy && t == a.dtype()) ? a : a.astype(t);
          },
          py::arg("dtype"), py::arg("copy") = true)
      .def("reshape", &reshape)
      .def(
          "flatten", [](const NDArray& a) { return a.flatten(); }, Release())
      .def("transpose",
           [](const NDArray& a, const py::args& axes) {
             std::vector<int64_t> perm;
             if (axes.size() == 1 && !py::isinstance<py::int_>(axes[0])) {
               if (!axes[0].is_none()) perm = shape_from_py(axes[0]).dims();
             } else {
               for (const py::handle x : axes) perm.push_back(x.cast<int64_t>());
             }
             py::gil_scoped_release release;
             return a.transpose(perm);
           })
      .def("__getitem__", &getitem)
      .def("__setitem__", &setitem)
      .def("_reduce", [](const NDArray& a, const std::string& op, const py::object& axis, bool keepdims,
                         bool exclude) { return reduce(op, a, axis, keepdims, exclude); })
      .def("__str__", &NDArray::to_string, Release())
      .def("__dlpack__", [](const NDArray& a, const py::kwargs&) { return to_dlpack(a); })
      .def("__dlpack_device__",
           [](const NDArray& a) {
             return py::make_tuple(static_cast<int>(a.device().is_cpu() ? kDLCPU : kDLCUDA),
                                   a.device().index);
           })
      // Autograd.
      .def(
          "attach_grad",
          [](NDArray& a, const std::string& grad_req) {
            KILN_CHECK(grad_req == "write" || grad_req == "add" || grad_req == "null",
                       ErrorCode::kInvalidArgument,
                       "attach_grad: grad_req must be 'write', 'add' or 'null', got '", grad_req, "'");
            a.attach_grad(grad_req == "write" ? GradReq::kWrite
                                              : (grad_req == "add" ? GradReq::kAdd : GradReq::kNull));
          },
          py::arg("grad_req") = "write")
      .def_property_readonly("grad",
                             [](const NDArray& a) -> py::object {
                               if (!a.autograd_entry()) return py::none();
                               return py::cast(a.grad());
                             })
      .def(
          "backward",
          [](const NDArray& a, const py::object& out_grad, bool retain_graph, bool train_mode) {
            const NDArray head = out_grad.is_none() ? NDArray() : out_grad.cast<NDArray>();
            py::gil_scoped_release release;
            const bool was_training = autograd::set_training(train_mode);
            try {
              a.backward(head, retain_graph);
            } catch (...) {
              autograd::set_training(was_training);
              throw;
            }
            autograd::set_training(was_training);
          },
          py::arg("out_grad") = py::none(), py::arg("retain_graph") = false, py::arg("train_mode") = true);

  // Arithmetic. Each operator takes an NDArray or a Python number (in the array's dtype).
  nd.def("__add__", arithmetic<NDArray>([](const NDArray& a, const NDArray& b) { return a + b; }),
         py::is_operator())
      .def("__add__", arithmetic<double>([](const NDArray& a, double b) { return a + b; }), py::is_operator())
      .def("__radd__", arithmetic<double>([](const NDArray& a, double b) { return b + a; }),
           py::is_operator())
      .def("__sub__", arithmetic<NDArray>([](const NDArray& a, const NDArray& b) { return a - b; }),
           py::is_operator())
      .def("__sub__", arithmetic<double>([](const NDArray& a, double b) { return a - b; }), py::is_operator())
      .def("__rsub__", arithmetic<double>([](const NDArray& a, double b) { return b - a; }),
           py::is_operator())
      .def("__mul__", arithmetic<NDArray>([](const NDArray& a, const NDArray& b) { return a * b; }),
           py::is_operator())
      .def("__mul__", arithmetic<double>([](const NDArray& a, double b) { return a * b; }), py::is_operator())
      .def("__rmul__", arithmetic<double>([](const NDArray& a, double b) { return b * a; }),
           py::is_operator())
      .def("__truediv__", arithmetic<NDArray>([](const NDArray& a, const NDArray& b) { return a / b; }),
           py::is_operator())
      .def("__truediv__", arithmetic<double>([](const NDArray& a, double b) { return a / b; }),
           py::is_operator())
      .def("__rtruediv__", arithmetic<double>([](const NDArray& a, double b) { return b / a; }),
           py::is_operator())
      .def(
          "__mod__", [](const NDArray& a, const NDArray& b) { return mod(a, b); }, py::is_operator(),
          Release())
      .def(
          "__mod__", [](const NDArray& a, double b) { return mod(a, scalar_like(a, b)); }, py::is_operator(),
          Release())
      .def(
          "__pow__", [](const NDArray& a, const NDArray& b) { return nd::power(a, b); }, py::is_operator(),
          Release())
      .def(
          "__pow__", [](const NDArray& a, double b) { return nd::power(a, scalar_like(a, b)); },
          py::is_operator(), Release())
      .def(
          "__rpow__", [](const NDArray& a, double b) { return nd::power(scalar_like(a, b), a); },
          py::is_operator(), Release())
      .def(
          "__neg__", [](const NDArray& a) { return -a; }, Release())
      .def(
          "__abs__", [](const NDArray& a) { return nd::abs(a); }, Release())
      .def("__iadd__", in_place<NDArray>([](NDArray& a, const NDArray& b) { a += b; }), py::is_operator())
      .def("__iadd__", in_place<double>([](NDArray& a, const double& b) { a += b; }), py::is_operator())
      .def("__isub__", in_place<NDArray>([](NDArray& a, const NDArray& b) { a -= b; }), py::is_operator())
      .def("__isub__", in_place<double>([](NDArray& a, const double& b) { a -= b; }), py::is_operator())
      .def("__imul__", in_place<NDArray>([](NDArray& a, const NDArray& b) { a *= b; }), py::is_operator())
      .def("__imul__", in_place<double>([](NDArray& a, const double& b) { a *= b; }), py::is_operator())
      .def("__itruediv__", in_place<NDArray>([](NDArray& a, const NDArray& b) { a /= b; }), py::is_operator())
      .def("__itruediv__", in_place<double>([](NDArray& a, const double& b) { a /= b; }), py::is_operator());
  // `wait_to_read` and the slots of + - * / and their in-place forms, straight to CPython.
  bind_ndarray_fast_path(nd);
  const std::pair<const char*, const char*> comparisons[] = {
      {"__eq__", "Equal"},       {"__ne__", "NotEqual"}, {"__lt__", "Less"},
      {"__le__", "LessOrEqual"}, {"__gt__", "Greater"},  {"__ge__", "GreaterOrEqual"}};
  for (const auto& [method, op] : comparisons) {
    const std::string op_name = op;
    if (op_name == "NotEqual") {
      nd.def(
          method,
          [](const NDArray& a, const NDArray& b) { return scalar_like(a, 1) - compare("Equal", a, b); },
          py::is_operator(), Release());
      nd.def(
          method,
          [](const NDArray& a, double b) {
            return scalar_like(a, 1) - compare("Equal", a, scalar_like(a, b));
          },
          py::is_operator(), Release());
      continue;
    }
    nd.def(
        method, [op_name](const NDArray& a, const NDArray& b) { return compare(op_name.c_str(), a, b); },
        py::is_operator(), Release());
    nd.def(
        method,
        [op_name](const NDArray& a, double b) { return compare(op_name.c_str(), a, scalar_like(a, b)); },
        py::is_operator(), Release());
  }

  // Functions kiln.nd builds on.
  m.def("from_numpy", &from_numpy, py::arg("array"), py::arg("ctx") = cpu());
  m.def("from_dlpack", &from_dlpack);
  m.def(
      "invoke",
      [](const std::string& op, const std::vector<NDArray>& inputs, const py::dict& attrs, int num_outputs) {
        AttrMap bound = attrs_from_py(attrs, op);
        py::gil_scoped_release release;
        return nd::invoke(op, inputs, bound, num_outputs);
      },
      py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::dict(), py::arg("num_outputs") = -1);
  m.def(
      "invoke_into",
      [](const std::string& op, const std::vector<NDArray>& inputs, const std::vector<NDArray>& outputs,
         const py::dict& attrs) {
        AttrMap bound = attrs_from_py(attrs, op);
        py::gil_scoped_release release;
        nd::invoke_into(op, inputs, outputs, bound);
      },
      py::arg("op"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs") = py::dict());
  m.def("waitall", &nd::waitall, Release());
  m.def(
      "full",
      [](const py::object& shape, double value, const py::object& dtype, Device device) {
        const Shape s = shape_from_py(shape);
        const DType t = dtype_from_py(dtype);
        py::gil_scoped_release release;
        return nd::full(s, value, t, device);
      },
      py::arg("shape"), py::arg("value"), py::arg("dtype") = py::none(), py::arg("ctx") = cpu());
  m.def(
      "empty",
      [](const py::object& shape, const py::object& dtype, Device device) {
        return nd::empty(shape_from_py(shape), dtype_from_py(dtype), device);
      },
      py::arg("shape"), py::arg("dtype") = py::none(), py::arg("ctx") = cpu());
  m.def(
      "arange",
      [](double start, double stop, double step, const py::object& dtype) {
        const DType t = dtype_from_py(dtype);
        py::gil_scoped_release release;
        return nd::arange(start, stop, step, t);
      },
      py::arg("start"), py::arg("stop"), py::arg("step") = 1.0, py::arg("dtype") = py::none());
  m.def("dot", &nd::dot, Release());
  m.def("save", &save, py::arg("fname"), py::arg("data"));
  m.def("load", &load, py::arg("fname"));
  m.def("_save_to_bytes", &save_to_bytes, py::arg("data"));
  m.def("load_frombuffer", &load_frombuffer, py::arg("buf"));
}

}  // namespace kiln::python
