#!/usr/bin/python3
"""Generates the small ONNX files tests/test-onnx.c reads.

Run with /usr/bin/python3 (Debian's python3-onnx and python3-numpy) from any
directory; it writes next to itself. The generated files are committed, so
the tests do not need python:

    /usr/bin/python3 tests/data/onnx/make_models.py

Good models: mlp.onnx (+ mlp_input.pb / mlp_output.pb computed with numpy),
initializers.onnx (one initializer per dtype and storage field),
attrs.onnx (every attribute type, unknown ops, an If with nested graphs
that reference an outer value), optional_io.onnx (omitted inputs/outputs),
opset6.onnx (an opset outside 7..17), legacy_inputs.onnx (weights listed as
graph inputs, IR 3 style).

Bad models (bad_*.onnx): each breaks one rule the importer must report.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(model, name, check=True):
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


def model(graph, opset=13, **kw):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kw)
    m.ir_version = 8
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def mlp():
    # y = relu(x @ W + b); W in float_data, b in raw_data.
    w = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0) / 4.0
    b = np.array([0.5, -1.0, 0.25], dtype=np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"], name="matmul"),
         helper.make_node("Add", ["xw", "b"], ["xwb"], name="add"),
         helper.make_node("Relu", ["xwb"], ["y"], name="relu")],
        "mlp", [f32("x", ["N", 4])], [f32("y", ["N", 3])],
        initializer=[helper.make_tensor("W", TensorProto.FLOAT, [4, 3], w.flatten(), raw=False),
                     helper.make_tensor("b", TensorProto.FLOAT, [3], b.tobytes(), raw=True)])
    save(model(g), "mlp.onnx")
    x = np.array([[1, 2, 3, 4], [2, 0.5, 0, -2]], dtype=np.float32)
    y = np.maximum(x @ w + b, 0).astype(np.float32)
    with open(os.path.join(HERE, "mlp_input.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    with open(os.path.join(HERE, "mlp_output.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())


def initializers():
    # One initializer per dtype, stored in its typed field, and a raw copy.
    # Values are chosen so the C test can list them: [1, -2, 3] (unsigned: [1, 2, 3]).
    kinds = [("f32", TensorProto.FLOAT, np.float32, [1.5, -2.0, 3.25]),
             ("f64", TensorProto.DOUBLE, np.float64, [1.5, -2.0, 3.25]),
             ("f16", TensorProto.FLOAT16, np.float16, [1.5, -2.0, 3.25]),
             ("i64", TensorProto.INT64, np.int64, [1, -2, 3]),
             ("i32", TensorProto.INT32, np.int32, [1, -2, 3]),
             ("i16", TensorProto.INT16, np.int16, [1, -2, 3]),
             ("i8", TensorProto.INT8, np.int8, [1, -2, 3]),
             ("u64", TensorProto.UINT64, np.uint64, [1, 2, 3]),
             ("u32", TensorProto.UINT32, np.uint32, [1, 2, 3]),
             ("u16", TensorProto.UINT16, np.uint16, [1, 2, 3]),
             ("u8", TensorProto.UINT8, np.uint8, [1, 2, 3]),
             ("bool", TensorProto.BOOL, np.bool_, [True, False, True])]
    inits, outs = [], []
    for name, code, npt, vals in kinds:
        arr = np.array(vals, dtype=npt)
        inits.append(helper.make_tensor("typed_" + name, code, [3], arr))
        inits.append(helper.make_tensor("raw_" + name, code, [3], arr.tobytes(), raw=True))
        outs += [helper.make_tensor_value_info("typed_" + name, code, [3]),
                 helper.make_tensor_value_info("raw_" + name, code, [3])]
    # bfloat16: int32_data holds the bit patterns (1.5 = 0x3fc0, -2 = 0xc000, 3.25 = 0x4050).
    bf = TensorProto(name="typed_bf16", data_type=TensorProto.BFLOAT16, dims=[3],
                     int32_data=[0x3fc0, 0xc000, 0x4050])
    inits.append(bf)
    outs.append(helper.make_tensor_value_info("typed_bf16", TensorProto.BFLOAT16, [3]))
    # A scalar and an empty tensor.
    inits.append(helper.make_tensor("scalar", TensorProto.FLOAT, [], [7.0]))
    inits.append(helper.make_tensor("empty", TensorProto.FLOAT, [0, 3], []))
    outs += [f32("scalar", []), f32("empty", [0, 3])]
    g = helper.make_graph([], "initializers", [], outs, initializer=inits)
    save(model(g), "initializers.onnx")


def attrs():
    # Foo (custom domain) carries one attribute of every type; Bar is an
    # unknown default-domain op. The If's branches use outer value 'x'.
    t = helper.make_tensor("t", TensorProto.INT64, [2], [4, 5])
    sub = helper.make_graph([helper.make_node("Neg", ["x"], ["neg_out"])], "sub", [],
                            [f32("neg_out", [2])])
    foo = helper.make_node("Foo", ["x"], ["a"], name="foo", domain="com.example",
                           f=0.5, i=-3, s="hello", floats=[1.0, 2.5], ints=[1, -2, 3],
                           strings=["p", "qr"], t=t, g=sub)
    bar = helper.make_node("Bar", ["a"], ["b"], name="bar")
    then_g = helper.make_graph([helper.make_node("Add", ["x", "x"], ["then_out"])], "then_body",
                               [], [f32("then_out", [2])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "x"], ["else_out"])], "else_body",
                               [], [f32("else_out", [2])])
    iff = helper.make_node("If", ["cond"], ["c"], name="if", then_branch=then_g, else_branch=else_g)
    g = helper.make_graph([foo, bar, iff], "attrs",
                          [f32("x", [2]), helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                          [f32("b", [2, "M"]), f32("c", [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid("com.example", 1)])
    m.ir_version = 8
    save(m, "attrs.onnx", check=False)


def optional_io():
    # Clip with no min; Dropout whose mask output is omitted (explicit "").
    mx = helper.make_tensor("max", TensorProto.FLOAT, [], [0.5])
    g = helper.make_graph(
        [helper.make_node("Clip", ["x", "", "max"], ["c"], name="clip"),
         helper.make_node("Dropout", ["c"], ["y", ""], name="dropout")],
        "optional_io", [f32("x", [3])], [f32("y", [3])], initializer=[mx])
    save(model(g), "optional_io.onnx", check=False)


def opset6():
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "opset6",
                          [f32("x", [2])], [f32("y", [2])])
    save(model(g, opset=6), "opset6.onnx")


def legacy_inputs():
    # IR 3: the weight is listed as a graph input too; it must be a constant.
    w = helper.make_tensor("w", TensorProto.FLOAT, [2], [2.0, 3.0])
    g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["y"])], "legacy",
                          [f32("x", [2]), f32("w", [2])], [f32("y", [2])], initializer=[w])
    m = model(g, opset=7)
    m.ir_version = 3
    save(m, "legacy_inputs.onnx")


def bad_models():
    relu = lambda i, o: helper.make_node("Relu", [i], [o])  # noqa: E731
    bad = {}
    bad["bad_undefined_input"] = helper.make_graph([relu("nope", "y")], "g", [f32("x", [2])],
                                                   [f32("y", [2])])
    bad["bad_duplicate_value"] = helper.make_graph([relu("x", "y"), relu("x", "y")], "g",
                                                   [f32("x", [2])], [f32("y", [2])])
    bad["bad_negative_dim"] = helper.make_graph([relu("x", "y")], "g", [f32("x", [2, -3])],
                                                [f32("y", [2])])
    bad["bad_huge_dims"] = helper.make_graph([relu("x", "y")], "g",
                                             [f32("x", [1 << 30, 1 << 30, 1 << 30])], [f32("y", [2])])
    bad["bad_zero_and_huge_dim"] = helper.make_graph([relu("x", "y")], "g",
                                                     [f32("x", [0, 1 << 62])], [f32("y", [2])])
    big = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 31, 1 << 31])
    bad["bad_huge_initializer"] = helper.make_graph([relu("w", "y")], "g", [], [f32("y", [2])],
                                                    initializer=[big])
    short = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2], raw_data=b"\0" * 7)
    bad["bad_raw_length"] = helper.make_graph([relu("w", "y")], "g", [], [f32("y", [2])],
                                              initializer=[short])
    few = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], float_data=[1.0, 2.0, 3.0])
    bad["bad_value_count"] = helper.make_graph([relu("w", "y")], "g", [], [f32("y", [4])],
                                               initializer=[few])
    bad["bad_rank"] = helper.make_graph([relu("x", "y")], "g", [f32("x", [1] * 9)], [f32("y", [2])])
    ext = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2])
    ext.data_location = TensorProto.EXTERNAL
    ext.external_data.add(key="location", value="weights.bin")
    bad["bad_external"] = helper.make_graph([relu("w", "y")], "g", [], [f32("y", [2])],
                                            initializer=[ext])
    st = helper.make_tensor("w", TensorProto.STRING, [1], [b"abc"])
    bad["bad_string"] = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                                          [helper.make_tensor_value_info("y", TensorProto.STRING, [1])],
                                          initializer=[st])
    bad["bad_missing_output"] = helper.make_graph([relu("x", "y")], "g", [f32("x", [2])],
                                                  [f32("z", [2])])
    for name, g in bad.items():
        save(model(g), name + ".onnx", check=False)

    m = helper.make_model(helper.make_graph([], "g", [], []))
    m.ClearField("graph")
    save(m, "bad_no_graph.onnx", check=False)


if __name__ == "__main__":
    mlp()
    initializers()
    attrs()
    optional_io()
    opset6()
    legacy_inputs()
    bad_models()
