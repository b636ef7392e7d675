// Calls of registered ops by schema. The named NDArray functions and operators (a + b, x += 1,
// nd::relu) know their op when they are compiled: they look its schema up once, in a static
// (schema_of<"Add">()), instead of searching the registry by name on every call, and pass their
// arrays by address instead of building a std::vector of NDArray copies.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

#include "kiln/ndarray.hpp"
#include "ops/op_schema.h"

namespace kiln::detail {

// A string literal as a template argument.
template <size_t N>
struct OpName {
  constexpr OpName(const char (&name)[N]) { std::copy_n(name, N, text); }  // NOLINT: implicit on purpose
  char text[N];
};

// The registered op `Name`, found on first use (the registry is complete before main()).
template <OpName Name>
const ops::OpSchema& schema_of() {
  static const ops::OpSchema& schema = ops::OpRegistry::global().get(Name.text);
  return schema;
}

// The arrays of one call, by address (undefined NDArrays for missing optional inputs).
using ArrayRefs = std::span<const NDArray* const>;

// nd::invoke1 and nd::invoke_into for a known op.
NDArray call1(const ops::OpSchema& op, ArrayRefs inputs, const AttrMap& attrs = {});
void call_into(const ops::OpSchema& op, ArrayRefs inputs, ArrayRefs outputs, const AttrMap& attrs = {});

}  // namespace kiln::detail
