"""The CUDA labs: the reader writes ``@cuda.jit`` kernels (numba-cuda), which run in numba-cuda's simulator on any
machine and for real on an NVIDIA GPU, and ``grade(lab, *kernels, **params)`` grades them on exactness, global-memory
traffic against the closed form, shared memory against a budget, races and barriers.

Importing this package imports :mod:`cudalab` first, which chooses the simulator when there is no GPU before numba
is imported.
"""
import cudalab  # noqa: F401  (first: it sets NUMBA_ENABLE_CUDASIM before numba.cuda is imported)

from .definitions import CUDA_FEEDBACK, CUDA_LABS, HEAD_DIM, TOLERANCE, CudaLab, get_cuda_lab
from .grader import grade, grade_text, run_shape
from .pages import measured_beside_model, order_dependence, reference_ledger, solution_source
from .report import CudaReport, CudaShapeResult

__all__ = ["grade", "grade_text", "run_shape", "CudaReport", "CudaShapeResult", "CudaLab", "CUDA_LABS", "get_cuda_lab",
           "CUDA_FEEDBACK", "HEAD_DIM", "TOLERANCE", "reference_ledger", "solution_source", "order_dependence",
           "measured_beside_model"]
