"""onnx_ops.py MODEL.onnx: prints what a test says about the graph it
imports, so that a test cannot pass on a graph other than its comment
describes (an exporter that folded the batch norm, say):
  opset N
  input NAME TYPE [DIMS]      (symbolic dimensions by name, unknown ones ?)
  output NAME TYPE [DIMS]
  op TYPE xCOUNT              (sorted by type)
"""
import collections
import sys

import onnx


def value(kind, v):
    t = v.type.tensor_type
    dims = ",".join(d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?")
                    for d in t.shape.dim)
    return f"{kind} {v.name} {onnx.TensorProto.DataType.Name(t.elem_type)} [{dims}]"


def main():
    # Without the weights: only the graph is needed.
    model = onnx.load(sys.argv[1], load_external_data=False)
    print("opset", max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")))
    init = {i.name for i in model.graph.initializer}
    for v in model.graph.input:
        if v.name not in init:
            print(value("input", v))
    for v in model.graph.output:
        print(value("output", v))
    for op, n in sorted(collections.Counter(n.op_type for n in model.graph.node).items()):
        print(f"op {op} x{n}")


if __name__ == "__main__":
    main()
