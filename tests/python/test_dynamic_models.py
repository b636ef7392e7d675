"""Models whose shapes are decided by values, through mx.Predictor, compared with ONNX Runtime:
a YOLO-style detector with NonMaxSuppression inside the graph (the number of boxes depends on the
data), and a model whose Resize sizes and Reshape shape are graph inputs. Weights are random;
the models are written here with onnx.helper."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln as mx
from onnx_models import ort_run, save

RTOL = 1e-4


def detector(path, rng, anchors_side=8):
    """image (1, 3, 16, 16) -> a strided Conv head with 5 values per cell (box, objectness) ->
    boxes (1, N, 4), scores (1, 1, N) -> NonMaxSuppression -> the kept boxes and their scores."""
    w = numpy_helper.from_array(rng.normal(0, 0.5, (5, 3, 2, 2)).astype(np.float32), "head_w")
    b = numpy_helper.from_array(rng.normal(0, 0.2, (5,)).astype(np.float32), "head_b")
    n = anchors_side * anchors_side
    consts = [
        numpy_helper.from_array(np.array([1, 5, n], np.int64), "flat_shape"),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([4], np.int64), "four"),
        numpy_helper.from_array(np.array([5], np.int64), "five"),
        numpy_helper.from_array(np.array([2], np.int64), "axis2"),
        numpy_helper.from_array(np.array([20], np.int64), "max_boxes"),
        numpy_helper.from_array(np.array([0.3], np.float32), "iou"),
        numpy_helper.from_array(np.array([0.5], np.float32), "score_min"),
        numpy_helper.from_array(np.array([2], np.int64), "box_column"),
        numpy_helper.from_array(np.array([16.0], np.float32), "scale"),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "head_w", "head_b"], ["head"], strides=[2, 2], name="head"),
        helper.make_node("Reshape", ["head", "flat_shape"], ["flat"], name="flat"),
        helper.make_node("Transpose", ["flat"], ["cells"], perm=[0, 2, 1], name="cells"),
        helper.make_node("Slice", ["cells", "zero", "four", "axis2"], ["raw_boxes"], name="raw_boxes"),
        helper.make_node("Sigmoid", ["raw_boxes"], ["unit_boxes"], name="unit_boxes"),
        helper.make_node("Mul", ["unit_boxes", "scale"], ["boxes"], name="boxes"),
        helper.make_node("Slice", ["cells", "four", "five", "axis2"], ["raw_scores"], name="raw_scores"),
        helper.make_node("Sigmoid", ["raw_scores"], ["cell_scores"], name="cell_scores"),
        helper.make_node("Transpose", ["cell_scores"], ["scores"], perm=[0, 2, 1], name="scores"),
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_boxes", "iou", "score_min"], ["selected"],
                         center_point_box=1, name="nms"),
        helper.make_node("Gather", ["selected", "box_column"], ["box_index_2d"], axis=1, name="box_index_2d"),
        helper.make_node("Flatten", ["box_index_2d"], ["box_index_col"], axis=0, name="box_index_col"),
        helper.make_node("Squeeze", ["box_index_col", "zero"], ["box_index"], name="box_index"),
        helper.make_node("Squeeze", ["boxes", "zero"], ["boxes_2d"], name="boxes_2d"),
        helper.make_node("Gather", ["boxes_2d", "box_index"], ["kept_boxes"], axis=0, name="kept_boxes"),
        helper.make_node("Flatten", ["scores"], ["scores_row"], axis=2, name="scores_row"),
        helper.make_node("Squeeze", ["scores_row", "zero"], ["scores_1d_2"], name="scores_1d_2"),
        helper.make_node("Flatten", ["scores_1d_2"], ["scores_col"], axis=0, name="scores_col"),
        helper.make_node("Squeeze", ["scores_col", "zero"], ["scores_1d"], name="scores_1d"),
        helper.make_node("Gather", ["scores_1d", "box_index"], ["kept_scores"], axis=0, name="kept_scores"),
    ]
    graph = helper.make_graph(
        nodes, "detector",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("selected", TensorProto.INT64, ["k", 3]),
         helper.make_tensor_value_info("kept_boxes", TensorProto.FLOAT, ["k", 4]),
         helper.make_tensor_value_info("kept_scores", TensorProto.FLOAT, ["k"])],
        [w, b] + consts)
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path, full_check=False)


def test_detector_with_nms_inside_the_graph_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(5)
    path = detector(tmp_path / "detector.onnx", rng)
    p = mx.Predictor(path)
    counts = set()
    for _ in range(6):
        image = rng.normal(0, 1, (1, 3, 16, 16)).astype(np.float32)
        want = ort_run(path, {"image": image})
        got = [t.asnumpy() for t in p.predict([image])]
        counts.add(want[0].shape[0])
        np.testing.assert_array_equal(got[0], want[0])
        for g, w in zip(got[1:], want[1:]):
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-6)
    assert len(counts) > 1, "the inputs should keep different numbers of boxes"
    assert p.num_cached_plans == 1  # one input shape; the sizes after NMS are planned inside


def resize_reshape(path):
    """x (1, 2, H, W), sizes (4,) int64, shape (k,) int64 -> Reshape(Resize(x, sizes), shape)."""
    nodes = [
        helper.make_node("Resize", ["x", "", "", "sizes"], ["resized"], mode="linear", name="resize"),
        helper.make_node("Reshape", ["resized", "shape"], ["y"], name="reshape"),
    ]
    graph = helper.make_graph(
        nodes, "resize_reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "h", "w"]),
         helper.make_tensor_value_info("sizes", TensorProto.INT64, [4]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, ["k"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path, check=False)


def test_runtime_resize_sizes_and_reshape_shape_match_onnxruntime(tmp_path):
    rng = np.random.default_rng(6)
    path = resize_reshape(tmp_path / "resize_reshape.onnx")
    p = mx.Predictor(path)
    cases = [((1, 2, 5, 7), [1, 2, 10, 14], [2, -1]), ((1, 2, 5, 7), [1, 2, 3, 4], [1, 2, 12]),
             ((1, 2, 4, 4), [1, 2, 8, 8], [0, 0, -1]), ((1, 2, 5, 7), [1, 2, 10, 14], [2, -1])]
    for x_shape, sizes, shape in cases:
        x = rng.normal(0, 1, x_shape).astype(np.float32)
        feeds = {"x": x, "sizes": np.array(sizes, np.int64), "shape": np.array(shape, np.int64)}
        want = ort_run(path, feeds)[0]
        got = p.predict(feeds)[0].asnumpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-6)
    assert p.num_cached_plans == 3  # the last case repeats the first: its plan is reused


def test_dynamic_size_over_the_limit_names_the_node(tmp_path):
    rng = np.random.default_rng(7)
    path = resize_reshape(tmp_path / "resize_reshape.onnx")
    p = mx.Predictor(path, max_dynamic_elements=1000)
    x = rng.normal(0, 1, (1, 2, 4, 4)).astype(np.float32)
    with pytest.raises(mx.KilnError, match="resize.*max_dynamic_elements"):
        p.predict({"x": x, "sizes": np.array([1, 2, 400, 400], np.int64), "shape": np.array([-1], np.int64)})
    got = p.predict({"x": x, "sizes": np.array([1, 2, 8, 8], np.int64), "shape": np.array([-1], np.int64)})
    assert got[0].shape == (128,)
