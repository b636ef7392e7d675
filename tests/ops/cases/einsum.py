"""numpy cases for Einsum.

Covers what the ONNX node tests miss: every dtype Kiln has for it, implicit outputs (ASCII order,
upper case first), diagonals and traces, three and more operands, ellipses of different ranks
that broadcast, size-1 axes broadcasting against a label, scalars, empty axes (summed and kept),
transposed operand layouts, spaces, and products big enough to split across threads.
"""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261209)
BF16 = np.dtype(ml_dtypes.bfloat16)

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64"]


def np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def sample(shape, dtype):
    dtype = np_dtype(dtype)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def einsum_ref(equation, operands):
    """Computed wide (int64 wraps the same way modulo the narrow type; float64) and narrowed once."""
    dtype = operands[0].dtype
    wide = np.int64 if np.issubdtype(dtype, np.integer) else np.float64
    with np.errstate(over="ignore"):
        out = np.einsum(equation, *[x.astype(wide) for x in operands])
    return np.asarray(out).astype(dtype)


def tolerance(dtype):
    return {"float16": 1e-2, "bfloat16": 5e-2}.get(str(dtype), 1e-5)


# (name, equation, operand shapes)
EQUATIONS = [
    ("matmul", "ij,jk->ik", [(3, 4), (4, 5)]),
    ("matmul_implicit", "ij,jk", [(3, 4), (4, 5)]),
    ("trans_a", "ji,jk->ik", [(4, 3), (4, 5)]),
    ("trans_b", "ij,kj->ik", [(3, 4), (5, 4)]),
    ("trans_out", "ij,jk->ki", [(3, 4), (4, 5)]),
    ("batch_matmul", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("batch_last", "ijb,jkb->bik", [(3, 4, 2), (4, 5, 2)]),
    ("outer", "i,j->ij", [(3,), (4,)]),
    ("dot", "i,i->", [(7,), (7,)]),
    ("dot_implicit", "i,i", [(7,), (7,)]),
    ("diagonal", "ii->i", [(4, 4)]),
    ("trace", "ii->", [(4, 4)]),
    ("trace_implicit", "ii", [(4, 4)]),
    ("diagonal_3", "iij->ji", [(3, 3, 2)]),
    ("diagonal_two_labels", "ijij->ij", [(2, 3, 2, 3)]),
    ("sum_all", "ijk->", [(2, 3, 4)]),
    ("sum_rows", "ij->j", [(3, 5)]),
    ("sum_middle", "ijk->ik", [(2, 3, 4)]),
    ("permute", "ijk->kij", [(2, 3, 4)]),
    ("implicit_order", "ba,ca", [(2, 3), (4, 3)]),
    ("upper_case_first", "aB,Ba", [(2, 3), (3, 2)]),
    ("upper_lower_distinct", "aA,Ab->Aab", [(2, 3), (3, 4)]),
    ("three_operands", "abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
    ("three_shared", "i,i,i->", [(5,), (5,), (5,)]),
    ("three_kept", "i,i,i->i", [(5,), (5,), (5,)]),
    ("disjoint_then_joined", "ij,kl,jk->il", [(2, 3), (4, 5), (3, 4)]),
    ("four_operands", "ab,bc,cd,da->", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("elementwise", "ij,ij->ij", [(3, 4), (3, 4)]),
    ("ellipsis_batch", "...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("ellipsis_broadcast", "...ij,...jk->...ik", [(3, 1, 2, 4), (5, 4, 6)]),
    ("ellipsis_ranks", "...i,...i->...", [(2, 3, 4), (4,)]),
    ("ellipsis_middle", "i...j,j...->...i", [(2, 3, 4), (4, 3)]),
    ("ellipsis_implicit", "...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("ellipsis_empty", "...i,...i->...", [(4,), (4,)]),
    ("ellipsis_only", "...->...", [(2, 3)]),
    ("ellipsis_diagonal", "...ii->...i", [(2, 3, 3)]),
    ("broadcast_one", "ij,ij->ij", [(2, 1), (2, 3)]),
    ("broadcast_contracted", "ij,jk", [(2, 1), (3, 4)]),
    ("scalar_operand", ",i->i", [(), (4,)]),
    ("scalar_only", "->", [()]),
    ("spaces", " ij , jk -> ik ", [(3, 4), (4, 5)]),
    ("empty_contracted", "ij,jk->ik", [(2, 0), (0, 3)]),
    ("empty_kept", "ij,jk->ik", [(0, 3), (3, 4)]),
    ("empty_sum", "ij->i", [(3, 0)]),
    ("empty_batch", "bij,bjk->bik", [(0, 2, 3), (0, 3, 4)]),
]


def write(root):
    for name, equation, shapes in EQUATIONS:
        operands = [sample(s, "float32") for s in shapes]
        write_case(root, f"einsum_{name}", "Einsum", operands, [einsum_ref(equation, operands)],
                   attrs={"equation": equation}, rtol=1e-5, atol=1e-5)
    for dtype in DTYPES:
        for name, equation, shapes in [("matmul", "ij,jk->ik", [(3, 4), (4, 5)]),
                                       ("trace", "ii->", [(4, 4)]),
                                       ("batch_dot", "bi,bi->b", [(3, 6), (3, 6)]),
                                       ("sum_rows", "ij->j", [(3, 5)])]:
            operands = [sample(s, dtype) for s in shapes]
            tol = tolerance(dtype)
            write_case(root, f"einsum_{name}_{dtype}", "Einsum", operands, [einsum_ref(equation, operands)],
                       attrs={"equation": equation}, rtol=tol, atol=tol)
    # Big enough for the thread pool: many small products, one large product, many dot products.
    for name, equation, shapes in [("many_batches", "bij,bjk->bik", [(64, 16, 16), (64, 16, 16)]),
                                   ("large_matmul", "ik,kj->ij", [(96, 80), (80, 70)]),
                                   ("many_dots", "bi,bi->b", [(5000, 8), (5000, 8)])]:
        operands = [sample(s, "float32") for s in shapes]
        write_case(root, f"einsum_{name}", "Einsum", operands, [einsum_ref(equation, operands)],
                   attrs={"equation": equation}, rtol=1e-4, atol=1e-4)
