"""Per-channel histogram equalization of uint8 images on smem's batched histogram.

The same result as torchvision.transforms.v2.functional.equalize (PIL's scheme): for each
(image, channel), with `hist` its 256-bin histogram and `cum` the running sum,
    step   = (pixels not in the last non-empty bin) // 255
    lut[0] = 0,  lut[k] = clamp((cum[k - 1] + step // 2) // step, 0, 255)
and a channel whose step is 0 is returned unchanged. torchvision builds the histogram with a
scatter_add over int64 copies of the pixels; here it is one batched_histc launch over the
uint8 pixels, and the table lookup is compiled so that it reads uint8 and writes uint8 in one
pass instead of materialising int64 indices.
"""

from __future__ import annotations

import torch

import smem_ops


def _lookup(image: torch.Tensor, hist: torch.Tensor) -> torch.Tensor:
    pixels = image.shape[-1] * image.shape[-2]
    cum = hist.cumsum(dim=-1)
    last = cum.argmax(dim=-1, keepdim=True)  # first index where the running sum is complete
    step = (pixels - hist.gather(-1, last)) // 255
    lut = ((cum[..., :-1] + step // 2) // step.clamp(min=1)).clamp(0, 255).to(torch.uint8)
    lut = torch.cat([lut.new_zeros(lut.shape[:-1] + (1,)), lut], dim=-1)
    flat = image.flatten(start_dim=-2)
    equalized = lut.gather(-1, flat.long()).view_as(image)
    return torch.where((step != 0).unsqueeze(-1), equalized, image)


_compiled_lookup = torch.compile(_lookup, dynamic=False)


def equalize(image: torch.Tensor) -> torch.Tensor:
    """Equalized copy of a uint8 image batch (..., H, W), each channel on its own."""
    if image.dtype != torch.uint8:
        raise TypeError(f"equalize: expected torch.uint8 images, but got {image.dtype}")
    if image.numel() == 0:
        return image
    # Bin k of [0, 255] in 256 bins holds exactly the value k.
    hist = smem_ops.batched_histc(image.flatten(start_dim=-2), 256, 0, 255, dim=-1,
                                  dtype=torch.int64)
    return _compiled_lookup(image, hist)
