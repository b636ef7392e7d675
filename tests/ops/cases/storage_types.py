"""Cases for the storage types (the 8- and 4-bit floats, the 4- and 2-bit integers), checked against
ml_dtypes' conversions and the ONNX reference's rules on top of them: Cast to and from every one of
them (saturating and not, float8_e8m0fnu's three rounding modes), QuantizeLinear and
DequantizeLinear through them, the ops that move their elements, and an op that refuses them.
Values cover each type's range, its overflow, its subnormals, ties, infinities and NaN."""

import ml_dtypes
import numpy as np
from casefile import write_case
from onnx import TensorProto
from onnx.numpy_helper import to_float8e8m0

RNG = np.random.default_rng(20261208)

FLOAT8 = {"float8_e4m3fn": TensorProto.FLOAT8E4M3FN, "float8_e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ,
          "float8_e5m2": TensorProto.FLOAT8E5M2, "float8_e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ}
SMALL_INTS = {"int4": TensorProto.INT4, "uint4": TensorProto.UINT4, "int2": TensorProto.INT2,
              "uint2": TensorProto.UINT2}
FLOAT4 = ("float4_e2m1fn", TensorProto.FLOAT4E2M1)
E8M0 = ("float8_e8m0fnu", TensorProto.FLOAT8E8M0)


def ml(name):
    return np.dtype(getattr(ml_dtypes, name))


def awkward_floats(largest):
    """Random values across the range and past it, exact ties, tiny values, infinities, NaN, -0."""
    spread = RNG.standard_normal(40).astype(np.float32) * np.float32(largest / 3)
    tiny = RNG.standard_normal(8).astype(np.float32) * np.float32(1e-3)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, largest * 1.5, -largest * 4, 1e-30, 0.25, 2.5, 3.5,
                        0.75], dtype=np.float32)
    return np.concatenate([spread, tiny, special]).reshape(6, 10)


def saturate_cast(x, dtype):
    """ONNX's saturate = 1: values past the type's range (infinities too) become its largest."""
    info = ml_dtypes.finfo(dtype)
    return np.clip(np.asarray(x, np.float64), float(info.min), float(info.max)).astype(dtype)


def write(root):
    # Cast into each 8-bit float, saturating and not, from float32 and float16; and back.
    for name, code in FLOAT8.items():
        dtype = ml(name)
        x = awkward_floats(float(ml_dtypes.finfo(dtype).max))
        with np.errstate(all="ignore"):
            write_case(root, f"cast_float32_to_{name}", "Cast", [x], [saturate_cast(x, dtype)], attrs={"to": code})
            write_case(root, f"cast_float32_to_{name}_no_saturate", "Cast", [x], [x.astype(dtype)],
                       attrs={"to": code, "saturate": 0})
            half = x.astype(np.float16)
            write_case(root, f"cast_float16_to_{name}", "Cast", [half], [saturate_cast(half, dtype)],
                       attrs={"to": code})
        every = np.arange(256, dtype=np.uint8).view(dtype)
        write_case(root, f"cast_{name}_to_float32", "Cast", [every], [every.astype(np.float32)],
                   attrs={"to": TensorProto.FLOAT})
        write_case(root, f"cast_{name}_to_float16", "Cast", [every], [every.astype(np.float16)],
                   attrs={"to": TensorProto.FLOAT16})
        # One 8-bit float into another goes through the exact value.
        other = "float8_e5m2" if name != "float8_e5m2" else "float8_e4m3fn"
        finite = every[np.isfinite(every.astype(np.float32))]
        write_case(root, f"cast_{name}_to_{other}", "Cast", [finite],
                   [saturate_cast(finite.astype(np.float32), ml(other))], attrs={"to": FLOAT8[other]})

    # float4_e2m1fn has no infinity or NaN: it saturates always.
    name, code = FLOAT4
    x = awkward_floats(6.0)
    x = x[np.isfinite(x)]  # ml_dtypes turns NaN into a zero of either sign; Kiln's is +0
    write_case(root, f"cast_float32_to_{name}", "Cast", [x], [x.astype(ml(name))], attrs={"to": code})
    every = np.arange(16, dtype=np.uint8).view(ml(name))
    write_case(root, f"cast_{name}_to_float32", "Cast", [every], [every.astype(np.float32)],
               attrs={"to": TensorProto.FLOAT})

    # float8_e8m0fnu: the ONNX reference's rounding modes, with and without saturation.
    name, code = E8M0
    powers = np.ldexp(np.float32(1), RNG.integers(-126, 127, 30)).astype(np.float32)
    x = np.concatenate([powers * RNG.uniform(1, 2, 30).astype(np.float32), powers * np.float32(1.5),
                        np.array([0, 1e-40, 3e38, np.inf, np.nan, 1.5, 1.75, 1.25], np.float32)])
    for mode in ("up", "down", "nearest"):
        for saturate in (1, 0):
            write_case(root, f"cast_float32_to_{name}_{mode}_saturate{saturate}", "Cast", [x],
                       [to_float8e8m0(x, bool(saturate), mode)],
                       attrs={"to": code, "round_mode": mode, "saturate": saturate})
    every = np.arange(256, dtype=np.uint8).view(ml(name))
    write_case(root, f"cast_{name}_to_float32", "Cast", [every], [every.astype(np.float32)],
               attrs={"to": TensorProto.FLOAT})

    # The small integers: from floats truncate and give 0 out of range (ml_dtypes, the ONNX
    # reference); from integers keep the low bits.
    for name, code in SMALL_INTS.items():
        dtype = ml(name)
        info = ml_dtypes.iinfo(dtype)
        x = np.concatenate([np.arange(int(info.min) - 3, int(info.max) + 4), [0.4, -0.6, 2.9, -1.9]]).astype(
            np.float32)
        with np.errstate(all="ignore"):
            write_case(root, f"cast_float32_to_{name}", "Cast", [x], [x.astype(dtype)], attrs={"to": code})
        ints = np.arange(-20, 20, dtype=np.int32)
        write_case(root, f"cast_int32_to_{name}_wraps", "Cast", [ints], [ints.astype(np.int8).astype(dtype)],
                   attrs={"to": code})
        values = np.arange(int(info.min), int(info.max) + 1).astype(dtype)
        for to_name, to_code, to_type in (("float32", TensorProto.FLOAT, np.float32),
                                          ("int8", TensorProto.INT8, np.int8),
                                          ("int64", TensorProto.INT64, np.int64)):
            write_case(root, f"cast_{name}_to_{to_name}", "Cast", [values], [values.astype(to_type)],
                       attrs={"to": to_code})

    # QuantizeLinear and DequantizeLinear: per tensor and per axis.
    x = (RNG.standard_normal((4, 6)) * 40).astype(np.float32)
    scale = np.array([0.5, 2.0, 8.0, 0.125], np.float32)
    for name, code in SMALL_INTS.items():
        dtype = ml(name)
        info = ml_dtypes.iinfo(dtype)
        zero = np.array([0, 1, info.max, info.min], np.int32).clip(info.min, info.max)
        q = np.clip(np.rint(x / scale[:, None]) + zero[:, None], info.min, info.max).astype(dtype)
        write_case(root, f"quantizelinear_{name}_per_axis", "QuantizeLinear", [x, scale, zero.astype(dtype)], [q],
                   attrs={"axis": 0})
        write_case(root, f"dequantizelinear_{name}_per_axis", "DequantizeLinear", [q, scale, zero.astype(dtype)],
                   [((q.astype(np.float32) - zero[:, None]) * scale[:, None]).astype(np.float32)],
                   attrs={"axis": 0})
    for name, code in [*FLOAT8.items(), FLOAT4]:
        dtype = ml(name)
        zero = np.zeros(4, dtype)
        with np.errstate(all="ignore"):
            quotient = x / scale[:, None]
            q = saturate_cast(quotient, dtype) if name in FLOAT8 else quotient.astype(dtype)
            write_case(root, f"quantizelinear_{name}_per_axis", "QuantizeLinear", [x, scale, zero], [q],
                       attrs={"axis": 0})
            if name in FLOAT8:
                write_case(root, f"quantizelinear_{name}_no_saturate", "QuantizeLinear",
                           [x, np.float32(0.01), np.zeros((), dtype)], [(x / np.float32(0.01)).astype(dtype)],
                           attrs={"saturate": 0})
        write_case(root, f"dequantizelinear_{name}_per_axis", "DequantizeLinear", [q, scale],
                   [(q.astype(np.float32) * scale[:, None]).astype(np.float32)], attrs={"axis": 0})

    # The ops that move elements take every storage type; their bytes go through untouched.
    for name in [*FLOAT8, FLOAT4[0], E8M0[0], *SMALL_INTS]:
        dtype = ml(name)
        bits = RNG.integers(0, 256 if name.startswith("float8") else 16, (3, 4), dtype=np.uint8)
        a = bits.view(dtype) if name.startswith("float") else (bits % (int(ml_dtypes.iinfo(dtype).max) + 1)).astype(dtype)
        b = a[::-1].copy()
        write_case(root, f"transpose_{name}", "Transpose", [a], [a.T.copy()], attrs={"perm": [1, 0]})
        write_case(root, f"reshape_{name}", "Reshape", [a, np.array([2, 6], np.int64)], [a.reshape(2, 6)])
        write_case(root, f"concat_{name}", "Concat", [a, b], [np.concatenate([a, b], axis=1)], attrs={"axis": 1})
        index = np.array([2, 0, 2], np.int64)
        write_case(root, f"gather_{name}", "Gather", [a, index], [a[index]], attrs={"axis": 0})
        cond = RNG.integers(0, 2, (3, 4)).astype(bool)
        write_case(root, f"where_{name}", "Where", [cond, a, b], [np.where(cond, a, b)])
        write_case(root, f"slice_{name}", "Slice",
                   [a, np.array([1], np.int64), np.array([3], np.int64), np.array([1], np.int64)], [a[:, 1:3]])
        write_case(root, f"expand_{name}", "Expand", [a[:1], np.array([3, 4], np.int64)],
                   [np.broadcast_to(a[:1], (3, 4)).copy()])
        write_case(root, f"identity_{name}", "Identity", [a], [a])
