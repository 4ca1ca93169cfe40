"""A static model's embedding and int8 quantisation, a vector at a time (vectors.c).

Arrays are one-dimensional and contiguous (a table or rows flattened, with their
dimensions given); results are written into the arrays given for them.
"""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

def unit_sum(
    table: npt.NDArray[np.float32],
    dimensions: int,
    ids: Sequence[int],
    out: npt.NDArray[np.float32],
) -> None: ...
def quantize(
    rows: npt.NDArray[np.float32],
    dimensions: int,
    codes: npt.NDArray[np.int8],
    scales: npt.NDArray[np.float32],
) -> None: ...
