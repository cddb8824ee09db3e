"""Exact top-k inner-product search with masks and tenants; torch on CPU/CUDA, Triton on CUDA."""

from kernels.tenant import segment_topk, tenant_topk
from kernels.topk import TRITON_MAX_K, masked_topk, triton_available

__all__ = ["TRITON_MAX_K", "masked_topk", "segment_topk", "tenant_topk", "triton_available"]
