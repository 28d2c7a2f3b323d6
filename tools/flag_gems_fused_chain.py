"""The what-if validation's fused FlagGems op: add, then ``sigmoid(x * 0.5 + 1.0)``, as one
``pointwise_dynamic`` op, written the way FlagGems writes its ops.

A module of its own, and without ``from __future__ import annotations``: FlagGems 5.0.2's
``pointwise_dynamic`` copies the ``from ... import`` lines of the module that defines the
op into the code it generates, below its own imports, where a ``__future__`` import is a
SyntaxError ("from __future__ imports must occur at the beginning of the file"; seen on
the H100 when this op lived in tools/measure_what_if_counterfactuals_on_gpu.py). Its only
``from`` import is one FlagGems leaves out.
"""

import triton
import triton.language as tl
from flag_gems.utils import pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add_sigmoid_affine(x, y):
    return tl.sigmoid((x + y) * 0.5 + 1.0)
