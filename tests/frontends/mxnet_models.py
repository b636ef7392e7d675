#!/usr/bin/env python3
"""Gluon model-zoo vision nets run by real MXNet 1.9.1 and by Kiln's MXNet importer, compared.

  mxnet_models.py [--venv DIR] generate OUT [--models a,b]
        MXNet builds each net with random weights (pretrained=False; no network), randomises the
        BatchNorm statistics too, hybridizes it, runs it on a random input and exports it:
        OUT/NAME-symbol.json, OUT/NAME-0000.params, OUT/NAME-input.npy, OUT/NAME-output.npy
  mxnet_models.py [--venv DIR] all OUT --predict EXE [--models a,b]
        generate, then for every net `EXE symbol.json params input.npy kiln-output.npy` and compare:
        max |kiln - mxnet| / max |mxnet| must stay below 1e-4 (op_mix is a hand-built symbol
        covering the converters the zoo nets do not reach; resnet_prelu_legacy a small ResNet with
        PReLU written in the pre-NNVM JSON form, which Kiln loads as saved: no input shapes given;
        vision_mix_legacy the ops of detection and segmentation nets, also in the pre-NNVM form)

MXNet 1.x needs numpy < 1.24, so it lives in its own venv (.venv-mxnet, made by
scripts/setup-mxnet.sh); the script re-runs itself with that venv's Python.
"""
import argparse
import os
import subprocess
import sys
import time

# (name, input side). The default list runs every net the importer is checked on; inceptionv3 needs
# 299x299 because its last pooling window is fixed.
MODELS = [
    ("resnet18_v1", 224),
    ("resnet18_v2", 224),
    ("mobilenet1.0", 224),
    ("mobilenetv2_1.0", 224),
    ("squeezenet1.0", 224),
    ("densenet121", 224),
    ("vgg11", 224),
    ("inceptionv3", 299),
    ("op_mix", 9),  # not a zoo net: a symbol that uses the ops the nets above do not
    ("resnet_prelu_legacy", 32),  # not a zoo net: face-recognition style blocks, legacy JSON
    ("vision_mix_legacy", 8),  # not a zoo net: UpSampling, Crop, ROIPooling, LRN..., legacy JSON
    ("vision_mix_as_saved_legacy", 8),  # the same, loaded without input shapes
]
HAND_BUILT = {"op_mix", "resnet_prelu_legacy", "vision_mix_legacy", "vision_mix_as_saved_legacy"}
# Nets Kiln loads as they were saved, without being told the input shape.
AS_SAVED = {"resnet_prelu_legacy", "vision_mix_as_saved_legacy"}
TOLERANCE = 1e-4


def use_venv(venv):
    """Re-runs this script with the venv's Python unless it already runs there."""
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        sys.exit(f"mxnet_models: {venv} is missing: run scripts/setup-mxnet.sh to install MXNet 1.9.1 there")
    if os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])


def randomize(net, rng):
    """Random weights everywhere, including BatchNorm's running statistics (which initialize() sets
    to 0 and 1), so that every term of the inference formula is exercised."""
    import mxnet as mx
    import numpy as np
    for name, param in net.collect_params().items():
        shape = param.shape
        if name.endswith("running_var") or name.endswith("moving_var"):
            value = rng.uniform(0.5, 1.5, shape)
        elif name.endswith("gamma"):
            value = rng.uniform(0.5, 1.5, shape)
        elif name.endswith(("running_mean", "moving_mean", "beta", "bias")):
            value = rng.uniform(-0.1, 0.1, shape)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            value = rng.normal(0.0, (2.0 / fan_in) ** 0.5, shape)
        param.set_data(mx.nd.array(value.astype("float32")))


def op_mix():
    """A symbol over a (1, 4, 9, 9) input exercising many converters; every branch is flattened
    into one output row so that one comparison covers them all."""
    import mxnet as mx
    s = mx.sym
    x = s.Variable("data")
    branches = [
        s.Deconvolution(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 1), num_filter=3, no_bias=False,
                        name="deconv"),
        s.Pooling(x, pool_type="avg", kernel=(2, 2), stride=(2, 2), pooling_convention="full",
                  count_include_pad=False, name="avg_full"),
        s.Pooling(x, pool_type="max", kernel=(3, 3), stride=(2, 2), pad=(1, 1), name="max_pad"),
        s.Pooling(x, pool_type="sum", global_pool=True, kernel=(1, 1), name="gsum"),
        s.LeakyReLU(x, act_type="prelu", name="prelu"),
        s.LeakyReLU(x, act_type="elu", slope=0.3, name="elu"),
        s.LeakyReLU(x, act_type="leaky", slope=0.1, name="leaky"),
        s.Activation(x, act_type="softrelu", name="softrelu"),
        s.Activation(x, act_type="softsign", name="softsign"),
        s.log_softmax(x, axis=1, name="logsm"),
        s.softmax(x, axis=2, name="sm"),
        s.slice_axis(x, axis=2, begin=1, end=None, name="sl"),
        s.expand_dims(s.mean(x, axis=(2, 3), name="mean"), axis=1, name="ex"),
        s.max(x, axis=1, keepdims=True, name="maxr"),
        s.clip(x, a_min=-0.5, a_max=0.5, name="clip"),
        s.transpose(x, axes=(0, 2, 3, 1), name="tr"),
        s.Reshape(x, shape=(0, -3, -2), name="rs"),
        s.BatchNorm(x, eps=1e-4, name="bn_fixed"),
        s.BatchNorm(x, fix_gamma=False, name="bn"),
        s.add_n(x, x * 2.0, x - 1.0, name="addn"),
        s._internal._rdiv_scalar(x * x + 1.0, scalar=2.0, name="rdiv"),
        s._internal._rminus_scalar(x, scalar=3.0, name="rminus"),
        s._internal._power_scalar(x * x + 0.5, scalar=1.5, name="pow"),
        s.broadcast_maximum(x, s.mean(x, axis=1, keepdims=True), name="bmax"),
        s.split(s.slice_axis(x, axis=3, begin=0, end=8, name="sl8"), num_outputs=2, axis=3, name="sp")[1],
        s.SliceChannel(x, num_outputs=4, axis=1, squeeze_axis=True, name="sq")[2],
        s.FullyConnected(x, num_hidden=5, flatten=False, name="fc_last"),
        s.Cast(s.Cast(x, dtype="float16"), dtype="float32", name="cast"),
        s.LayerNorm(x, axis=1, eps=1e-3, name="ln_channels"),
        s.LayerNorm(x, name="ln_last"),
        s.take(s.Variable("table", shape=(7, 3)), x * 9.0, mode="clip", name="take_clip"),
        s.take(s.Variable("table2", shape=(5, 2)), x * 3.0, mode="wrap", name="take_wrap"),
    ]
    return s.Concat(*[s.Flatten(b) for b in branches], dim=1, name="all")


def vision_mix(as_saved=False):
    """A symbol over a (1, 4, 8, 8) input with the ops of detection and segmentation nets of the
    model-zoo era and the activations op_mix leaves out; written in the legacy JSON form. The copy
    Kiln loads as saved (no input shapes) leaves out UpSampling of several inputs, whose scales
    depend on shapes Kiln must know at import."""
    import mxnet as mx
    s = mx.sym
    x = s.Variable("data")
    half = s.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="half")
    six = s.Pooling(x, pool_type="avg", kernel=(3, 3), stride=(1, 1), name="six")
    branches = [
        s.UpSampling(x, scale=2, sample_type="nearest", num_args=1, name="up_nearest"),
        s.UpSampling(x, scale=2, sample_type="bilinear", num_filter=4, num_args=1, name="up_bilinear2"),
        s.UpSampling(x, scale=3, sample_type="bilinear", num_filter=4, num_args=1, name="up_bilinear3"),
        s.Crop(x, h_w=(5, 6), offset=(1, 2), num_args=1, name="crop_offset"),
        s.Crop(x, h_w=(5, 5), center_crop=True, num_args=1, name="crop_center"),
        s.Crop(x, six, center_crop=True, num_args=2, name="crop_like"),
        s.Crop(x, half, offset=(3, 1), num_args=2, name="crop_like_offset"),
        s.Reshape(s.ROIPooling(x, s.Variable("rois", shape=(4, 5)), pooled_size=(2, 3), spatial_scale=0.5,
                               name="roipool"), shape=(1, -1), name="roi_row"),
        s.LRN(x, nsize=3, alpha=1e-2, beta=0.75, knorm=1.5, name="lrn"),
        s.LeakyReLU(x, act_type="rrelu", lower_bound=0.1, upper_bound=0.3, name="rrelu")[0],  # (out, mask)
        s.LeakyReLU(x, act_type="selu", name="selu"),
        s.LeakyReLU(x, act_type="gelu", name="gelu"),
        s.SoftmaxActivation(x, mode="channel", name="sm_channel"),
        s.SoftmaxActivation(s.Flatten(x), name="sm_instance"),
        s.SoftmaxActivation(x, name="sm_instance4d"),
        s.Dropout(x, p=0.5, name="drop"),
    ]
    if not as_saved:
        branches += [
            s.UpSampling(x, half, scale=2, sample_type="nearest", num_args=2, multi_input_mode="sum", name="up_sum"),
            s.UpSampling(x, half, scale=3, sample_type="nearest", num_args=2, name="up_concat"),
        ]
    return s.Concat(*[s.Flatten(b) for b in branches], dim=1, name="all")


# Region rows (batch_index, x1, y1, x2, y2) in input pixels of a 16x16 image (spatial_scale 0.5 maps
# them onto the 8x8 feature map): an ordinary box, one reaching past the border, an inverted one
# (forced to 1x1) and one whose halves round.
VISION_ROIS = [[0, 2, 2, 11, 9], [0, 8, 4, 20, 18], [0, 9, 9, 3, 3], [0, 1, 3, 6, 12]]


def generate_symbol(out, rng, name, net, x_shape, legacy=False):
    """Random arguments and auxiliary states for `net`, MXNet's output on a random input, and the
    symbol (in the legacy JSON form when asked; MXNet then runs what it reads back) and params."""
    import mxnet as mx
    import numpy as np
    x = rng.uniform(-1.0, 1.0, x_shape).astype("float32")
    arg_shapes, _, aux_shapes = net.infer_shape(data=x.shape)
    args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, sh).astype("float32"))
            for n, sh in zip(net.list_arguments(), arg_shapes)}
    args["data"] = mx.nd.array(x)
    if "rois" in args:
        args["rois"] = mx.nd.array(np.array(VISION_ROIS, dtype="float32"))
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.5, sh).astype("float32"))
           for n, sh in zip(net.list_auxiliary_states(), aux_shapes)}
    symbol_path = os.path.join(out, f"{name}-symbol.json")
    if legacy:
        with open(symbol_path, "w") as f:
            f.write(legacy_json(net.tojson()))
        net = mx.sym.load(symbol_path)
    else:
        net.save(symbol_path)
    y = net.bind(mx.cpu(), args, aux_states=aux).forward(is_train=False)[0].asnumpy()
    saved = {f"arg:{n}": a for n, a in args.items() if n != "data"}
    saved.update({f"aux:{n}": a for n, a in aux.items()})
    mx.nd.save(os.path.join(out, f"{name}-0000.params"), saved)
    return x, y


def resnet_prelu():
    """A small ResNet as MXNet's face-recognition models of the model-zoo era build it: BatchNorm
    with fix_gamma, LeakyReLU(act_type='prelu') after each convolution, residual additions, global
    pooling, a FullyConnected embedding and SoftmaxOutput."""
    import mxnet as mx
    s = mx.sym

    def unit(x, channels, stride, name):
        y = s.Convolution(x, num_filter=channels, kernel=(3, 3), stride=stride, pad=(1, 1), no_bias=True,
                          name=f"{name}_conv1")
        y = s.BatchNorm(y, fix_gamma=False, eps=2e-5, name=f"{name}_bn1")
        y = s.LeakyReLU(y, act_type="prelu", name=f"{name}_relu1")
        y = s.Convolution(y, num_filter=channels, kernel=(3, 3), pad=(1, 1), no_bias=True, name=f"{name}_conv2")
        y = s.BatchNorm(y, fix_gamma=True, eps=2e-5, name=f"{name}_bn2")
        shortcut = x
        if stride != (1, 1):
            shortcut = s.Convolution(x, num_filter=channels, kernel=(1, 1), stride=stride, no_bias=True,
                                     name=f"{name}_sc")
        return s.LeakyReLU(y + shortcut, act_type="prelu", name=f"{name}_relu2")

    x = s.Variable("data")
    y = s.Convolution(x, num_filter=8, kernel=(3, 3), pad=(1, 1), no_bias=True, name="conv0")
    y = s.LeakyReLU(s.BatchNorm(y, fix_gamma=False, name="bn0"), act_type="prelu", name="relu0")
    y = unit(y, 8, (1, 1), "stage1")
    y = unit(y, 16, (2, 2), "stage2")
    y = s.Pooling(y, kernel=(2, 2), pool_type="avg", global_pool=True, name="pool")
    y = s.FullyConnected(s.Flatten(y), num_hidden=10, name="fc1")
    return s.SoftmaxOutput(y, name="softmax")


def legacy_json(symbol_json):
    """The pre-NNVM form of a symbol file (MXNet before 0.9): attributes under "param", inputs as
    [node, index] pairs, a backward_source_id per node, no graph attributes."""
    import json
    doc = json.loads(symbol_json)
    for node in doc["nodes"]:
        node["param"] = node.pop("attrs", {})
        node["inputs"] = [entry[:2] for entry in node["inputs"]]
        node["backward_source_id"] = -1
    doc.pop("attrs", None)
    doc.pop("node_row_ptr", None)
    return json.dumps(doc, indent=2)


def generate_resnet_prelu(out, rng, side):
    import mxnet as mx
    net = resnet_prelu()
    x = rng.uniform(-1.0, 1.0, (1, 3, side, side)).astype("float32")
    arg_shapes, _, aux_shapes = net.infer_shape(data=x.shape)
    args = {}
    for n, sh in zip(net.list_arguments(), arg_shapes):
        if n.endswith("_gamma") and "relu" in n:
            args[n] = mx.nd.array(rng.uniform(0.05, 0.4, sh).astype("float32"))  # PReLU slopes
        else:
            args[n] = mx.nd.array(rng.normal(0.0, 0.3, sh).astype("float32"))
    args["data"] = mx.nd.array(x)
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.5, sh).astype("float32")) for n, sh in zip(net.list_auxiliary_states(),
                                                                                     aux_shapes)}
    params = {f"arg:{n}": a for n, a in args.items() if n not in ("data", "softmax_label")}
    params.update({f"aux:{n}": a for n, a in aux.items()})
    symbol_path = os.path.join(out, "resnet_prelu_legacy-symbol.json")
    with open(symbol_path, "w") as f:
        f.write(legacy_json(net.tojson()))
    mx.nd.save(os.path.join(out, "resnet_prelu_legacy-0000.params"), params)
    # MXNet itself reads the legacy file back (upgrading it), and that is what Kiln must match.
    loaded = mx.sym.load(symbol_path)
    args.pop("softmax_label", None)
    executor = loaded.bind(mx.cpu(), {**args, "softmax_label": mx.nd.zeros((1,))}, aux_states=aux)
    return x, executor.forward(is_train=False)[0].asnumpy()


def generate(out, models):
    import mxnet as mx
    import numpy as np
    from mxnet.gluon.model_zoo import vision
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    for name, side in models:
        if name in HAND_BUILT:
            if name == "resnet_prelu_legacy":
                x, y = generate_resnet_prelu(out, rng, side)
            else:
                net = op_mix() if name == "op_mix" else vision_mix(as_saved=name in AS_SAVED)
                x, y = generate_symbol(out, rng, name, net, (1, 4, side, side), legacy=name.endswith("_legacy"))
            np.save(os.path.join(out, f"{name}-input.npy"), x)
            np.save(os.path.join(out, f"{name}-output.npy"), y)
            print(f"mxnet_models: {name}: input {x.shape}, output {y.shape}", flush=True)
            continue
        net = vision.get_model(name, pretrained=False)
        net.initialize(mx.init.Xavier())
        x = rng.uniform(-1.0, 1.0, (1, 3, side, side)).astype("float32")
        net(mx.nd.array(x))  # deferred initialization fixes every shape
        randomize(net, rng)
        net.hybridize(static_alloc=True)
        y = net(mx.nd.array(x)).asnumpy()
        net.export(os.path.join(out, name))
        np.save(os.path.join(out, f"{name}-input.npy"), x)
        np.save(os.path.join(out, f"{name}-output.npy"), y)
        print(f"mxnet_models: {name}: input {x.shape}, output {y.shape}", flush=True)


def compare(out, models, predict):
    import numpy as np
    failures = 0
    for name, _ in models:
        prefix = os.path.join(out, name)
        got_path = f"{prefix}-kiln-output.npy"
        start = time.time()
        run = subprocess.run([predict, f"{prefix}-symbol.json", f"{prefix}-0000.params", f"{prefix}-input.npy",
                              got_path] + (["--as-saved"] if name in AS_SAVED else []))
        seconds = time.time() - start
        if run.returncode != 0:
            print(f"FAIL {name}: {predict} exited with {run.returncode}")
            failures += 1
            continue
        want = np.load(f"{prefix}-output.npy")
        got = np.load(got_path)
        if got.shape != want.shape:
            print(f"FAIL {name}: output shape {got.shape}, MXNet's is {want.shape}")
            failures += 1
            continue
        scale = float(np.max(np.abs(want))) or 1.0
        error = float(np.max(np.abs(got.astype("float64") - want))) / scale
        verdict = "ok  " if error < TOLERANCE else "FAIL"
        print(f"{verdict} {name}: max abs error / max abs value = {error:.3g} ({seconds:.1f} s in Kiln)")
        failures += error >= TOLERANCE
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", default=os.path.join(os.path.dirname(__file__), "..", "..", ".venv-mxnet"))
    parser.add_argument("mode", choices=["generate", "all"])
    parser.add_argument("out")
    parser.add_argument("--predict", help="the mxnet_predict program (mode all)")
    parser.add_argument("--models", help="comma-separated subset of: " + ",".join(m for m, _ in MODELS))
    args = parser.parse_args()
    use_venv(os.path.abspath(args.venv))
    models = MODELS
    if args.models:
        wanted = args.models.split(",")
        unknown = set(wanted) - {m for m, _ in MODELS}
        if unknown:
            sys.exit(f"mxnet_models: unknown models {sorted(unknown)}")
        models = [m for m in MODELS if m[0] in wanted]
    generate(args.out, models)
    if args.mode == "all":
        if not args.predict:
            sys.exit("mxnet_models: mode all needs --predict EXE")
        sys.exit(compare(args.out, models, args.predict))


if __name__ == "__main__":
    main()
