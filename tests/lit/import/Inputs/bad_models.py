"""bad_models.py OUTDIR: writes the inputs errors.test gives lpu-import,
each built with onnx.helper and each valid ONNX (onnx.checker passes),
so that only the importer's rule refuses it:
  not_onnx.onnx      a text file, not a protobuf;
  unsupported.onnx   two operators no importer of ours supports: Hardmax
                     x2 (nodes `hardmax_first`, `hardmax_second`) and
                     TopK x1 (node `topk_best`), between supported Relus;
                     node names without digits, so that a test can find
                     each count as the first digit after the operator;
  nonzero.onnx       NonZero (node `find_positive`): its output's length
                     is the number of positive elements, known at run time;
  reshape_data.onnx  a Reshape (node `reshape_by_data`) whose shape comes
                     from the data: [-1, int(max(x))] through ReduceMax,
                     Cast, Unsqueeze and Concat, all supported operators;
  double.onnx        a DOUBLE (float64) graph input `x_double`;
  symbolic.onnx      a valid model whose input x has the symbolic dimension
                     `seq_len`: it imports only with --bucket seq_len=...;
  two_writers.onnx   not valid ONNX (onnx.checker refuses it, so it is
                     saved unchecked): nodes `relu_y` and `neg_y` both
                     write `y`;
  names.onnx         a valid model whose inputs' names need sanitizing:
                     `input.1:0` (float [2, 8]) and `ids-0` (int64 [2]),
                     relu(input) + table[ids] with a 5 x 8 table.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, path):
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "bad", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="bad_models.py")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    f32 = TensorProto.FLOAT

    with open(os.path.join(out, "not_onnx.onnx"), "w") as f:
        f.write("This is not an ONNX model, only text with an .onnx name.\n")

    save(model(
        [helper.make_node("Relu", ["x"], ["r"], name="relu_in"),
         helper.make_node("Hardmax", ["r"], ["h1"], name="hardmax_first", axis=1),
         helper.make_node("Hardmax", ["h1"], ["h2"], name="hardmax_second", axis=1),
         helper.make_node("TopK", ["h2", "k"], ["values", "indices"], name="topk_best", axis=1),
         helper.make_node("Relu", ["values"], ["y"], name="relu_out")],
        [helper.make_tensor_value_info("x", f32, [4, 8])],
        [helper.make_tensor_value_info("y", f32, [4, 2])],
        [numpy_helper.from_array(np.array([2], dtype=np.int64), "k")]),
        os.path.join(out, "unsupported.onnx"))

    save(model(
        [helper.make_node("Greater", ["x", "zero"], ["positive"], name="is_positive"),
         helper.make_node("NonZero", ["positive"], ["where"], name="find_positive")],
        [helper.make_tensor_value_info("x", f32, [16])],
        # The length unknown but unnamed: no dim_param for --bucket to name.
        [helper.make_tensor_value_info("where", TensorProto.INT64, [1, None])],
        [numpy_helper.from_array(np.array(0, dtype=np.float32), "zero")]),
        os.path.join(out, "nonzero.onnx"))

    save(model(
        [helper.make_node("ReduceMax", ["x"], ["m"], name="max_all", keepdims=0),
         helper.make_node("Cast", ["m"], ["mi"], name="to_int", to=TensorProto.INT64),
         helper.make_node("Unsqueeze", ["mi", "axis0"], ["m1"], name="as_vector"),
         helper.make_node("Concat", ["minus_one", "m1"], ["shape"], name="make_shape", axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_by_data")],
        [helper.make_tensor_value_info("x", f32, [4, 6])],
        [helper.make_tensor_value_info("y", f32, [None, None])],
        [numpy_helper.from_array(np.array([0], dtype=np.int64), "axis0"),
         numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus_one")]),
        os.path.join(out, "reshape_data.onnx"))

    save(model(
        [helper.make_node("Relu", ["x_double"], ["y"], name="relu_double")],
        [helper.make_tensor_value_info("x_double", TensorProto.DOUBLE, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 3])]),
        os.path.join(out, "double.onnx"))

    save(model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", f32, [1, "seq_len", 8])],
        [helper.make_tensor_value_info("y", f32, [1, "seq_len", 8])]),
        os.path.join(out, "symbolic.onnx"))

    onnx.save(model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu_y"),
         helper.make_node("Neg", ["x"], ["y"], name="neg_y")],
        [helper.make_tensor_value_info("x", f32, [2, 3])],
        [helper.make_tensor_value_info("y", f32, [2, 3])]),
        os.path.join(out, "two_writers.onnx"))

    # An opset newer than the importer knows (operators changed meaning
    # after 17: Pad's axes, Split's uneven last chunk, Cast's saturation).
    onnx.save(model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", f32, [2, 3])],
        [helper.make_tensor_value_info("y", f32, [2, 3])], opset=18),
        os.path.join(out, "opset18.onnx"))

    # An initializer of a type no value holds (a string): it used to be
    # read as an empty tensor and crash the import where it was used.
    save(model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", f32, [2, 3])],
        [helper.make_tensor_value_info("y", f32, [2, 3])],
        [helper.make_tensor("words", TensorProto.STRING, [1], [b"abc"])]),
        os.path.join(out, "string_init.onnx"))

    # Node names that cannot stand in a comment as they are: a newline, a
    # control character, and (patched into the bytes) one that is not UTF-8.
    save(model(
        [helper.make_node("Relu", ["x"], ["r"], name="first\nline \x7f \u2713"),
         helper.make_node("Neg", ["r"], ["y"], name="BADBYTE")],
        [helper.make_tensor_value_info("x", f32, [2, 3])],
        [helper.make_tensor_value_info("y", f32, [2, 3])]),
        os.path.join(out, "node_names.onnx"))
    with open(os.path.join(out, "node_names.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(out, "node_names.onnx"), "wb") as f:
        f.write(data.replace(b"BADBYTE", b"BAD\xffYTE"))

    # An input of more elements than any tensor may hold.
    save(model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", f32, [2 ** 62, 64])],
        [helper.make_tensor_value_info("y", f32, [2 ** 62, 64])]),
        os.path.join(out, "huge_input.onnx"))

    table = np.arange(40, dtype=np.float32).reshape(5, 8) / 8
    save(model(
        [helper.make_node("Relu", ["input.1:0"], ["r"], name="relu"),
         helper.make_node("Gather", ["table", "ids-0"], ["g"], name="lookup", axis=0),
         helper.make_node("Add", ["r", "g"], ["y"], name="add")],
        [helper.make_tensor_value_info("input.1:0", f32, [2, 8]),
         helper.make_tensor_value_info("ids-0", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", f32, [2, 8])],
        [numpy_helper.from_array(table, "table")]),
        os.path.join(out, "names.onnx"))


if __name__ == "__main__":
    main()
