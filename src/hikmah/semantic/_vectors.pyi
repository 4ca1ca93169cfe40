"""A static model's embedding, int8 quantisation and similarities (vectors.c).

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
def similarities(
    codes: npt.NDArray[np.int8],
    scales: npt.NDArray[np.float32],
    row_of: npt.NDArray[np.int64],
    query: npt.NDArray[np.float32],
    ids: npt.NDArray[np.uint64],
    out: npt.NDArray[np.float32],
) -> None: ...
def dots(
    codes: npt.NDArray[np.int8],
    query: npt.NDArray[np.int16],
    out: npt.NDArray[np.int64],
) -> None: ...
