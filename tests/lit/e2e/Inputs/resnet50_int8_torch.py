"""examples/resnet50_int8.lpu against PyTorch's own int8 ResNet-50
(resnet50_torch.py: torchvision's quantizable ResNet-50, weights drawn
there, post-training static quantization on the onednn engine).

  1. images: candidates drawn by resnet50_torch.images until IMAGES of
     them have a clear top class in the float model (its top logit at
     least MARGIN above the second): with random weights every image's
     logits are nearly the same (the features' common mean times each
     class's weights), and on most images the top two classes are a
     quantization step apart, where neither side's top-1 means anything;
  2. PyTorch: fuse, prepare, calibrate on those images (one at a time),
     convert; its int8 weights, per-channel scales, float biases and every
     activation's scale and zero point written under resnet50_int8.lpu's
     names (TMPDIR/w8.safetensors);
  3. lpurun --reference examples/resnet50_int8.lpu on each image;
  4. checks, per image:
     - lpurun's logits are bit for bit those of resnet50_torch.int8_forward,
       the .lpu's arithmetic transcribed from docs/language.md in
       PyTorch (lpurun computes what the language says);
     - layer by layer (resnet50_torch.int8_layers: each of our layers fed
       torch's own int8 input), our integers are torch's, every one within
       a step and at most LAYER_RATE of a tensor's a step off (our
       parameters are torch's, layer by layer; a weight scale 1% off in
       one layer puts 10% of its integers a step off);
     - end to end, the same top-1 class as torch's int8 model, and every
       logit within STEPS of the fc output's quantization steps of
       torch's int8 logits (torch requantizes the fc output to that grid
       and dequantizes it; ours is not rounded to it).
     Also printed: both int8 models against the float model (the
     quantization error), and ours against torch's fc output before its
     requantization.

usage: resnet50_int8_torch.py EXAMPLES TMPDIR [--steps S]
Prints the figures; exits non-zero naming the image and logit on failure.
"""
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resnet50_torch as rt  # noqa: E402

IMAGES = 4
MARGIN = 0.8
LAYER_RATE = 0.02
SEED = 0


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")


def pick_images(m):
    """The first IMAGES candidates whose float top-1 leads by MARGIN."""
    picked, drawn = [], 0
    for batch in range(1, 9):
        x = rt.images(16, [SEED, batch])
        with torch.no_grad():
            y = m(torch.from_numpy(x.astype(np.float32))).numpy()
        top2 = np.sort(y, axis=1)[:, -2:]
        for i in range(len(x)):
            drawn += 1
            if top2[i, 1] - top2[i, 0] >= MARGIN:
                picked.append(x[i])
                if len(picked) == IMAGES:
                    return np.stack(picked), drawn
    sys.exit(f"only {len(picked)} of {drawn} images have a top class {MARGIN} clear")


def main(argv):
    examples, tmp = argv[:2]
    steps = float(argv[argv.index("--steps") + 1]) if "--steps" in argv else 3.0
    m = rt.float_model(SEED)
    imgs, drawn = pick_images(m)
    q = rt.quantize(m, imgs)
    params = rt.weight_params(q)
    params.update(rt.activation_params(q))
    weights = os.path.join(tmp, "w8.safetensors")
    rt.write_safetensors(weights, params)
    step = float(q.fc.scale)
    fc_in = {}
    q.fc.register_forward_hook(lambda mod, i, o: fc_in.__setitem__("x", i[0]))
    print(f"engine {rt.ENGINE}: {IMAGES} images (of {drawn} drawn) with a top class "
          f"{MARGIN} clear in the float model, fc output step {step:.4f}")

    worst = {"torch": 0.0, "pre": 0.0, "ours_float": 0.0, "torch_float": 0.0}
    sq, n = 0.0, 0
    top1 = {"ours_float": 0, "torch_float": 0}
    layers = {"rate": 0.0, "past": 0, "n": 0, "ties": 0}
    for k, x in enumerate(imgs):
        path, out = os.path.join(tmp, f"image{k}.npy"), os.path.join(tmp, f"out{k}.npy")
        np.save(path, x[None])
        run(["lpurun", "--reference", os.path.join(examples, "resnet50_int8.lpu"),
             "--weights", weights, "--input", f"x={path}", "--output", f"out={out}", "-q"])
        ours = np.load(out).astype(np.float64)[0]
        xt = torch.from_numpy(x[None].astype(np.float32))
        with torch.no_grad():
            tq = q(xt).numpy().astype(np.float64)[0]
            tf = m(xt).numpy().astype(np.float64)[0]
            pre = (fc_in["x"].dequantize() @ q.fc.weight().dequantize().T + q.fc.bias())
            pre = pre.numpy().astype(np.float64)[0]
        if not np.isfinite(ours).all():
            sys.exit(f"image {k}: non-finite logits")
        with torch.no_grad():
            mine = rt.int8_forward(params, q, x[None]).numpy().astype(np.float64)[0]
        if (mine != ours).any():
            i = int(np.abs(mine - ours).argmax())
            sys.exit(f"image {k}: {(mine != ours).sum()} logits differ from the transcription's, "
                     f"most at {i}: lpurun {ours[i]!r}, transcription {mine[i]!r}")
        rows, ties = rt.int8_layers(params, q, x[None])
        layers["ties"] += ties
        for name, bad, total, most, past in rows:
            if most > 1 or bad > LAYER_RATE * total:
                sys.exit(f"image {k}: {name}: {bad} of {total} integers differ from torch's, "
                         f"by up to {most} ({LAYER_RATE:.0%} allowed, by 1)")
            layers["rate"] = max(layers["rate"], bad / total)
            layers["past"] += past
            layers["n"] = layers["n"] + 1 if k == 0 else layers["n"]
        # torch's int8 logits sit on a grid: its top class must be unique
        # there for a top-1 to compare.
        best = np.flatnonzero(tq == tq.max())
        if len(best) > 1:
            sys.exit(f"image {k}: torch's int8 top logit is shared by classes {list(best)}")
        if ours.argmax() != best[0]:
            sys.exit(f"image {k}: top-1 class {ours.argmax()} ({ours.max():.4f}), torch's int8 "
                     f"model {best[0]} ({tq.max():.4f}; ours there {ours[best[0]]:.4f})")
        diff = np.abs(ours - tq)
        if diff.max() > steps * step:
            i = int(diff.argmax())
            sys.exit(f"image {k}: logit {i} is {ours[i]:.4f}, torch's int8 model {tq[i]:.4f}: "
                     f"{diff[i] / step:.2f} fc output steps apart, {steps} allowed")
        sq += float((diff ** 2).sum())
        n += diff.size
        worst["torch"] = max(worst["torch"], diff.max())
        worst["pre"] = max(worst["pre"], np.abs(ours - pre).max())
        worst["ours_float"] = max(worst["ours_float"], np.abs(ours - tf).max())
        worst["torch_float"] = max(worst["torch_float"], np.abs(tq - tf).max())
        top1["ours_float"] += int(ours.argmax() == tf.argmax())
        top1["torch_float"] += int(tq.argmax() == tf.argmax())
        print(f"image {k}: top-1 {best[0]} as torch's int8 model, logits within "
              f"{diff.max() / step:.2f} steps ({diff.max():.4f})")
    print(f"logits bit for bit as the transcription's on {IMAGES} of {IMAGES} images")
    print(f"layer by layer, from torch's own inputs: {layers['n']} int8 tensors as torch's within a "
          f"step, at most {layers['rate']:.2%} of one's integers a step off "
          f"({LAYER_RATE:.0%} allowed); {layers['past']} integers past [0, 127] in all, "
          f"{layers['ties']} input pixels a step apart at a tie")
    print(f"against torch's int8 model: top-1 equal on {IMAGES} of {IMAGES} images, logits "
          f"within {worst['torch']:.4f} ({worst['torch'] / step:.2f} fc output steps, "
          f"{steps:g} allowed), rms {np.sqrt(sq / n):.4f}; "
          f"{worst['pre']:.4f} from its fc output before requantization")
    print(f"against the float model: ours within {worst['ours_float']:.4f} "
          f"(top-1 equal on {top1['ours_float']} of {IMAGES}), torch's int8 within "
          f"{worst['torch_float']:.4f} (top-1 equal on {top1['torch_float']} of {IMAGES})")


if __name__ == "__main__":
    main(sys.argv[1:])
