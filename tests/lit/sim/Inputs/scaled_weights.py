"""Writes the parameters of a program file as an initialised network's
(run_and_compare.py's --scaled-weights) to a .safetensors file, so that
`lpurun --weights` runs a model with batch norms (ResNet-50) without the
NaN that lpurun's random variances give.

usage: scaled_weights.py PROGRAM.lpx TMPDIR OUT.safetensors
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scheduler", "Inputs"))
from run_and_compare import program_tensors, write_scaled_weights  # noqa: E402

_, params = program_tensors(sys.argv[1], sys.argv[2])
write_scaled_weights(params, sys.argv[3])
