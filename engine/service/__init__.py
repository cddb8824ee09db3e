"""The recall HTTP service: `create_app` (one FastAPI app) and `serve` (uvicorn, or Ray Serve replicas)."""

from engine.service.app import create_app
from engine.service.run import serve

__all__ = ["create_app", "serve"]
