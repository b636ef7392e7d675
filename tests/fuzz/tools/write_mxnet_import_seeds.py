"""Writes the MXNet importer fuzz target's seeds (tests/fuzz/corpus/mxnet_import) with MXNet 1.9.1's
own tojson: small symbols over the converters (a face-recognition block, the detection and
segmentation ops, Reshape's special codes and the tensor ops), each under 4 KiB so that mutations
reach every attribute; plus one in the pre-NNVM legacy form.
    .venv-mxnet/bin/python tests/fuzz/tools/write_mxnet_import_seeds.py"""
import json
import os

import mxnet as mx

OUT = os.path.join(os.path.dirname(__file__), "..", "corpus", "mxnet_import")


def write(name, text):
    assert len(text) < 4096, (name, len(text))
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text)


def main():
    s = mx.sym
    x = s.Variable("data")
    y = s.Convolution(x, num_filter=4, kernel=(3, 3), pad=(1, 1), no_bias=True, name="conv")
    y = s.LeakyReLU(s.BatchNorm(y, fix_gamma=False, name="bn"), act_type="prelu", name="prelu")
    y = s.Pooling(y, kernel=(2, 2), pool_type="avg", global_pool=True, name="pool")
    write("face_block-symbol.json", s.SoftmaxOutput(s.FullyConnected(s.Flatten(y), num_hidden=3, name="fc"),
                                                    name="softmax").tojson())
    rois = s.Variable("rois", shape=(2, 5))
    half = s.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="half")
    det = s.Concat(s.Flatten(s.UpSampling(half, scale=2, sample_type="nearest", num_args=1, name="up")),
                   s.Flatten(s.Crop(x, half, center_crop=True, num_args=2, name="crop")),
                   s.Reshape(s.ROIPooling(x, rois, pooled_size=(2, 2), spatial_scale=0.5, name="roi"), shape=(1, -1)),
                   dim=1, name="all")
    write("detection-symbol.json", det.tojson())
    t = s.Reshape(x, shape=(0, -3, -2), name="r1")
    t = s.Reshape(t, shape=(-4, 1, -1, -2), name="r2")
    t = s.slice_axis(t, axis=1, begin=0, end=2, name="sl")
    t = s.take(s.Variable("table", shape=(5, 2)), t, mode="clip", name="take")
    write("tensor_ops-symbol.json", s.transpose(t, name="tr").tojson())
    # The pre-NNVM form: attributes under "param", inputs as [node, index].
    doc = json.loads(s.Activation(s.FullyConnected(x, num_hidden=2, name="fc"), act_type="relu", name="act").tojson())
    for node in doc["nodes"]:
        node["param"] = node.pop("attrs", {})
        node["inputs"] = [entry[:2] for entry in node["inputs"]]
        node["backward_source_id"] = -1
    doc.pop("attrs", None)
    write("legacy-symbol.json", json.dumps(doc))


if __name__ == "__main__":
    main()
