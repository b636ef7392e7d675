"""numpy cases for Compress, ReverseSequence, Unique and NonMaxSuppression.

Covers what the ONNX node tests miss: every dtype, negative and middle axes, conditions shorter or
longer than the axis and all false, sequence lengths of 0 and the full length with either axis
order and higher ranks, Unique with NaN, bool, unsorted slices along a later axis and fewer
outputs, NonMaxSuppression with many random boxes and classes, center-point boxes, ties, missing
or empty optional inputs and no boxes at all. Expected NonMaxSuppression results come from the
ONNX reference implementation; the rest from numpy.
"""

import ml_dtypes
import numpy as np
import onnx
from casefile import write_case
from onnx.reference import ReferenceEvaluator

RNG = np.random.default_rng(20261210)
BF16 = np.dtype(ml_dtypes.bfloat16)

ALL = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool"]


def np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def sample(shape, dtype, low=-4, high=4):
    dtype = np_dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) > 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return RNG.integers(max(low, info.min), min(high, info.max) + 1, size=shape).astype(dtype)
    return RNG.integers(low, high + 1, size=shape).astype(dtype)  # small integers repeat, for Unique


def write_compress(root):
    for dtype in ALL:
        x = sample((3, 4), dtype)
        cond = np.array([True, False, True])
        write_case(root, f"compress_{dtype}", "Compress", [x, cond], [np.compress(cond, x, axis=0)],
                   attrs={"axis": 0})
    x = sample((2, 5, 3), "float32")
    cases = [
        ("middle_axis", np.array([0, 1, 1, 0, 1], bool), 1),
        ("negative_axis", np.array([1, 0, 1], bool), -1),
        ("shorter_condition", np.array([1, 0], bool), 1),
        ("longer_condition_false_tail", np.array([0, 1, 1, 0, 1, 0, 0], bool), 1),
        ("all_false", np.zeros(5, bool), 1),
        ("flattened", RNG.random(30) > 0.5, None),
        ("flattened_shorter", np.array([1, 0, 0, 1], bool), None),
    ]
    for name, cond, axis in cases:
        attrs = {} if axis is None else {"axis": axis}
        write_case(root, f"compress_{name}", "Compress", [x, cond], [np.compress(cond, x, axis=axis)],
                   attrs=attrs)
    x = sample((0, 3), "float32")
    write_case(root, "compress_empty_input", "Compress", [x, np.array([1, 1], bool)],
               [np.compress([1, 1], x, axis=1)], attrs={"axis": 1})
    write_case(root, "compress_empty_condition", "Compress", [sample((2, 3), "int32"), np.zeros(0, bool)],
               [np.zeros((0, 3), np.int32)], attrs={"axis": 0})
    # Enough rows to split the copy across threads.
    x = sample((3000, 40), "float32")
    cond = RNG.random(40) > 0.3
    write_case(root, "compress_large", "Compress", [x, cond], [np.compress(cond, x, axis=1)],
               attrs={"axis": 1})


def reverse_sequence_ref(x, lens, batch_axis, time_axis):
    y = x.copy()
    for b, n in enumerate(lens):
        index = [slice(None)] * x.ndim
        index[batch_axis] = b
        index[time_axis] = slice(0, n)
        y[tuple(index)] = np.flip(x[tuple(index)], axis=time_axis - (1 if batch_axis < time_axis else 0))
    return y


def write_reverse_sequence(root):
    for dtype in ALL:
        x = sample((4, 3, 2), dtype)
        lens = np.array([4, 0, 2], np.int64)
        write_case(root, f"reversesequence_{dtype}", "ReverseSequence", [x, lens],
                   [reverse_sequence_ref(x, lens, 1, 0)], attrs={"batch_axis": 1, "time_axis": 0})
    x = RNG.standard_normal((3, 5, 2, 3)).astype(np.float32)
    lens = np.array([5, 1, 3], np.int64)
    write_case(root, "reversesequence_batch_first_4d", "ReverseSequence", [x, lens],
               [reverse_sequence_ref(x, lens, 0, 1)], attrs={"batch_axis": 0, "time_axis": 1})
    x = sample((2, 3, 0), "float32")
    write_case(root, "reversesequence_empty_inner", "ReverseSequence", [x, np.array([1, 2, 0], np.int64)],
               [x], attrs={"batch_axis": 1, "time_axis": 0})
    x = sample((0, 3), "float32")
    write_case(root, "reversesequence_no_batch", "ReverseSequence", [x, np.zeros(0, np.int64)], [x],
               attrs={"batch_axis": 0, "time_axis": 1})
    x = RNG.standard_normal((200, 300, 3)).astype(np.float32)
    lens = RNG.integers(0, 201, size=300).astype(np.int64)
    write_case(root, "reversesequence_large", "ReverseSequence", [x, lens],
               [reverse_sequence_ref(x, lens, 1, 0)])


def unique_ref(x, axis, sorted_output):
    """numpy.unique, reordered by first occurrence unless sorted."""
    y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                          axis=axis)
    inverse = inverse.reshape(-1)
    if not sorted_output:
        order = np.argsort(first, kind="stable")
        position = np.empty_like(order)
        position[order] = np.arange(len(order))
        first, counts, inverse = first[order], counts[order], position[inverse]
        y = np.take(x.reshape(-1) if axis is None else x, first, axis=0 if axis is None else axis)
    return [y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)]


def write_unique(root):
    for dtype in ALL:
        x = sample((3, 5), dtype)
        for sorted_output in (0, 1):
            write_case(root, f"unique_{dtype}_sorted{sorted_output}", "Unique", [x],
                       unique_ref(x, None, sorted_output), attrs={"sorted": sorted_output})
    x = sample((3, 4, 2), "int32", -1, 1)
    x[:, 2] = x[:, 0]
    for axis in (0, 1, -1, 2):
        for sorted_output in (0, 1):
            write_case(root, f"unique_axis{axis}_sorted{sorted_output}", "Unique", [x],
                       unique_ref(x, axis, sorted_output), attrs={"axis": axis, "sorted": sorted_output})
    x = np.array([np.nan, 1.0, np.nan, 0.0, 1.0, -2.0], np.float32)
    write_case(root, "unique_nan", "Unique", [x], unique_ref(x, None, 1))
    write_case(root, "unique_nan_unsorted", "Unique", [x], unique_ref(x, None, 0), attrs={"sorted": 0})
    x = sample((0, 3), "float32")
    write_case(root, "unique_empty", "Unique", [x], unique_ref(x, None, 1))
    write_case(root, "unique_scalar", "Unique", [np.array(7, np.int64)],
               unique_ref(np.array([7], np.int64), None, 1))
    x = sample((4, 6), "int64")
    outputs = unique_ref(x, None, 1)
    write_case(root, "unique_one_output", "Unique", [x], outputs[:1], num_outputs=1)
    write_case(root, "unique_two_outputs", "Unique", [x], outputs[:2], num_outputs=2)
    x = sample((20000,), "int32", -500, 500)
    write_case(root, "unique_large", "Unique", [x], unique_ref(x, None, 0), attrs={"sorted": 0})


def nms_ref(inputs, center_point_box):
    """The ONNX reference. It reads a missing threshold from an empty tensor (as ONNX allows), and
    cannot run without max_output_boxes_per_class, whose default (0) selects nothing."""
    max_boxes = inputs[2]
    if max_boxes is None or max_boxes.size == 0 or max_boxes.reshape(-1)[0] <= 0:
        return np.zeros((0, 3), np.int64)
    names = ["boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"]
    feeds = {n: (np.zeros(0, np.float32) if x is None else x) for n, x in zip(names, inputs, strict=True)}
    for n in names[2:]:
        feeds[n] = feeds[n].reshape(-1)  # the reference indexes the scalars as 1-D
    node = onnx.helper.make_node("NonMaxSuppression", names, ["selected"], center_point_box=center_point_box)
    return ReferenceEvaluator(node).run(None, feeds)[0]


def write_nms(root):
    def boxes(batches, n, centers):
        if centers:
            xy = RNG.uniform(0, 10, size=(batches, n, 2))
            wh = RNG.uniform(0.5, 4, size=(batches, n, 2))
            return np.concatenate([xy, wh], axis=2).astype(np.float32)
        a, b = RNG.uniform(0, 10, size=(batches, n, 2)), RNG.uniform(0, 10, size=(batches, n, 2))
        corners = np.concatenate([a, a + (b - 5) * 0.6], axis=2)  # some corners given the other way round
        return corners.astype(np.float32)

    def scalar(v, dtype=np.float32):
        return np.array([v], dtype=dtype)

    cases = []
    for centers in (0, 1):
        b, s = boxes(2, 50, centers), RNG.random((2, 3, 50)).astype(np.float32)
        cases.append((f"random_center{centers}", [b, s, scalar(10, np.int64), scalar(0.3), scalar(0.2)],
                      centers))
        cases.append((f"random_no_score_threshold_center{centers}",
                      [b, s, scalar(50, np.int64), scalar(0.5), None], centers))
    b = boxes(1, 6, 0)
    ties = np.array([[[0.5, 0.9, 0.5, 0.9, 0.5, 0.1]]], np.float32)
    cases.append(("tied_scores", [b, ties, scalar(6, np.int64), scalar(0.99), None], 0))
    cases.append(("no_optional_inputs", [b, ties, None, None, None], 0))
    cases.append(("empty_optional_inputs", [b, ties, scalar(4, np.int64), np.zeros(0, np.float32),
                                            np.zeros(0, np.float32)], 0))
    cases.append(("scalar_inputs", [b, ties, np.array(3, np.int64), np.array(0.4, np.float32),
                                    np.array(0.0, np.float32)], 0))
    cases.append(("negative_max_boxes", [b, ties, scalar(-2, np.int64), scalar(0.5), None], 0))
    cases.append(("all_below_threshold", [b, ties, scalar(3, np.int64), scalar(0.5), scalar(0.95)], 0))
    cases.append(("no_boxes", [np.zeros((2, 0, 4), np.float32), np.zeros((2, 3, 0), np.float32),
                               scalar(3, np.int64), scalar(0.5), None], 0))
    b, s = boxes(4, 300, 0), RNG.random((4, 8, 300)).astype(np.float32)
    cases.append(("large", [b, s, scalar(1000, np.int64), scalar(0.4), scalar(0.1)], 0))
    for name, inputs, centers in cases:
        expected = nms_ref(inputs, centers).astype(np.int64).reshape(-1, 3)
        write_case(root, f"nms_{name}", "NonMaxSuppression", inputs, [expected],
                   attrs={"center_point_box": centers})


def write(root):
    write_compress(root)
    write_reverse_sequence(root)
    write_unique(root)
    write_nms(root)
