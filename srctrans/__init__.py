"""srctrans: JAX-style transformations for plain NumPy code, by source rewriting.

Each transformation writes a real, readable Python file (see :func:`source_path`)
that Numba compiles; nothing is traced, so Python control flow, ``print`` and
pdb keep working.
"""

from . import (  # noqa: E402,F401  (parallel first: srctrans.runtime imports its collectives)
    algebra,  # noqa: E402,F401  (last: it registers itself, and imports the transformations)
    distributed,
    parallel,
    random,
    sharding,
)
from . import runtime as _runtime  # noqa: E402
from .ad.custom import custom_vjp, stop_gradient  # noqa: E402
from .ad.custom_jvp import custom_jvp  # noqa: E402
from .api import grad, jit, source, source_path, value_and_grad, vjp  # noqa: E402
from .batching import vmap  # noqa: E402
from .check import check_grads  # noqa: E402
from .config import config  # noqa: E402
from .errors import (  # noqa: E402
    CacheError,
    CacheWarning,
    CompileBudgetWarning,
    CompileError,
    NoDerivativeError,
    SourceUnavailableError,
    SrcTransError,
    UnresolvedNameError,
    UnsupportedSyntaxError,
    ViewUpdateError,
)
from .jacobians import hessian, jacfwd, jacrev  # noqa: E402
from .parallel import all_gather, axis_index, devices, pmap, pmax, pmean, pmin, psum  # noqa: E402
from .sharding import (  # noqa: E402
    AxisType,
    Mesh,
    NamedSharding,
    PartitionSpec,
    device_get,
    device_put,
    get_abstract_mesh,
    make_mesh,
    set_mesh,
)
from .tangents import jvp, linearize  # noqa: E402
from .version import __version__  # noqa: F401

# scipy.integrate.odeint's derivatives differentiate the user's right-hand side at run time
_runtime.TRANSFORMS.update(vjp=vjp, jvp=jvp)

__all__ = [
    "AxisType",
    "CacheError",
    "CacheWarning",
    "CompileBudgetWarning",
    "CompileError",
    "Mesh",
    "NamedSharding",
    "NoDerivativeError",
    "PartitionSpec",
    "SourceUnavailableError",
    "SrcTransError",
    "UnresolvedNameError",
    "UnsupportedSyntaxError",
    "ViewUpdateError",
    "all_gather",
    "axis_index",
    "check_grads",
    "config",
    "custom_jvp",
    "custom_vjp",
    "device_get",
    "device_put",
    "devices",
    "distributed",
    "get_abstract_mesh",
    "grad",
    "hessian",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "linearize",
    "make_mesh",
    "pmap",
    "pmax",
    "pmean",
    "pmin",
    "psum",
    "random",
    "set_mesh",
    "sharding",
    "source",
    "source_path",
    "stop_gradient",
    "value_and_grad",
    "vjp",
    "vmap",
]
