"""Device checks, kept in one place so CPU machines never import CUDA-only code."""

from __future__ import annotations

import functools


@functools.cache
def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@functools.cache
def faiss_gpus() -> int:
    import faiss

    get = getattr(faiss, "get_num_gpus", None)
    return int(get()) if get else 0
