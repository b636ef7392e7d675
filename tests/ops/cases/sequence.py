"""numpy cases for the sequence ops and Optional: sequences of tensors of different shapes (and of
bool, int64, bfloat16 and float8 elements), positions counted from either end, insertion after the
last element, stacking and joining along negative axes, SplitToSequence by one length (the last
piece shorter), by a list of lengths (a zero length too) and into pieces of 1 with and without the
split axis, and empty sequences."""

import ml_dtypes
import numpy as np
from casefile import Sequence, write_case

RNG = np.random.default_rng(20261207)

BF16 = np.dtype(ml_dtypes.bfloat16)
F8 = np.dtype(ml_dtypes.float8_e4m3fn)
ONNX_FLOAT, ONNX_INT64, ONNX_BOOL = 1, 7, 9


def sample(shape, dtype=np.float32):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) > 0.5
    if dtype.kind in "iu":
        return RNG.integers(-50, 50, size=shape).astype(dtype)
    return RNG.uniform(-5, 5, size=shape).astype(np.float32).astype(dtype)


def i64(value):
    return np.array(value, dtype=np.int64)


def construct_and_read(root):
    for dtype in (np.float32, np.int64, np.bool_, BF16, F8):
        name = np.dtype(dtype).name
        parts = [sample((2, 3), dtype), sample((4,), dtype), sample((), dtype)]
        write_case(root, f"sequence_construct_{name}", "SequenceConstruct", parts, [Sequence(parts)])
        seq = Sequence(parts)
        for position in (0, 2, -1, -3):
            write_case(root, f"sequence_at_{name}_{position}", "SequenceAt", [seq, i64(position)],
                       [parts[position]])
        write_case(root, f"sequence_length_{name}", "SequenceLength", [seq], [i64(len(parts))])
    pair = [sample((2,)), sample((3,))]
    write_case(root, "sequence_at_int32_position", "SequenceAt", [Sequence(pair), np.array(-1, np.int32)], [pair[1]])
    for dtype, code in ((np.float32, ONNX_FLOAT), (np.int64, ONNX_INT64), (np.bool_, ONNX_BOOL)):
        empty = Sequence([], dtype)
        write_case(root, f"sequence_empty_{np.dtype(dtype).name}", "SequenceEmpty", [], [empty],
                   attrs={"dtype": code})
        write_case(root, f"sequence_length_empty_{np.dtype(dtype).name}", "SequenceLength", [empty], [i64(0)])
    write_case(root, "sequence_empty_default_float", "SequenceEmpty", [], [Sequence([], np.float32)])


def insert_and_erase(root):
    parts = [sample((1, 2)), sample((3,)), sample((2, 2, 2))]
    seq = Sequence(parts)
    extra = sample((5,))
    write_case(root, "sequence_insert_at_end", "SequenceInsert", [seq, extra], [Sequence(parts + [extra])])
    for position in (0, 1, 3, -1, -3):
        at = position + len(parts) if position < 0 else position
        write_case(root, f"sequence_insert_at_{position}", "SequenceInsert", [seq, extra, i64(position)],
                   [Sequence(parts[:at] + [extra] + parts[at:])])
    write_case(root, "sequence_insert_into_empty", "SequenceInsert", [Sequence([], np.float32), extra, i64(0)],
               [Sequence([extra])])
    write_case(root, "sequence_erase_last", "SequenceErase", [seq], [Sequence(parts[:-1])])
    for position in (0, 1, -1, -3):
        at = position + len(parts) if position < 0 else position
        write_case(root, f"sequence_erase_at_{position}", "SequenceErase", [seq, i64(position)],
                   [Sequence(parts[:at] + parts[at + 1:], np.float32)])
    write_case(root, "sequence_erase_only_tensor", "SequenceErase", [Sequence([extra])], [Sequence([], np.float32)])


def concat_and_split(root):
    for dtype in (np.float32, np.int64, BF16):
        name = np.dtype(dtype).name
        parts = [sample((2, 3), dtype), sample((4, 3), dtype), sample((1, 3), dtype)]
        seq = Sequence(parts)
        write_case(root, f"concat_from_sequence_{name}_axis0", "ConcatFromSequence", [seq],
                   [np.concatenate(parts, axis=0)], attrs={"axis": 0})
        write_case(root, f"concat_from_sequence_{name}_axis_neg2", "ConcatFromSequence", [seq],
                   [np.concatenate(parts, axis=-2)], attrs={"axis": -2})
        same = [sample((2, 3), dtype) for _ in range(4)]
        for axis in (0, 1, 2, -1, -3):
            write_case(root, f"concat_from_sequence_{name}_stack_{axis}", "ConcatFromSequence", [Sequence(same)],
                       [np.stack(same, axis=axis)], attrs={"axis": axis, "new_axis": 1})
    x = sample((7, 4))
    write_case(root, "split_to_sequence_by_length", "SplitToSequence", [x, i64(3)],
               [Sequence([x[0:3], x[3:6], x[6:7]])])
    write_case(root, "split_to_sequence_by_lengths_axis1", "SplitToSequence", [x, i64([1, 0, 3])],
               [Sequence([x[:, 0:1], x[:, 1:1], x[:, 1:4]])], attrs={"axis": 1})
    write_case(root, "split_to_sequence_into_ones", "SplitToSequence", [x], [Sequence([x[k:k + 1] for k in range(7)])])
    write_case(root, "split_to_sequence_dropping_the_axis", "SplitToSequence", [x],
               [Sequence([x[:, k] for k in range(4)])], attrs={"axis": -1, "keepdims": 0})
    write_case(root, "split_to_sequence_int32_length", "SplitToSequence", [x, np.array(4, np.int32)],
               [Sequence([x[0:4], x[4:7]])])
    b = sample((3, 2), np.bool_)
    write_case(root, "split_to_sequence_bool", "SplitToSequence", [b, i64(2)], [Sequence([b[0:2], b[2:3]])])


def optional(root):
    x = sample((2, 3))
    write_case(root, "optional_of_a_tensor", "Optional", [x], [x])
    seq = Sequence([sample((2,)), sample((3, 1))])
    write_case(root, "optional_of_a_sequence", "Optional", [seq], [seq])
    write_case(root, "optional_get_element_of_a_sequence", "OptionalGetElement", [seq], [seq])
    write_case(root, "optional_has_element_of_a_sequence", "OptionalHasElement", [seq], [np.array(True)])


def write(root):
    construct_and_read(root)
    insert_and_erase(root)
    concat_and_split(root)
    optional(root)
