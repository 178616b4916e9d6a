#!/usr/bin/env python3
"""NumPy reimplementations of tiny_decoder.lpu and accumulate.lpu, to check
lpurun's state and --generate against.
  decoder_check.py weights-decoder OUT.safetensors     seeded f16 weights
  decoder_check.py weights-acc OUT.safetensors         seeded f16 weights
  decoder_check.py prompt OUT.npy ID...                i32[1, S]
  decoder_check.py generate W.safetensors PROMPT.npy N TOKENS.txt STATE.safetensors
      greedy decoding in NumPy (f32): the same tokens as lpurun printed in
      TOKENS.txt (its 'tokens:' line), and the KV cache lpurun dumped holds
      the keys and values of every position fed
  decoder_check.py acc W.safetensors OUT.npy STATE.safetensors POS X...
      one call of accumulate.lpu from a zero state: y, the cache and steps"""
import os, sys
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Inputs"))
import safetensors_np  # noqa: E402

read_safetensors, write_safetensors = safetensors_np.read, safetensors_np.write


V, D, P = 16, 8, 16


def decoder_weights():
    rng = np.random.default_rng(7)
    w = {
        "emb": rng.normal(0, 1.0, (V, D)),
        "pos_emb": rng.normal(0, 0.3, (P, D)),
        "wq": rng.normal(0, 0.5, (D, D)),
        "wk": rng.normal(0, 0.5, (D, D)),
        "wv": rng.normal(0, 0.5, (D, D)),
        "wo": rng.normal(0, 1.5, (D, V)),
    }
    return {k: v.astype(np.float16) for k, v in w.items()}


def softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def generate(w, prompt, n):
    """Greedy tokens, the margin of each choice, and the cache rows fed."""
    f = {k: v.astype(np.float32) for k, v in w.items()}
    kc, vc = np.zeros((P, D), np.float32), np.zeros((P, D), np.float32)
    s = len(prompt)
    x = f["emb"][prompt] + f["pos_emb"][:s]
    k, v = x @ f["wk"], x @ f["wv"]
    kc[:s], vc[:s] = k, v
    scores = (x @ f["wq"]) @ k.T * 0.35
    scores = np.where(np.tril(np.ones((s, s), bool)), scores, -30000.0)
    logits = (x + softmax(scores) @ v) @ f["wo"]
    rows = [logits[-1]]
    tokens = [int(np.argmax(logits[-1]))]
    for step in range(1, n):
        pos = s + step - 1
        x = f["emb"][[tokens[-1]]] + f["pos_emb"][[pos]]
        kc[pos], vc[pos] = (x @ f["wk"])[0], (x @ f["wv"])[0]
        scores = (x @ f["wq"]) @ kc.T * 0.35
        scores = np.where(np.arange(P)[None, :] <= pos, scores, -30000.0)
        logits = (x + softmax(scores) @ vc) @ f["wo"]
        rows.append(logits[0])
        tokens.append(int(np.argmax(logits[0])))
    margins = [float(np.sort(r)[-1] - np.sort(r)[-2]) for r in rows]
    return tokens, margins, kc, vc, s + n - 1


def main():
    cmd = sys.argv[1]
    if cmd == "weights-decoder":
        write_safetensors(sys.argv[2], decoder_weights())
    elif cmd == "weights-acc":
        rng = np.random.default_rng(3)
        write_safetensors(sys.argv[2], {"w": rng.normal(0, 0.5, (4, 4)).astype(np.float16)})
    elif cmd == "prompt":
        np.save(sys.argv[2], np.array([[int(t) for t in sys.argv[3:]]], np.int32))
    elif cmd == "generate":
        w = read_safetensors(sys.argv[2])
        prompt = np.load(sys.argv[3])[0]
        n = int(sys.argv[4])
        line = [l for l in open(sys.argv[5]).read().splitlines() if l.startswith("tokens:")][0]
        got = [int(t) for t in line.split()[1:]]
        tokens, margins, kc, vc, fed = generate(w, prompt, n)
        # The chip computes in f16: a choice between logits closer than
        # this could go either way, and the test's weights must not ask one.
        assert min(margins) > 0.05, f"the test's weights give a near tie: margins {margins}"
        assert got == tokens, f"lpurun generated {got}, NumPy {tokens}"
        state = read_safetensors(sys.argv[6])
        assert sorted(state) == ["k_cache", "v_cache"], sorted(state)
        for name, want in (("k_cache", kc), ("v_cache", vc)):
            have = state[name].astype(np.float32)
            assert have.shape == (P, D), have.shape
            err = np.abs(have[:fed] - want[:fed]).max()
            assert err < 0.02 * max(1.0, np.abs(want[:fed]).max()), f"{name}: max error {err}"
        print("ok", tokens)
    elif cmd == "acc":
        w = read_safetensors(sys.argv[2])["w"].astype(np.float32)
        y = np.load(sys.argv[3]).astype(np.float32)
        state = read_safetensors(sys.argv[4])
        pos, x = int(sys.argv[5]), np.array([[float(t) for t in sys.argv[6:]]], np.float32)
        want = np.zeros((6, 4), np.float32)
        want[min(max(pos, 0), 5)] = (x @ w)[0]
        assert np.abs(y - want).max() < 0.02, (y, want)
        assert np.abs(state["cache"].astype(np.float32) - want).max() < 0.02, state["cache"]
        assert state["steps"].tolist() == [1.0], state["steps"]
        print("ok")


main()
