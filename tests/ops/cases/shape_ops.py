"""numpy cases for the shape and data-movement ops: every dtype (bool and bfloat16 included),
negative axes, empty tensors, zero-size Concat inputs, Slice with negative steps and out-of-range
bounds, Gather with negative and scalar indices, Pad reflect/edge/wrap, and tensors large enough
that the kernels split their work across the thread pool."""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261204)

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool"]
I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min


def np_dtype(dtype):
    return BF16 if dtype == "bfloat16" else np.dtype(dtype)


def sample(shape, dtype="float32"):
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    d = np_dtype(dtype)
    if d.kind in "iu":
        return RNG.integers(0 if d.kind == "u" else -50, 50, size=shape).astype(d)
    return RNG.uniform(-5, 5, size=shape).astype(np.float32).astype(d)


def i64(values):
    return np.array(values, dtype=np.int64)


def reshape_family(root):
    for dtype in DTYPES:
        x = sample((2, 3, 4), dtype)
        write_case(root, f"reshape_{dtype}", "Reshape", [x, i64([4, -1])], [x.reshape(4, 6)])
        write_case(root, f"flatten_{dtype}_neg_axis", "Flatten", [x], [x.reshape(6, 4)], attrs={"axis": -1})
        y = sample((1, 3, 1, 2), dtype)
        write_case(root, f"squeeze_{dtype}_all", "Squeeze", [y], [y.reshape(3, 2)])
        write_case(root, f"unsqueeze_{dtype}", "Unsqueeze", [x, i64([-1, 0])], [x.reshape(1, 2, 3, 4, 1)])
    x = sample((2, 3, 4))
    write_case(root, "reshape_zero_copies_dim", "Reshape", [x, i64([0, 0, 2, 2])], [x.reshape(2, 3, 2, 2)])
    write_case(root, "reshape_int32_shape", "Reshape", [x, np.array([-1, 2], dtype=np.int32)],
               [x.reshape(-1, 2)])
    write_case(root, "reshape_to_scalar", "Reshape", [np.array([7.5], dtype=np.float32), i64([])],
               [np.array(7.5, dtype=np.float32)])
    e = sample((0, 3))
    write_case(root, "reshape_empty_allowzero", "Reshape", [e, i64([3, 0])], [e.reshape(3, 0)],
               attrs={"allowzero": 1})
    write_case(root, "reshape_empty_copy_zero", "Reshape", [e, i64([0, 3, 1])], [e.reshape(0, 3, 1)])
    big = sample((40, 50, 40))
    write_case(root, "reshape_large", "Reshape", [big, i64([-1, 80])], [big.reshape(-1, 80)])
    write_case(root, "flatten_axis_rank", "Flatten", [x], [x.reshape(24, 1)], attrs={"axis": 3})
    write_case(root, "flatten_axis_neg_rank", "Flatten", [x], [x.reshape(1, 24)], attrs={"axis": -3})
    write_case(root, "flatten_empty", "Flatten", [sample((2, 0, 3))], [sample((0, 3))], attrs={"axis": 2})
    write_case(root, "flatten_scalar", "Flatten", [np.array(3, dtype=np.int64)],
               [np.array([[3]], dtype=np.int64)], attrs={"axis": 0})
    y = sample((1, 3, 1, 2))
    write_case(root, "squeeze_negative_axes", "Squeeze", [y, i64([-2])], [y.reshape(1, 3, 2)])
    write_case(root, "squeeze_to_scalar", "Squeeze", [np.array([[4]], dtype=np.int32)],
               [np.array(4, dtype=np.int32)])
    write_case(root, "squeeze_empty_keeps_zero", "Squeeze", [sample((0, 1, 2))], [sample((0, 2))])
    write_case(root, "unsqueeze_scalar", "Unsqueeze", [np.array(2.0, dtype=np.float32), i64([0, -1])],
               [np.array([[2.0]], dtype=np.float32)])
    write_case(root, "unsqueeze_empty", "Unsqueeze", [sample((0, 2)), i64([1])], [sample((0, 1, 2))])


def transpose_family(root):
    for dtype in DTYPES:
        x = sample((2, 3, 4), dtype)
        write_case(root, f"transpose_{dtype}", "Transpose", [x], [x.transpose(1, 2, 0)],
                   attrs={"perm": [1, 2, 0]})
        # Big enough for the tiled path (and odd sizes for partial tiles) in every item size.
        y = sample((33, 70), dtype)
        write_case(root, f"transpose_tiled_{dtype}", "Transpose", [y], [y.T.copy()])
    x = sample((2, 3, 4, 5))
    write_case(root, "transpose_default_4d", "Transpose", [x], [x.transpose()])
    write_case(root, "transpose_4d_0321", "Transpose", [x], [x.transpose(0, 3, 2, 1)],
               attrs={"perm": [0, 3, 2, 1]})
    write_case(root, "transpose_4d_keeps_inner", "Transpose", [x], [x.transpose(2, 0, 1, 3)],
               attrs={"perm": [2, 0, 1, 3]})
    big = sample((3, 301, 257))
    write_case(root, "transpose_large_batched", "Transpose", [big], [big.transpose(0, 2, 1)],
               attrs={"perm": [0, 2, 1]})
    big = sample((129, 7, 130))
    write_case(root, "transpose_large_outer_swap", "Transpose", [big], [big.transpose(2, 1, 0)],
               attrs={"perm": [2, 1, 0]})
    u = sample((1, 5, 1, 3))
    write_case(root, "transpose_unit_dims", "Transpose", [u], [u.transpose(3, 0, 1, 2)],
               attrs={"perm": [3, 0, 1, 2]})
    write_case(root, "transpose_empty", "Transpose", [sample((0, 3, 2))], [sample((2, 3, 0))])
    write_case(root, "transpose_scalar", "Transpose", [np.array(1.5, np.float32)],
               [np.array(1.5, np.float32)])


def concat_split_family(root):
    for dtype in DTYPES:
        a, b, c = sample((2, 3), dtype), sample((2, 1), dtype), sample((2, 4), dtype)
        write_case(root, f"concat_{dtype}_neg_axis", "Concat", [a, b, c], [np.concatenate([a, b, c], axis=1)],
                   attrs={"axis": -1})
        x = sample((7, 2), dtype)
        write_case(root, f"split_{dtype}_uneven", "Split", [x], np.split(x, [3, 6]), attrs={"num_outputs": 3})
    a, z, b = sample((2, 3, 4)), sample((2, 0, 4)), sample((2, 5, 4))
    write_case(root, "concat_zero_size_input", "Concat", [a, z, b], [np.concatenate([a, z, b], axis=1)],
               attrs={"axis": 1})
    write_case(root, "concat_all_empty", "Concat", [z, z], [np.concatenate([z, z], axis=1)],
               attrs={"axis": -2})
    e = sample((0, 3))
    write_case(root, "concat_empty_other_axis", "Concat", [e, e], [np.concatenate([e, e], axis=1)],
               attrs={"axis": 1})
    write_case(root, "concat_single_input", "Concat", [a], [a], attrs={"axis": 0})
    big = [sample((1, 70000)), sample((1, 1000))]
    write_case(root, "concat_large_row", "Concat", big, [np.concatenate(big, axis=1)], attrs={"axis": 1})
    big = [sample((300, 200)), sample((300, 57))]
    write_case(root, "concat_large_rows", "Concat", big, [np.concatenate(big, axis=1)], attrs={"axis": 1})

    x = sample((4, 6), "int64")
    write_case(root, "split_negative_axis", "Split", [x, i64([1, 0, 5])], np.split(x, [1, 1], axis=-1),
               attrs={"axis": -1})
    write_case(root, "split_requested_outputs", "Split", [x], np.split(x, 3, axis=1), attrs={"axis": 1},
               num_outputs=3)
    s = sample((4,))
    write_case(root, "split_num_outputs_remainder_zero", "Split", [s], [s[:2], s[2:], s[4:]],
               attrs={"num_outputs": 3})
    e = sample((2, 0))
    write_case(root, "split_empty_axis", "Split", [e], [e, e], attrs={"axis": 1, "num_outputs": 2})
    write_case(root, "split_empty_other_axis", "Split", [e], [e[:1], e[1:]], attrs={"num_outputs": 2})
    big = sample((3, 50001))
    write_case(root, "split_large", "Split", [big, i64([20000, 30001])], np.split(big, [20000], axis=1),
               attrs={"axis": 1})


def slice_family(root):
    x = sample((5, 6, 7))
    cases = {
        "negative_steps": (i64([-1, 5]), i64([I64_MIN, 0]), i64([0, 2]), i64([-1, -2]), x[::-1, :, 5:0:-2]),
        "out_of_range_starts": (i64([10, -100]), i64([20, 100]), i64([0, 1]), None, x[10:20, -100:100]),
        "out_of_range_negative_step": (i64([100]), i64([-100]), i64([2]), i64([-3]), x[:, :, 100:-100:-3]),
        "int64_extremes": (i64([I64_MIN]), i64([I64_MAX]), i64([-1]), i64([2]), x[:, :, ::2]),
        "negative_axes": (i64([1, -4]), i64([-1, 3]), i64([-1, -3]), None, x[-4:3, :, 1:-1]),
        "step_longer_than_axis": (i64([1]), i64([I64_MAX]), i64([1]), i64([I64_MAX]), x[:, 1::100]),
        "negative_step_longer_than_axis": (i64([-1]), i64([I64_MIN]), i64([2]), i64([I64_MIN]),
                                           x[:, :, -1::-100]),
        "empty_result": (i64([3]), i64([2]), i64([0]), None, x[3:2]),
        "empty_result_negative_step": (i64([2]), i64([3]), i64([0]), i64([-1]), x[2:3:-1]),
        "negative_step_to_start": (i64([4]), i64([-6]), i64([0]), i64([-1]), x[4::-1]),
    }
    for name, (starts, ends, axes, steps, expected) in cases.items():
        write_case(root, f"slice_{name}", "Slice", [x, starts, ends, axes, steps], [expected])
    write_case(root, "slice_default_axes_int32", "Slice",
               [x, np.array([1, 2], np.int32), np.array([4, -1], np.int32)],
               [x[1:4, 2:-1]])
    for dtype in DTYPES:
        y = sample((4, 5), dtype)
        write_case(root, f"slice_{dtype}", "Slice", [y, i64([3, 0]), i64([0, 5]), i64([0, 1]), i64([-1, 2])],
                   [y[3:0:-1, 0:5:2]])
    e = sample((0, 4))
    write_case(root, "slice_empty_input", "Slice", [e, i64([0, 1]), i64([5, 3])], [e[0:5, 1:3]])
    write_case(root, "slice_empty_input_negative_step", "Slice",
               [e, i64([-1]), i64([I64_MIN]), i64([0]), i64([-1])],
               [e[::-1]])
    big = sample((300, 400))
    write_case(root, "slice_large_negative_step", "Slice",
               [big, i64([-2, 399]), i64([0, 0]), None, i64([-1, -1])],
               [big[-2:0:-1, 399:0:-1]])


def gather_family(root):
    for dtype in DTYPES:
        x = sample((4, 3, 2), dtype)
        idx = i64([[0, -1], [2, -4]])
        write_case(root, f"gather_{dtype}_neg_indices", "Gather", [x, idx], [np.take(x, idx, axis=0)],
                   attrs={"axis": 0})
        write_case(root, f"gather_{dtype}_scalar_index", "Gather", [x, np.array(-1, np.int64)], [x[:, -1]],
                   attrs={"axis": -2})
    x = sample((4, 3, 2))
    write_case(root, "gather_int32_indices_last_axis", "Gather", [x, np.array([1, -2, 0], np.int32)],
               [np.take(x, [1, 0, 0], axis=2)], attrs={"axis": -1})
    write_case(root, "gather_empty_indices", "Gather", [x, np.zeros((0, 2), np.int64)],
               [np.take(x, np.zeros((0, 2), np.int64), axis=1)], attrs={"axis": 1})
    write_case(root, "gather_from_empty_inner", "Gather", [sample((3, 0)), i64([2, -3])], [sample((2, 0))])
    big = sample((1000, 130))
    idx = RNG.integers(-1000, 1000, size=600)
    write_case(root, "gather_large_rows", "Gather", [big, idx], [np.take(big, idx, axis=0)])
    idx = RNG.integers(-130, 130, size=(700,))
    write_case(root, "gather_large_scattered", "Gather", [big, idx], [np.take(big, idx, axis=1)],
               attrs={"axis": 1})

    for dtype in DTYPES:
        x = sample((3, 4), dtype)
        idx = RNG.integers(-4, 4, size=(3, 5))
        write_case(root, f"gather_elements_{dtype}", "GatherElements", [x, idx],
                   [np.take_along_axis(x, np.where(idx < 0, idx + 4, idx), axis=1)], attrs={"axis": -1})
    x = sample((4, 3, 5))
    idx = RNG.integers(-4, 4, size=(6, 3, 5))
    write_case(root, "gather_elements_axis0", "GatherElements", [x, idx],
               [np.take_along_axis(x, np.where(idx < 0, idx + 4, idx), axis=0)])
    # Indices may be smaller than data off the axis (as in PyTorch's gather).
    idx = RNG.integers(0, 3, size=(2, 4, 3))
    expected = np.empty(idx.shape, np.float32)
    for i, j, k in np.ndindex(idx.shape):
        expected[i, j, k] = x[i, idx[i, j, k], k]
    write_case(root, "gather_elements_smaller_indices", "GatherElements", [x, idx], [expected],
               attrs={"axis": 1})
    write_case(root, "gather_elements_empty", "GatherElements", [x, np.zeros((4, 0, 5), np.int64)],
               [np.zeros((4, 0, 5), np.float32)], attrs={"axis": 1})

    for dtype in DTYPES:
        data = sample((2, 3, 4), dtype)
        idx = i64([[[1, -1]], [[0, 2]]])
        write_case(root, f"gathernd_{dtype}_batch_dims", "GatherND", [data, idx],
                   [np.stack([data[0][1, -1], data[1][0, 2]]).reshape(2, 1)], attrs={"batch_dims": 1})
    data = sample((3, 4, 5))
    idx = i64([[-1], [0], [1]])
    write_case(root, "gathernd_slices_neg_index", "GatherND", [data, idx], [data[[-1, 0, 1]]])
    idx = i64([[[2, -1], [0, 0]]])
    write_case(root, "gathernd_rows", "GatherND", [data, idx], [data[[[2, 0]], [[-1, 0]]]])
    write_case(root, "gathernd_empty_indices", "GatherND", [data, np.zeros((0, 2), np.int64)],
               [np.zeros((0, 5), np.float32)])


def scatter_family(root):
    reductions = {"none": None, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    for dtype in DTYPES:
        data = sample((3, 4), dtype)
        idx = i64([[1, -1, 0], [-4, 2, 2]])
        upd = sample((2, 3), dtype)
        for name, fn in reductions.items():
            if dtype == "bool" and name in ("add", "mul"):
                continue
            expected = data.copy()
            for i, j in np.ndindex(idx.shape):
                k = idx[i, j] % 4
                expected[i, k] = upd[i, j] if fn is None else fn(expected[i, k], upd[i, j])
            write_case(root, f"scatter_elements_{dtype}_{name}", "ScatterElements", [data, idx, upd],
                       [expected],
                       attrs={"axis": -1, "reduction": name})
    data = sample((3, 4), "int32")
    idx = i64([[0, 0, 2, 0], [2, 2, 2, 2]])
    upd = sample((2, 4), "int32")
    expected = data.copy()
    for i, j in np.ndindex(idx.shape):
        expected[idx[i, j], j] += upd[i, j]
    write_case(root, "scatter_elements_duplicates_add_axis0", "ScatterElements", [data, idx, upd], [expected],
               attrs={"reduction": "add"})
    big = sample((200, 400))
    idx = RNG.integers(-200, 200, size=(150, 400))
    upd = sample((150, 400))
    expected = big.copy()
    for i, j in np.ndindex(idx.shape):
        expected[idx[i, j], j] = max(expected[idx[i, j], j], upd[i, j])
    write_case(root, "scatter_elements_large_max", "ScatterElements", [big, idx, upd], [expected],
               attrs={"reduction": "max"})

    for dtype in DTYPES:
        data = sample((4, 3, 2), dtype)
        idx = i64([[-1], [1], [-1]])
        upd = sample((3, 3, 2), dtype)
        for name, fn in reductions.items():
            if dtype == "bool" and name in ("add", "mul"):
                continue
            expected = data.copy()
            for t in range(3):
                k = idx[t, 0]
                expected[k] = upd[t] if fn is None else fn(expected[k], upd[t])
            write_case(root, f"scatternd_{dtype}_{name}", "ScatterND", [data, idx, upd], [expected],
                       attrs={"reduction": name})
    data = sample((3, 4))
    idx = i64([[0, -1], [2, 1], [0, 3]])
    upd = sample((3,))
    expected = data.copy()
    expected[0, 3] += upd[0] + upd[2]
    expected[2, 1] += upd[1]
    write_case(root, "scatternd_elements_add_duplicates", "ScatterND", [data, idx, upd], [expected],
               attrs={"reduction": "add"}, rtol=1e-5)
    big = sample((4, 70000))
    upd = sample((2, 70000))
    expected = big.copy()
    expected[2] = upd[1]
    expected[1] = upd[0]
    write_case(root, "scatternd_large_slices", "ScatterND", [big, i64([[1], [-2]]), upd], [expected])


def pad_family(root):
    x = sample((3, 4))
    for mode in ["reflect", "edge", "wrap"]:
        for name, (pads, width) in {
            "small": ([1, 2, 2, 1], ((1, 2), (2, 1))),
            "wider_than_axis": ([5, 0, 7, 9], ((5, 7), (0, 9))),
        }.items():
            write_case(root, f"pad_{mode}_{name}", "Pad", [x, i64(pads)], [np.pad(x, width, mode=mode)],
                       attrs={"mode": mode})
        write_case(root, f"pad_{mode}_axes", "Pad", [x, i64([3, 2]), None, i64([-1])],
                   [np.pad(x, ((0, 0), (3, 2)), mode=mode)], attrs={"mode": mode})
    one = sample((1, 3))
    write_case(root, "pad_reflect_length_one", "Pad", [one, i64([2, 0, 1, 0])],
               [np.pad(one, ((2, 1), (0, 0)), "reflect")],
               attrs={"mode": "reflect"})
    for dtype in DTYPES:
        y = sample((2, 3), dtype)
        value = sample((), dtype)
        write_case(root, f"pad_constant_{dtype}", "Pad", [y, i64([0, 1, 2, 0]), np.array(value)],
                   [np.pad(y, ((0, 2), (1, 0)), constant_values=value)])
        write_case(root, f"pad_reflect_{dtype}", "Pad", [y, i64([1, 2, 1, 2])],
                   [np.pad(y, ((1, 1), (2, 2)), "reflect")],
                   attrs={"mode": "reflect"})
    write_case(root, "pad_constant_default_zero", "Pad", [x, i64([1, 1, 1, 1])], [np.pad(x, 1)])
    write_case(root, "pad_constant_negative_axes", "Pad",
               [x, i64([2, 1]), np.array(9.0, np.float32), i64([-2])],
               [np.pad(x, ((2, 1), (0, 0)), constant_values=9.0)])
    write_case(root, "pad_negative_crops", "Pad", [x, i64([-1, 2, 1, -3])],
               [np.pad(x[1:, :1], ((0, 1), (2, 0)))])
    write_case(root, "pad_negative_crops_edge", "Pad", [x, i64([-1, 2, 1, -2])],
               [np.pad(x[1:, :2], ((0, 1), (2, 0)), mode="edge")], attrs={"mode": "edge"})
    write_case(root, "pad_empty_input_constant", "Pad", [sample((0, 2)), i64([1, 0, 1, 1])],
               [np.zeros((2, 3), np.float32)])
    write_case(root, "pad_crop_to_empty", "Pad", [x, i64([-2, 0, -1, 0])], [np.zeros((0, 4), np.float32)])
    write_case(root, "pad_scalar", "Pad", [np.array(3, np.int32), i64([])], [np.array(3, np.int32)])
    big = sample((250, 300))
    write_case(root, "pad_large_reflect", "Pad", [big, i64([3, 5, 4, 6])],
               [np.pad(big, ((3, 4), (5, 6)), "reflect")],
               attrs={"mode": "reflect"})
    write_case(root, "pad_large_constant", "Pad", [big, i64([3, 5, 4, 6])], [np.pad(big, ((3, 4), (5, 6)))])


def expand_tile_family(root):
    for dtype in DTYPES:
        x = sample((3, 1), dtype)
        write_case(root, f"expand_{dtype}", "Expand", [x, i64([2, 1, 4])],
                   [np.broadcast_to(x, (2, 3, 4)).copy()])
        y = sample((2, 3), dtype)
        write_case(root, f"tile_{dtype}", "Tile", [y, i64([2, 3])], [np.tile(y, (2, 3))])
    x = sample((2, 1, 3))
    write_case(root, "expand_shorter_shape", "Expand", [x, i64([4, 1])],
               [np.broadcast_to(x, (2, 4, 3)).copy()])
    write_case(root, "expand_to_empty", "Expand", [x[0], i64([0, 1, 1])], [np.zeros((0, 1, 3), np.float32)])
    write_case(root, "expand_empty", "Expand", [sample((0, 1)), i64([3, 1, 5])],
               [np.zeros((3, 0, 5), np.float32)])
    write_case(root, "expand_scalar", "Expand", [np.array(True), i64([2, 2])], [np.ones((2, 2), bool)])
    big = sample((300, 1))
    write_case(root, "expand_large", "Expand", [big, i64([2, 300, 200])],
               [np.broadcast_to(big, (2, 300, 200)).copy()])
    x = sample((2, 3, 4))
    write_case(root, "tile_3d", "Tile", [x, i64([1, 2, 3])], [np.tile(x, (1, 2, 3))])
    write_case(root, "tile_zero_repeats", "Tile", [x, i64([1, 0, 2])], [np.tile(x, (1, 0, 2))])
    write_case(root, "tile_empty", "Tile", [sample((0, 3)), i64([2, 2])], [np.zeros((0, 6), np.float32)])
    write_case(root, "tile_scalar", "Tile", [np.array(5, np.int8), i64([])], [np.array(5, np.int8)])
    big = sample((70, 50))
    write_case(root, "tile_large", "Tile", [big, i64([30, 2])], [np.tile(big, (30, 2))])


def shape_info_family(root):
    for dtype in DTYPES:
        x = sample((2, 0, 3), dtype)
        write_case(root, f"shape_{dtype}_empty", "Shape", [x], [i64([2, 0, 3])])
        write_case(root, f"size_{dtype}_empty", "Size", [x], [np.array(0, np.int64)])
    s = np.array(1.0, np.float32)
    write_case(root, "shape_scalar", "Shape", [s], [i64([])])
    write_case(root, "size_scalar", "Size", [s], [np.array(1, np.int64)])
    x = sample((2, 3, 4, 5))
    write_case(root, "shape_start_end_negative", "Shape", [x], [i64([3, 4])], attrs={"start": -3, "end": -1})
    write_case(root, "shape_clamped", "Shape", [x], [i64([2, 3, 4, 5])], attrs={"start": -10, "end": 10})
    write_case(root, "shape_empty_range", "Shape", [x], [i64([])], attrs={"start": 3, "end": 1})
    write_case(root, "size_4d", "Size", [x], [np.array(120, np.int64)])


def depth_space_family(root):
    def d2s(x, b, mode):
        n, c, h, w = x.shape
        if mode == "DCR":
            y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return y.reshape(n, c // (b * b), h * b, w * b)

    def s2d(x, b, mode):
        n, c, h, w = x.shape
        y = x.reshape(n, c, h // b, b, w // b, b)
        y = y.transpose(0, 3, 5, 1, 2, 4) if mode == "DCR" else y.transpose(0, 1, 3, 5, 2, 4)
        return y.reshape(n, c * b * b, h // b, w // b)

    for dtype in DTYPES:
        for mode in ["DCR", "CRD"]:
            x = sample((2, 8, 3, 2), dtype)
            write_case(root, f"depth_to_space_{dtype}_{mode}", "DepthToSpace", [x], [d2s(x, 2, mode)],
                       attrs={"blocksize": 2, "mode": mode})
            y = sample((1, 3, 6, 9), dtype)
            write_case(root, f"space_to_depth_{dtype}_{mode}", "SpaceToDepth", [y], [s2d(y, 3, mode)],
                       attrs={"blocksize": 3, "mode": mode})
    x = sample((2, 36, 60, 50))
    write_case(root, "depth_to_space_large", "DepthToSpace", [x], [d2s(x, 3, "CRD")],
               attrs={"blocksize": 3, "mode": "CRD"})
    y = sample((2, 4, 120, 100))
    write_case(root, "space_to_depth_large", "SpaceToDepth", [y], [s2d(y, 4, "DCR")], attrs={"blocksize": 4})
    write_case(root, "depth_to_space_empty", "DepthToSpace", [sample((0, 4, 2, 2))],
               [np.zeros((0, 1, 4, 4), np.float32)],
               attrs={"blocksize": 2})


def write(root):
    reshape_family(root)
    transpose_family(root)
    concat_split_family(root)
    slice_family(root)
    gather_family(root)
    scatter_family(root)
    pad_family(root)
    expand_tile_family(root)
    shape_info_family(root)
    depth_space_family(root)
