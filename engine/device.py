"""Device checks, kept in one place so CPU machines never import CUDA-only code."""

from __future__ import annotations

import functools
import glob


@functools.cache
def cuda_available() -> bool:
    # Importing torch costs over a second; without an NVIDIA device node there is nothing to find.
    if not glob.glob("/dev/nvidia[0-9]*"):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
