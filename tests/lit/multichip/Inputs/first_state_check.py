"""generate-state.test's check: a state's first value, given with --input
to a generation on two chips that each hold a slice of it, arrives whole.
  first_state_check.py GIVEN.npy STATE.safetensors NAME WRITTEN
The state NAME (keys stored transposed: a position to a column) keeps the
given bits at every position from WRITTEN on and differs before it (the
prompt's bucket and the decode steps wrote there).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
import safetensors_np  # noqa: E402

given_path, state_path, name, written = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
given = np.load(given_path)
state = safetensors_np.read(state_path)[name]
assert state.shape == given.shape, (state.shape, given.shape)
assert (state[..., written:].view(np.uint16) == given[..., written:].view(np.uint16)).all(), name
assert (state[..., :written] != given[..., :written]).any(), name
print(f"{name}: the given value kept from position {written}")
