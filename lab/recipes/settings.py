"""The lab's paths for Python recipes: the names and defaults of settings.sh, read from the environment."""
import os

TMP = os.environ.get("LB_TMP", "/tmp")


def path(name: str, default: str) -> str:
    """``$name`` if set, else ``default`` under LB_TMP."""
    return os.environ.get(name) or os.path.join(TMP, default)


ENV029 = path("LB_ENV029", "env029")
ENV030 = path("LB_ENV030", "env030")
ENV_BASE = path("LB_ENV_BASE", "env-base")
ENV_MLIR = path("LB_ENV_MLIR", "envmlir")
WHEELS = path("LB_WHEELS", "wheels")
WCACHE = path("LB_WCACHE", "wcache")
CLONE = path("LB_CLONE", "nc")
ENV_DIR = path("LB_ENV_DIR", "lbenvs")
