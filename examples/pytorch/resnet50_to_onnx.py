"""torchvision's ResNet-50 exported to ONNX, the first step of
PyTorch -> ONNX -> lpu-import -> lpuc -> lpurun (docs/import.md).

    python3 examples/pytorch/resnet50_to_onnx.py OUTDIR

Writes OUTDIR/resnet50.onnx (opset 13, batch 1, the batch norms folded into
the convolutions as torch.onnx.export does in eval mode), OUTDIR/image.npy
(an f16 input) and OUTDIR/torch_logits.npy (PyTorch's fp32 output for it).
The weights are random (nothing is downloaded); the convolutions are drawn
with std 1/sqrt(C*K*K) so that the activations keep their scale through the
fifty layers, as trained weights do.
"""
import os
import sys

import numpy as np
import torch
import torchvision


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Conv2d):
                fan_in = m.in_channels * m.kernel_size[0] * m.kernel_size[1] // m.groups
                m.weight.normal_(0, fan_in ** -0.5)
            elif isinstance(m, torch.nn.BatchNorm2d):
                m.running_var.uniform_(0.5, 1.5)
                m.running_mean.uniform_(-0.1, 0.1)
    model.eval()
    image = torch.randn(1, 3, 224, 224).half().float()
    torch.onnx.export(model, (image,), os.path.join(out, "resnet50.onnx"), opset_version=13,
                      input_names=["image"], output_names=["logits"])
    np.save(os.path.join(out, "image.npy"), image.numpy().astype(np.float16))
    with torch.no_grad():
        np.save(os.path.join(out, "torch_logits.npy"), model(image).numpy())
    print(f"wrote {out}/resnet50.onnx, {out}/image.npy and {out}/torch_logits.npy")


main()
