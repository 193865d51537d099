"""Time the decode model's 100 x 100 (batch, seqlen) sweep (the explorer redraws on every slider move, so the whole sweep must stay well under 100 ms). Not a test."""
import time

import numpy as np

import labcore as lc

b = np.round(np.logspace(0, 8, 100, base=2)).astype(np.int64)
n = np.round(np.logspace(8, 17, 100, base=2)).astype(np.int64)
shape = lc.get_decode_shape("CodeLlama-34B (4-way TP)")
for method, ns in (("fa2", None), ("flash_decoding", None), ("flash_decoding", "heuristic"), ("flash_decoding", 8)):
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        lc.decode_time_grid("A100", batch=b[:, None], seqlen=n[None, :], method=method, num_splits=ns, **shape)
        times.append(time.perf_counter() - t0)
    print(f"{method:15s} splits={ns!s:10s} 100x100 grid: median {np.median(times) * 1e3:6.2f} ms")
