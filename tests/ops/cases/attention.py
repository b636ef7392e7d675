"""numpy cases for the transformer family (Attention, RotaryEmbedding): every float dtype, 3-D
grouped-query inputs with a KV cache, mask broadcasting corners (short, rank-1, rank-3, integer
masks), sliding windows, the external cache's valid lengths, softmax precision, every
qk_matmul_output mode, empty tensors and odd sizes. Expected values follow the spec's formulas in
float64; 16-bit cases allow for the rounding of the intermediates the spec stores in 16 bits."""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20260523)

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16), BF16]
TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-9, np.dtype(np.float16): 5e-3, BF16: 4e-2}
DTYPE_NAME = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64", np.dtype(np.float16): "float16",
              BF16: "bfloat16"}


def sample(shape, dtype, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(dtype)


def attention_ref(q, k, v, attn_mask=None, past_key=None, past_value=None, nonpad=None, scale=None,
                  is_causal=0, q_num_heads=None, kv_num_heads=None, softcap=0.0, mode=0, left=-1, right=-1):
    """Y, present_key, present_value, qk_matmul_output in float64, as the spec defines them."""
    f = lambda a: None if a is None else np.asarray(a).astype(np.float64)  # noqa: E731
    q, k, v = f(q), f(k), f(v)
    three_d = q.ndim == 3
    if three_d:
        b = q.shape[0]
        split = lambda a, heads: a.reshape(b, a.shape[1], heads, a.shape[2] // heads)  # noqa: E731
        q = split(q, q_num_heads).transpose(0, 2, 1, 3)
        k = split(k, kv_num_heads).transpose(0, 2, 1, 3)
        v = split(v, kv_num_heads).transpose(0, 2, 1, 3)
    if past_key is not None:
        k = np.concatenate([f(past_key), k], axis=2)
        v = np.concatenate([f(past_value), v], axis=2)
    batch, q_heads, q_len, head_size = q.shape
    kv_heads, total = k.shape[1], k.shape[2]
    if scale is None:
        scale = 1 / np.sqrt(head_size)
    group = q_heads // kv_heads if kv_heads else 1
    keys, values = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    raw = (q @ keys.transpose(0, 1, 3, 2)) * scale
    capped = softcap * np.tanh(raw / softcap) if softcap > 0 else raw

    if past_key is not None:
        offset = np.full(batch, past_key.shape[2])
    elif nonpad is not None:
        offset = np.asarray(nonpad) - q_len
    else:
        offset = np.zeros(batch, dtype=np.int64)
    i = np.arange(q_len)[None, :, None]
    j = np.arange(total)[None, None, :]
    position = i + offset[:, None, None]  # (batch, q, 1)
    allowed = np.ones((batch, q_len, total), dtype=bool)
    if is_causal:
        allowed &= j <= position
    if left >= 0:
        allowed &= position - j <= left
    if right >= 0:
        allowed &= j - position <= right
    if nonpad is not None:
        allowed &= j < np.asarray(nonpad)[:, None, None]
    bias = np.where(allowed, 0.0, -np.inf)[:, None]  # (batch, 1, q, total)
    if attn_mask is not None:
        m = np.asarray(attn_mask)
        pad = [(0, 0)] * (m.ndim - 1) + [(0, total - m.shape[-1])]
        if m.dtype == np.bool_:
            m = np.where(np.pad(m, pad, constant_values=False), 0.0, -np.inf)
        else:
            m = np.pad(m.astype(np.float64), pad, constant_values=-np.inf)
        bias = bias + m
    bias = np.broadcast_to(bias, (batch, q_heads, q_len, total))
    x = capped + bias
    row_masked = np.all(bias == -np.inf, axis=-1, keepdims=True)
    top = np.max(x, axis=-1, keepdims=True, initial=-np.inf)
    e = np.exp(x - np.where(top == -np.inf, 0.0, top))
    s = np.sum(e, axis=-1, keepdims=True)
    p = np.where(row_masked, 0.0, e / np.where(s == 0, 1.0, s))
    y = p @ values
    if three_d:
        y = y.transpose(0, 2, 1, 3).reshape(batch, q_len, -1)
    qk = {0: raw, 1: capped, 2: x, 3: p}[mode]
    return y, k, v, qk


def write_attention(root, name, inputs, attrs=None, outputs=1, ref_args=None, tol=None, dtype=None):
    """inputs: [Q, K, V, attn_mask, past_key, past_value, nonpad] (trailing Nones dropped)."""
    attrs = attrs or {}
    dtype = np.dtype(dtype or inputs[0].dtype)
    names = ["attn_mask", "past_key", "past_value", "nonpad"]
    kwargs = {n: x for n, x in zip(names, inputs[3:])}
    kwargs.update(ref_args or {})
    for key, arg in (("scale", "scale"), ("is_causal", "is_causal"), ("q_num_heads", "q_num_heads"),
                     ("kv_num_heads", "kv_num_heads"), ("softcap", "softcap"), ("qk_matmul_output_mode", "mode"),
                     ("left_window_size", "left"), ("right_window_size", "right")):
        if key in attrs:
            kwargs[arg] = attrs[key]
    y, present_key, present_value, qk = attention_ref(*inputs[:3], **kwargs)
    v_dtype = inputs[2].dtype
    expected = [y.astype(dtype), present_key.astype(dtype), present_value.astype(v_dtype), qk.astype(dtype)]
    while inputs and inputs[-1] is None:
        inputs = inputs[:-1]
    tol = tol or TOLERANCE[dtype]
    write_case(root, name, "Attention", inputs, expected[:outputs], attrs, rtol=tol, atol=tol, num_outputs=outputs)


def write_attention_cases(root):
    for dtype in FLOATS:
        tag = DTYPE_NAME[dtype]
        # Odd sizes, a value head size unlike the query's, grouped heads, an additive 2-D mask.
        q, k, v = sample((2, 4, 3, 7), dtype), sample((2, 2, 5, 7), dtype), sample((2, 2, 5, 5), dtype)
        mask = sample((3, 5), dtype)
        write_attention(root, f"attention_gqa_mask_{tag}", [q, k, v, mask])
        write_attention(root, f"attention_gqa_causal_mask_{tag}", [q, k, v, mask], {"is_causal": 1})
        # 3-D inputs with a cache: every output, probabilities as qk_matmul_output.
        q, k, v = sample((2, 3, 4 * 6), dtype), sample((2, 2, 2 * 6), dtype), sample((2, 2, 2 * 3), dtype)
        past_key, past_value = sample((2, 2, 4, 6), dtype), sample((2, 2, 4, 3), dtype)
        write_attention(root, f"attention_3d_past_all_outputs_{tag}", [q, k, v, None, past_key, past_value],
                        {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1, "qk_matmul_output_mode": 3},
                        outputs=4)

    f32 = np.float32
    q, k, v = sample((2, 3, 4, 8), f32), sample((2, 3, 6, 8), f32), sample((2, 3, 6, 8), f32)
    # Each qk_matmul_output stage; with softcap, stage 0 is the product before the cap.
    for mode in range(4):
        write_attention(root, f"attention_qk_mode{mode}_softcap", [q, k, v, sample((4, 6), f32)],
                        {"qk_matmul_output_mode": mode, "softcap": 0.7}, outputs=4)
    write_attention(root, "attention_scale", [q, k, v], {"scale": 0.5})
    write_attention(root, "attention_scale_zero", [q, k, v], {"scale": 0.0})
    # Masks: rank 1 and shorter than the keys (the rest is masked), rank 3 (heads, q, keys),
    # (batch, 1, 1, keys) booleans, integers added as they are, a fully masked row.
    write_attention(root, "attention_mask_rank1_short_bool", [q, k, v, np.array([True, False, True, True])])
    write_attention(root, "attention_mask_rank3_short", [q, k, v, sample((3, 4, 5), f32)], {"is_causal": 1})
    write_attention(root, "attention_mask_batch_keys_bool", [q, k, v, RNG.random((2, 1, 1, 6)) > 0.3])
    write_attention(root, "attention_mask_int32", [q, k, v, RNG.integers(-2, 3, (4, 6)).astype(np.int32)])
    write_attention(root, "attention_mask_uint8", [q, k, v, RNG.integers(0, 3, (1, 6)).astype(np.uint8)])
    full = np.ones((2, 3, 4, 6), dtype=bool)
    full[1, 2, 3] = False
    full[0, :, 1] = False
    write_attention(root, "attention_mask_fully_masked_rows", [q, k, v, full], {"qk_matmul_output_mode": 3},
                    outputs=4)
    write_attention(root, "attention_mask_empty_keys", [q, k, v, np.zeros((4, 0), f32)])
    # Windows, with and without the causal frontier, with a cache (the frontier moves right).
    past_key, past_value = sample((2, 3, 3, 8), f32), sample((2, 3, 3, 8), f32)
    write_attention(root, "attention_window_both_past", [q, k, v, None, past_key, past_value],
                    {"left_window_size": 1, "right_window_size": 1}, outputs=3)
    write_attention(root, "attention_window_zero_causal", [q, k, v], {"left_window_size": 0, "is_causal": 1})
    write_attention(root, "attention_window_right_only", [q, k, v], {"right_window_size": 0})
    # The external cache's valid lengths: an empty cache (zero output), one past the keys.
    write_attention(root, "attention_nonpad_empty_and_long", [q, k, v, None, None, None,
                                                              np.array([0, 9], dtype=np.int64)], {"is_causal": 1})
    write_attention(root, "attention_nonpad_mask", [q, k, v, sample((2, 1, 4, 6), f32), None, None,
                                                    np.array([5, 2], dtype=np.int64)])
    # Softmax precision: float16 for float32 input, float for float16 input, double for bfloat16.
    write_attention(root, "attention_softmax_fp16_of_float32", [q, k, v], {"softmax_precision": 10},
                    tol=5e-3)
    h = np.float16
    qh, kh, vh = sample((1, 2, 3, 8), h), sample((1, 2, 5, 8), h), sample((1, 2, 5, 8), h)
    write_attention(root, "attention_softmax_float_of_fp16", [qh, kh, vh], {"softmax_precision": 1}, outputs=4)
    qb, kb, vb = sample((1, 2, 3, 8), BF16), sample((1, 2, 5, 8), BF16), sample((1, 2, 5, 8), BF16)
    write_attention(root, "attention_softmax_double_of_bf16", [qb, kb, vb], {"softmax_precision": 11})
    # V of another float type than Q (T2): present_value keeps it.
    write_attention(root, "attention_value_float64", [q, k, sample((2, 3, 6, 8), np.float64), None,
                                                      past_key, past_value.astype(np.float64)], outputs=3)
    # Multi-query 3-D without a cache: one K/V head for all query heads.
    write_attention(root, "attention_3d_mqa", [sample((2, 5, 3 * 4), f32), sample((2, 7, 4), f32),
                                               sample((2, 7, 6), f32)],
                    {"q_num_heads": 3, "kv_num_heads": 1, "left_window_size": 2})
    # 4-D inputs that state head counts matching their shapes (older opsets allowed it).
    write_attention(root, "attention_4d_with_head_attrs", [q, k, v], {"q_num_heads": 3, "kv_num_heads": 3})

    # Empty tensors: no batch, no queries, no new keys (the cache alone), no keys at all, no
    # value features.
    write_attention(root, "attention_empty_batch", [sample((0, 2, 3, 4), f32), sample((0, 2, 5, 4), f32),
                                                    sample((0, 2, 5, 4), f32)], outputs=4)
    write_attention(root, "attention_empty_queries", [sample((1, 2, 0, 4), f32), sample((1, 2, 5, 4), f32),
                                                      sample((1, 2, 5, 4), f32)], outputs=4)
    write_attention(root, "attention_empty_new_keys_past",
                    [sample((1, 2, 3, 4), f32), sample((1, 2, 0, 4), f32), sample((1, 2, 0, 4), f32), None,
                     sample((1, 2, 2, 4), f32), sample((1, 2, 2, 4), f32)], {"is_causal": 1}, outputs=3)
    write_attention(root, "attention_empty_keys", [sample((1, 2, 3, 4), f32), sample((1, 2, 0, 4), f32),
                                                   sample((1, 2, 0, 4), f32)], outputs=4)
    write_attention(root, "attention_empty_value_features", [sample((1, 2, 3, 4), f32), sample((1, 2, 5, 4), f32),
                                                             sample((1, 2, 5, 0), f32)])


def rotary_ref(x, cos, sin, position_ids=None, interleaved=0, rotary_embedding_dim=0, num_heads=None):
    shape = x.shape
    x = x.astype(np.float64)
    if x.ndim == 4:
        x = x.transpose(0, 2, 1, 3)
    else:
        x = x.reshape(shape[0], shape[1], num_heads, shape[2] // num_heads)
    rot = rotary_embedding_dim or x.shape[3]
    cos, sin = cos.astype(np.float64), sin.astype(np.float64)
    if position_ids is not None:
        cos, sin = cos[position_ids], sin[position_ids]
    cos, sin = cos[:, :, None, :], sin[:, :, None, :]
    out = x.copy()
    if interleaved:
        x1, x2 = x[..., 0:rot:2], x[..., 1:rot:2]
        out[..., 0:rot:2] = cos * x1 - sin * x2
        out[..., 1:rot:2] = sin * x1 + cos * x2
    else:
        half = rot // 2
        x1, x2 = x[..., :half], x[..., half:rot]
        out[..., :half] = cos * x1 - sin * x2
        out[..., half:rot] = sin * x1 + cos * x2
    return out.transpose(0, 2, 1, 3) if len(shape) == 4 else out.reshape(shape)


def write_rotary(root, name, x, cos, sin, position_ids=None, **attrs):
    y = rotary_ref(x, cos, sin, position_ids, **attrs).astype(x.dtype)
    inputs = [x, cos, sin] + ([position_ids] if position_ids is not None else [])
    tol = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3, BF16: 2e-2}[np.dtype(x.dtype)]
    write_case(root, name, "RotaryEmbedding", inputs, [y], attrs, rtol=tol, atol=tol)


def write_rotary_cases(root):
    for dtype in [np.dtype(np.float32), np.dtype(np.float16), BF16]:
        tag = DTYPE_NAME[dtype]
        x = sample((2, 3, 5, 10), dtype)
        positions = RNG.integers(0, 7, (2, 5)).astype(np.int64)
        write_rotary(root, f"rotary_positions_{tag}", x, sample((7, 5), dtype), sample((7, 5), dtype), positions)
        write_rotary(root, f"rotary_interleaved_partial_{tag}", x, sample((7, 3), dtype), sample((7, 3), dtype),
                     positions, interleaved=1, rotary_embedding_dim=6)
        write_rotary(root, f"rotary_3d_no_positions_{tag}", sample((2, 5, 3 * 6), dtype), sample((2, 5, 2), dtype),
                     sample((2, 5, 2), dtype), num_heads=3, rotary_embedding_dim=4)
    f32 = np.float32
    write_rotary(root, "rotary_3d_interleaved_positions", sample((3, 4, 2 * 8), f32), sample((9, 4), f32),
                 sample((9, 4), f32), RNG.integers(0, 9, (3, 4)).astype(np.int64), num_heads=2, interleaved=1)
    write_rotary(root, "rotary_4d_num_heads_stated", sample((1, 2, 3, 4), f32), sample((1, 3, 2), f32),
                 sample((1, 3, 2), f32), num_heads=2)
    write_rotary(root, "rotary_empty_batch", sample((0, 2, 3, 4), f32), sample((5, 2), f32), sample((5, 2), f32),
                 np.zeros((0, 3), dtype=np.int64))
    write_rotary(root, "rotary_empty_sequence", sample((2, 0, 8), f32), sample((2, 0, 2), f32),
                 sample((2, 0, 2), f32), num_heads=2)


def write(root):
    write_attention_cases(root)
    write_rotary_cases(root)
