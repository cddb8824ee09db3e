"""Exact masked top-k inner-product search; torch on CPU/CUDA, Triton on CUDA."""

from kernels.topk import TRITON_MAX_K, masked_topk, triton_available

__all__ = ["TRITON_MAX_K", "masked_topk", "triton_available"]
