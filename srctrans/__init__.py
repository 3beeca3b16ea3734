"""srctrans: JAX-style transformations for plain NumPy code, by source rewriting.

Each transformation writes a real, readable Python file (see :func:`source_path`)
that Numba compiles; nothing is traced, so Python control flow, ``print`` and
pdb keep working.
"""

__version__ = "0.1.0"

from .ad.custom import custom_vjp, stop_gradient  # noqa: E402
from .ad.custom_jvp import custom_jvp  # noqa: E402
from .api import grad, hessian, jacfwd, jacrev, jit, jvp, linearize, source, source_path, value_and_grad, vjp  # noqa: E402
from .batching import vmap  # noqa: E402
from .check import check_grads  # noqa: E402
from .config import config  # noqa: E402
from .errors import (  # noqa: E402
    CompileError,
    NoDerivativeError,
    SourceUnavailableError,
    SrcTransError,
    UnresolvedNameError,
    UnsupportedSyntaxError,
)
from .parallel import pmean, psum  # noqa: E402

__all__ = [
    "CompileError",
    "NoDerivativeError",
    "SourceUnavailableError",
    "SrcTransError",
    "UnresolvedNameError",
    "UnsupportedSyntaxError",
    "check_grads",
    "config",
    "custom_jvp",
    "custom_vjp",
    "grad",
    "hessian",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "linearize",
    "pmean",
    "psum",
    "source",
    "source_path",
    "stop_gradient",
    "value_and_grad",
    "vjp",
    "vmap",
]
