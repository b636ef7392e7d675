// Conversions between the storage types (dtype.hpp: the 8- and 4-bit floats, the 4- and 2-bit
// integers) and the types Kiln computes in. One element is one byte in memory.
//
// The rules are ONNX's Cast, which its reference implementation and ml_dtypes carry out:
//   - to a storage float, round to nearest even; a value past the largest finite one becomes that
//     value (saturate, or a type with neither infinity nor NaN), else infinity (float8_e5m2) or NaN;
//     NaN stays NaN (float4_e2m1fn, which has none, takes 0);
//   - to float8_e8m0fnu (a power of two), ONNX's rounding modes on float32's exponent bits;
//   - to a 4- or 2-bit integer, from a float: truncate toward zero, and 0 when that is out of range
//     or NaN; from an integer: keep the low bits (wrap), as integer casts do.
#pragma once

#include <cstdint>

#include "kiln/dtype.hpp"

namespace kiln {

// The exact value of one storage element (the integers too, as small whole numbers).
double storage_to_double(DType dtype, uint8_t bits);
// One element of a storage float from a real number.
uint8_t storage_float_from_double(DType dtype, double value, const CastOptions& options);
// One element of a storage integer from a float (truncated; 0 when out of range or NaN) or from
// an integer (wrapped into the type's bits).
uint8_t storage_int_from_double(DType dtype, double value);
uint8_t storage_int_from_integer(DType dtype, int64_t value);

// The range of a storage integer: [-8, 7] for int4, [0, 15] for uint4, [-2, 1], [0, 3].
int storage_int_min(DType dtype);
int storage_int_max(DType dtype);

// Bits per element in ONNX's packed form: 4 for int4, uint4 and float4_e2m1fn, 2 for int2 and
// uint2, 8 for the rest.
int packed_bits(DType dtype);
// ONNX's packed bytes (the first element in the lowest bits) to one byte per element, the
// integers sign-extended; and back.
void unpack_elements(DType dtype, const uint8_t* packed, uint8_t* elements, int64_t count);
void pack_elements(DType dtype, const uint8_t* elements, uint8_t* packed, int64_t count);
// Bytes of `count` elements packed; written without `count + per_byte - 1`, which overflows for a
// declared count near INT64_MAX (found by the TensorProto fuzz target).
inline int64_t packed_size(DType dtype, int64_t count) {
  const int per_byte = 8 / packed_bits(dtype);
  return count / per_byte + (count % per_byte != 0 ? 1 : 0);
}

}  // namespace kiln
