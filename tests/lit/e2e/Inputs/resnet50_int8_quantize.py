"""examples/quantize_resnet50_int8.py's weights against the f16 model:
  1. examples/resnet50.lpu's f16 weights, drawn as resnet50_torch.py's
     float model's (TMPDIR/f16.safetensors), and the first IMAGES random
     images on which that model's top class leads by MARGIN
     (resnet50_int8_torch.py says why);
  2. quantize_resnet50_int8.py f16.safetensors w8.safetensors;
  3. the activation scales and zero points, which the script leaves out,
     from an independent path: PyTorch's MinMax observers on the float
     torch model holding the same f16 weights, calibrated on the same
     images (resnet50_torch.quantize and activation_params), added to
     the script's weights (TMPDIR/int8.safetensors);
  4. lpurun --reference on both models, each image;
  5. checks: the same top-1 class on every image, and every logit within
     TOL of the largest |logit| of the f16 model's. Printed for scale:
     PyTorch's own int8 model (its weights quantized its way, the same
     activation scales) against its float model, the same measure;
  6. the flow docs/quantization.md shows: the scales from lpurun's own
     calibration (`lpurun --reference resnet50_int8.lpu --weights w8
     --calibrate images.npy --dump-scales scales`, min/max, each scale
     observed in the int8 model with the earlier ones in place), the model
     run with `--weights w8 --weights scales`, and step 5's checks again.

usage: resnet50_int8_quantize.py EXAMPLES TMPDIR
"""
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resnet50_int8_torch as drv  # noqa: E402
import resnet50_torch as rt  # noqa: E402

TOL = 0.06


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def main(examples, tmp):
    m = rt.float_model(drv.SEED)
    imgs, drawn = drv.pick_images(m)
    f16, w8, both = (os.path.join(tmp, f) for f in ("f16.safetensors", "w8.safetensors",
                                                     "int8.safetensors"))
    rt.write_safetensors(f16, rt.f16_weights(m))
    print(run([sys.executable, os.path.join(examples, "quantize_resnet50_int8.py"), f16, w8])
          .strip().replace(tmp + "/", ""))
    weights = dict(rt.read_safetensors(w8))
    q = rt.quantize(m, imgs)
    weights.update(rt.activation_params(q))
    rt.write_safetensors(both, weights)
    torch_worst = 0.0
    f16_logits = []
    for k, x in enumerate(imgs):
        path = os.path.join(tmp, f"image{k}.npy")
        np.save(path, x[None])
        out = os.path.join(tmp, f"resnet50.lpu.{k}.npy")
        run(["lpurun", "--reference", os.path.join(examples, "resnet50.lpu"), "--weights", f16,
             "--input", f"x={path}", "--output", f"out={out}", "-q"])
        f16_logits.append(np.load(out).astype(np.float64)[0])
        with torch.no_grad():
            xt = torch.from_numpy(x[None].astype(np.float32))
            tf, tq = m(xt).numpy()[0], q(xt).numpy()[0]
        torch_worst = max(torch_worst, np.abs(tf - tq).max() / np.abs(tf).max())

    def against_f16(label, weight_files):
        worst, same = 0.0, 0
        for k in range(len(imgs)):
            path = os.path.join(tmp, f"image{k}.npy")
            out = os.path.join(tmp, f"int8.{label}.{k}.npy")
            flags = [f for w in weight_files for f in ("--weights", w)]
            run(["lpurun", "--reference", os.path.join(examples, "resnet50_int8.lpu"), *flags,
                 "--input", f"x={path}", "--output", f"out={out}", "-q"])
            a, b = f16_logits[k], np.load(out).astype(np.float64)[0]
            if not np.isfinite(b).all():
                sys.exit(f"{label}: image {k}: non-finite int8 logits")
            err = np.abs(a - b).max() / np.abs(a).max()
            print(f"{label}: image {k}: top-1 {b.argmax()} (f16 {a.argmax()}), logits within "
                  f"{err:.2%} of the largest")
            worst = max(worst, err)
            same += int(a.argmax() == b.argmax())
        line = (f"{label}: int8 against f16: top-1 equal on {same} of {len(imgs)} images, logits "
                f"within {worst:.2%} of the largest ({TOL:.0%} allowed)")
        if same < len(imgs) or worst > TOL:
            sys.exit(line)
        print(line)

    against_f16("torch scales", [both])
    print(f"for scale, PyTorch's int8 model against its float model: within {torch_worst:.2%}")
    # The documented flow: lpurun calibrates the int8 model itself.
    stack = os.path.join(tmp, "images.npy")
    np.save(stack, np.stack([x[None] for x in imgs]))
    scales = os.path.join(tmp, "scales.safetensors")
    table = run(["lpurun", "--reference", os.path.join(examples, "resnet50_int8.lpu"),
                 "--weights", w8, "--calibrate", stack, "--dump-scales", scales, "-q"])
    print(f"calibrated: {len(table.splitlines()) - 1} scales from {len(imgs)} images")
    against_f16("lpurun scales", [w8, scales])


if __name__ == "__main__":
    main(*sys.argv[1:])
