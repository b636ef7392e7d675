// ONNX's sequence ops: a sequence is an ordered list of tensors of one element type (a Tensor made
// by Tensor::sequence). SequenceEmpty, SequenceConstruct, SequenceInsert and SequenceErase make
// sequences; SequenceAt and SequenceLength read them; SplitToSequence and ConcatFromSequence turn
// a tensor into a sequence of its pieces and back. (SequenceMap runs a subgraph per element:
// control_flow.cc.)
//
// A sequence is immutable: the ops that change one give a new one sharing the untouched elements.
// What a sequence holds is known only from its value, so every op here runs node by node (the
// runtime never puts a sequence in a plan), and shape inference of the ops that give a tensor
// reads the sequence's value.
#include <algorithm>

#include "infer_util.h"

namespace kiln::ops {
namespace {

TensorInfo sequence_of(DType dtype) {
  return TensorInfo{dtype, Shape{}, ValueKind::kSequence};
}

void require_sequence(const InferContext& ctx, int i) {
  KILN_CHECK(ctx.input(i).kind == ValueKind::kSequence, ErrorCode::kTypeMismatch, ctx.input_label(i), " is ",
             describe_info(ctx.input(i)), ", expected a sequence");
}

void require_tensor(const InferContext& ctx, int i) {
  KILN_CHECK(ctx.input(i).kind == ValueKind::kTensor, ErrorCode::kTypeMismatch, ctx.input_label(i), " is ",
             describe_info(ctx.input(i)), ", expected a tensor");
}

// The sequence value of input i, which the ops that give tensors need to know their shapes.
const std::vector<Tensor>& sequence_value(const InferContext& ctx, int i) {
  require_sequence(ctx, i);
  return ctx.value(i).elements();
}

// A position (one int32 or int64 value, `what` naming it) as an index into `count` elements:
// negative counts from the end; [-count, count - 1] is valid, or [-count, count] when `to_insert`
// (an insertion may go after the last element).
size_t position(const Tensor& given, size_t count, bool to_insert, const std::string& what) {
  const std::vector<int64_t> p = read_int_values(given, what);
  KILN_CHECK(p.size() == 1, ErrorCode::kShapeMismatch, what, ": expected one position, got ", p.size(),
             " values");
  const auto n = static_cast<int64_t>(count);
  const int64_t last = to_insert ? n : n - 1;
  KILN_CHECK(p[0] >= -n && p[0] <= last, ErrorCode::kOutOfRange, what, ": position ", p[0], " is outside [",
             -n, ", ", last, "] for a sequence of ", n, " tensor(s)");
  return static_cast<size_t>(p[0] < 0 ? p[0] + n : p[0]);
}

size_t position(const InferContext& ctx, int i, size_t count, bool to_insert) {
  require_dtype(ctx, i, kIndexDTypes);
  return position(ctx.value(i), count, to_insert, ctx.input_label(i));
}

size_t position(const KernelContext& ctx, int i, size_t count, bool to_insert) {
  return position(ctx.input(i), count, to_insert, "position");
}

KILN_REGISTER_OP(SequenceEmpty)
    .doc("An empty sequence of tensors of element type `dtype` (an ONNX type code; float by default).")
    .output("output")
    .takes_sequences()
    .takes_strings()
    .attr("dtype", AttrType::kInt, AttrValue(int64_t{1}), validate_onnx_dtype)
    .infer([](InferContext& ctx) {
      return std::vector<TensorInfo>{sequence_of(dtype_from_onnx(ctx.attrs().get_int("dtype")))};
    })
    .kernel([](KernelContext& ctx) {
      ctx.output(0) = Tensor::sequence(dtype_from_onnx(ctx.attrs.get_int("dtype")), {});
    });

KILN_REGISTER_OP(SequenceConstruct)
    .doc("A sequence of the inputs, tensors of one element type, in order.")
    .input("inputs", Arity::kVariadic)
    .output("output_sequence")
    .takes_sequences()
    .takes_strings()
    .takes_storage_types()
    .infer([](InferContext& ctx) {
      for (int i = 0; i < ctx.num_inputs(); ++i) {
        require_tensor(ctx, i);
        require_same_dtype(ctx, 0, i);
      }
      return std::vector<TensorInfo>{sequence_of(ctx.dtype(0))};
    })
    .kernel([](KernelContext& ctx) { ctx.output(0) = Tensor::sequence(ctx.input(0).dtype(), ctx.inputs); });

KILN_REGISTER_OP(SequenceInsert)
    .doc(
        "The sequence with `tensor` inserted at `position` (negative counts from the end; after the "
        "last element when not given).")
    .input("input_sequence")
    .input("tensor")
    .input("position", Arity::kOptional)
    .output("output_sequence")
    .takes_sequences()
    .takes_strings()
    .takes_storage_types()
    .infer([](InferContext& ctx) {
      require_sequence(ctx, 0);
      require_tensor(ctx, 1);
      require_same_dtype(ctx, 0, 1);
      if (ctx.has_input(2) && ctx.has_value(0) && ctx.has_value(2))
        position(ctx, 2, ctx.value(0).elements().size(), /*to_insert=*/true);
      return std::vector<TensorInfo>{sequence_of(ctx.dtype(0))};
    })
    .kernel([](KernelContext& ctx) {
      std::vector<Tensor> elements = ctx.input(0).elements();
      const size_t at = ctx.has_input(2) ? position(ctx, 2, elements.size(), true) : elements.size();
      elements.insert(elements.begin() + static_cast<std::ptrdiff_t>(at), ctx.input(1).clone());
      ctx.output(0) = Tensor::sequence(ctx.input(0).dtype(), std::move(elements));
    });

KILN_REGISTER_OP(SequenceErase)
    .doc(
        "The sequence without the tensor at `position` (negative counts from the end; the last when not "
        "given).")
    .input("input_sequence")
    .input("position", Arity::kOptional)
    .output("output_sequence")
    .takes_sequences()
    .takes_strings()
    .takes_storage_types()
    .infer([](InferContext& ctx) {
      require_sequence(ctx, 0);
      if (ctx.has_value(0)) {
        const size_t count = ctx.value(0).elements().size();
        KILN_CHECK(count > 0, ErrorCode::kOutOfRange, ctx.input_label(0),
                   " is empty: there is nothing to erase");
        if (ctx.has_input(1)) position(ctx, 1, count, /*to_insert=*/false);
      }
      return std::vector<TensorInfo>{sequence_of(ctx.dtype(0))};
    })
    .kernel([](KernelContext& ctx) {
      std::vector<Tensor> elements = ctx.input(0).elements();
      const size_t at = ctx.has_input(1) ? position(ctx, 1, elements.size(), false) : elements.size() - 1;
      elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(at));
      ctx.output(0) = Tensor::sequence(ctx.input(0).dtype(), std::move(elements));
    });

KILN_REGISTER_OP(SequenceAt)
    .doc("The tensor at `position` of the sequence (negative counts from the end).")
    .input("input_sequence")
    .input("position")
    .output("tensor")
    .takes_sequences()
    .takes_strings()
    .takes_storage_types()
    .infer([](InferContext& ctx) {
      const std::vector<Tensor>& elements = sequence_value(ctx, 0);
      const Tensor& picked = elements[position(ctx, 1, elements.size(), /*to_insert=*/false)];
      return std::vector<TensorInfo>{{picked.dtype(), picked.shape()}};
    })
    .kernel([](KernelContext& ctx) {
      const std::vector<Tensor>& elements = ctx.input(0).elements();
      ctx.output(0).copy_from(elements[position(ctx, 1, elements.size(), false)]);
    });

KILN_REGISTER_OP(SequenceLength)
    .doc("The number of tensors in the sequence, an int64 scalar.")
    .input("input_sequence")
    .output("length")
    .takes_sequences()
    .takes_strings()
    .takes_storage_types()
    .infer([](InferContext& ctx) {
      require_sequence(ctx, 0);
      return std::vector<TensorInfo>{{DType::kInt64, Shape{}}};
    })
    .kernel([](KernelContext& ctx) {
      ctx.output(0).data<int64_t>()[0] = static_cast<int64_t>(ctx.input(0).elements().size());
    });

// The elements as ConcatFromSequence joins them: with new_axis, each gets a dimension of 1 at
// `axis` (stacking); without, they are joined along `axis` as they are.
std::vector<Tensor> concat_pieces(const std::vector<Tensor>& elements, int64_t axis, bool new_axis,
                                  const std::string& what) {
  KILN_CHECK(!elements.empty(), ErrorCode::kInvalidArgument, what, " is empty: there is nothing to join");
  std::vector<Tensor> pieces;
  for (const Tensor& e : elements) {
    if (!new_axis) {
      pieces.push_back(e);
      continue;
    }
    const int rank = e.ndim() + 1;
    KILN_CHECK(axis >= -rank && axis < rank, ErrorCode::kOutOfRange, "axis ", axis, " is outside [", -rank,
               ", ", rank - 1, "] for stacking tensors of rank ", e.ndim());
    std::vector<int64_t> dims = e.shape().dims();
    dims.insert(dims.begin() + (axis < 0 ? axis + rank : axis), 1);
    pieces.push_back(e.contiguous().reshape(Shape(dims)));
  }
  return pieces;
}

const OpSchema& concat_schema() {
  return OpRegistry::global().get("Concat");
}

Attrs concat_attrs(int64_t axis) {
  return concat_schema().bind(AttrMap{{"axis", AttrValue(axis)}});
}

KILN_REGISTER_OP(ConcatFromSequence)
    .doc(
        "The sequence's tensors joined along `axis` (Concat), or, with new_axis = 1, stacked along a "
        "new axis at `axis`.")
    .input("input_sequence")
    .output("concat_result")
    .takes_sequences()
    .takes_storage_types()
    .required_attr("axis", AttrType::kInt)
    .attr("new_axis", AttrType::kInt, AttrValue(int64_t{0}))
    .infer([](InferContext& ctx) {
      const std::vector<Tensor> pieces =
          concat_pieces(sequence_value(ctx, 0), ctx.attrs().get_int("axis"),
                        ctx.attrs().get_int("new_axis") != 0, ctx.input_label(0));
      std::vector<std::optional<TensorInfo>> infos;
      for (const Tensor& p : pieces) infos.push_back(TensorInfo{p.dtype(), p.shape()});
      return concat_schema().infer_types(concat_attrs(ctx.attrs().get_int("axis")), infos,
                                         std::vector<const Tensor*>(pieces.size(), nullptr));
    })
    .kernel([](KernelContext& ctx) {
      const int64_t axis = ctx.attrs.get_int("axis");
      const std::vector<Tensor> pieces =
          concat_pieces(ctx.input(0).elements(), axis, ctx.attrs.get_int("new_axis") != 0, "input 0");
      const Attrs attrs = concat_attrs(axis);
      KernelContext concat{attrs, pieces, ctx.outputs};
      concat_schema().reference_kernel()(concat);
    });

// SplitToSequence's piece lengths along an axis of `dim` elements: `split` a scalar (pieces of
// that length, the last shorter) or a list of lengths; without it, pieces of 1.
std::vector<int64_t> piece_lengths(const std::optional<Tensor>& split, int64_t dim, const std::string& what) {
  if (!split) return std::vector<int64_t>(static_cast<size_t>(dim), 1);
  const std::vector<int64_t> values = read_int_values(*split, what);
  if (split->ndim() == 0) {
    KILN_CHECK(values[0] > 0, ErrorCode::kInvalidArgument, what, ": a piece length must be positive, got ",
               values[0]);
    std::vector<int64_t> lengths;
    for (int64_t start = 0; start < dim; start += values[0])
      lengths.push_back(std::min(values[0], dim - start));
    return lengths;
  }
  KILN_CHECK(split->ndim() == 1, ErrorCode::kShapeMismatch, what,
             ": expected a scalar or a list of lengths, got shape ", split->shape());
  int64_t total = 0;
  for (int64_t v : values) {
    KILN_CHECK(v >= 0, ErrorCode::kInvalidArgument, what, ": lengths must be 0 or more, got ", v);
    total += v;
  }
  KILN_CHECK(total == dim, ErrorCode::kShapeMismatch, what, ": lengths sum to ", total, ", the axis has ",
             dim);
  return values;
}

KILN_REGISTER_OP(SplitToSequence)
    .doc(
        "The input cut along `axis` into a sequence: into pieces of the lengths `split` gives (one "
        "length: pieces of it, the last shorter), or without it into pieces of 1, that axis dropped "
        "unless keepdims.")
    .input("input")
    .input("split", Arity::kOptional)
    .output("output_sequence")
    .takes_sequences()
    .takes_strings()
    .takes_storage_types()
    .attr("axis", AttrType::kInt, AttrValue(int64_t{0}))
    .attr("keepdims", AttrType::kInt, AttrValue(int64_t{1}))
    .infer([](InferContext& ctx) {
      require_tensor(ctx, 0);
      normalize_axis(ctx.attrs().get_int("axis"), ctx.shape(0).ndim(), "attribute 'axis'");
      if (ctx.has_input(1)) {
        require_tensor(ctx, 1);
        require_dtype(ctx, 1, kIndexDTypes);
      }
      return std::vector<TensorInfo>{sequence_of(ctx.dtype(0))};
    })
    .kernel([](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const int axis = normalize_axis(ctx.attrs.get_int("axis"), x.ndim(), "attribute 'axis'");
      const bool given = ctx.has_input(1);
      const std::vector<int64_t> lengths = piece_lengths(
          given ? std::optional<Tensor>(ctx.input(1)) : std::nullopt, x.shape()[axis], "input 1 (split)");
      const bool drop_axis = !given && ctx.attrs.get_int("keepdims") == 0;
      std::vector<Tensor> pieces;
      int64_t start = 0;
      for (int64_t length : lengths) {
        Tensor piece = x.slice(axis, start, start + length).clone();
        if (drop_axis) {
          std::vector<int64_t> dims = piece.shape().dims();
          dims.erase(dims.begin() + axis);
          piece = piece.reshape(Shape(dims));
        }
        pieces.push_back(std::move(piece));
        start += length;
      }
      ctx.output(0) = Tensor::sequence(x.dtype(), std::move(pieces));
    });

}  // namespace
}  // namespace kiln::ops
