#!/usr/bin/env bash
# The one command bench/gpu's numbers were made with, on the lent GPU machine, from the repository root, with $OUT
# set to a folder whose files come back (SECTIONS=labs,decode,... measures only those). The pinned numba-cuda
# (requirements.txt) and a NumPy it runs with (numba-cuda 0.30 compiles nothing under NumPy 2.5, which has no
# np.row_stack) travel as wheels in .whl/, since the machine has no registry; without them, or if they do not
# import there, the machine's own packages are used and the log says so.
set -u
export PYTHONUNBUFFERED=1 FLASHBOOK_CUDA=gpu NUMBA_ENABLE_CUDASIM=0
OUT=${OUT:?set OUT to a folder for the results}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv || true
probe='import numpy, numba, numba_cuda; print("numpy", numpy.__version__); from numba import cuda; print("numba", numba.__version__, "numba-cuda", numba_cuda.__version__, "gpu", cuda.is_available())'
site=
if ls .whl/*.whl >/dev/null 2>&1 && python3 -m pip install -q --no-index --no-deps --no-compile \
    --no-cache-dir --upgrade --target /tmp/site .whl/*.whl; then
  site=/tmp/site
fi
export PYTHONPATH=${site:+$site:}$PWD
if ! python3 -c "$probe"; then
  echo "the carried numba-cuda does not import here: the machine's own numba-cuda is used"
  export PYTHONPATH=$PWD
  python3 -c "$probe" || echo "no numba-cuda at all: the labs section will fail"
fi
python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'
timeout 360 python3 bench/gpu/measure.py --out "$OUT" --repeats 30 ${SECTIONS:+--sections $SECTIONS}
echo "measure rc=$?"
# the CUDA labs' own tests with numba compiling for the GPU (tests that assert the simulator are expected to fail)
timeout 150 python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_cudalab.py tests/test_cuda_labs.py \
  > "$OUT/pytest_gpu.log" 2>&1
echo "pytest rc=$?"
tail -25 "$OUT/pytest_gpu.log"
