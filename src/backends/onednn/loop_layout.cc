// Plain loops over small 4-D tensors in oneDNN's layouts; see loop_layout.h.
#include "backends/onednn/loop_layout.h"

#include <cstdint>

namespace kiln::onednn {
namespace {

// out (row-major) = in (as `layout` lays it out), for elements of type T.
template <typename T>
void copy_to_row_major(const T* in, T* out, const dnnl::memory::dims& dims, const LoopLayout& layout) {
  for (int64_t n = 0; n < dims[0]; ++n)
    for (int64_t c = 0; c < dims[1]; ++c) {
      const T* plane = in + n * layout.n_stride + c / layout.block * layout.block_stride + c % layout.block;
      for (int64_t h = 0; h < dims[2]; ++h)
        for (int64_t w = 0; w < dims[3]; ++w) *out++ = plane[h * layout.h_stride + w * layout.w_stride];
    }
}

}  // namespace

std::optional<LoopLayout> loop_layout(const dnnl::memory::desc& desc) {
  if (desc.get_ndims() != 4) return std::nullopt;
  const dnnl::memory::dims strides = desc.get_strides(), padded = desc.get_padded_dims();
  LoopLayout l{
      .n_stride = strides[0], .block_stride = strides[1], .h_stride = strides[2], .w_stride = strides[3]};
  if (desc.get_inner_nblks() == 1 && desc.get_inner_idxs()[0] == 1) {
    l.block = desc.get_inner_blks()[0];
  } else if (desc.get_inner_nblks() != 0) {
    return std::nullopt;
  } else if (strides[1] == 1) {
    l.block = padded[1];
  }
  return l;
}

ToRowMajor::ToRowMajor(const dnnl::memory::desc& from, const dnnl::memory::desc& to)
    : reorder_(make_reorder(from, to)),
      dims_(from.get_dims()),
      element_size_(dnnl::memory::data_type_size(from.get_data_type())) {
  const bool row_major_twin =
      from.get_ndims() == 4 &&
      to == dnnl::memory::desc(dims_, from.get_data_type(), dnnl::memory::format_tag::abcd);
  if (from.get_ndims() == 4 && dims_[0] * dims_[1] * dims_[2] * dims_[3] <= kLoopCopyElements &&
      row_major_twin && (element_size_ == 1 || element_size_ == 2 || element_size_ == 4))
    loop_ = loop_layout(from);
}

void ToRowMajor::run(ops::KernelContext& ctx, const void* from, void* to) const {
  if (!loop_) return reorder(ctx, reorder_, from, to);
  if (element_size_ == 4)
    copy_to_row_major(static_cast<const uint32_t*>(from), static_cast<uint32_t*>(to), dims_, *loop_);
  else if (element_size_ == 2)
    copy_to_row_major(static_cast<const uint16_t*>(from), static_cast<uint16_t*>(to), dims_, *loop_);
  else
    copy_to_row_major(static_cast<const uint8_t*>(from), static_cast<uint8_t*>(to), dims_, *loop_);
}

}  // namespace kiln::onednn
