#!/usr/bin/env python3
"""Writes a tuning file that pins plans of the tgv backend, for experiments
that ask how one plan runs inside a whole benchmark (perf-notes §47): every
spec N:K:M:TACTIC:SPLIT becomes one entry (the deepest ring), for this GPU and
this library version, through the library's own writer. Run ON the device:

  PYTHONPATH=build-gpu/carry/python TGV_GEMM_LIBRARY=build-gpu/carry/bin/libtgv_gemm.so \
    python3 bench/experiments/pin_tuning.py /tmp/pinned.json 5120:2048:32:8:2
"""

import sys

import torch

from tgv_gemm._tune import write_tuning_file


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    entries = []
    for spec in argv[1:]:
        n, k, m, tactic, split = (int(v) for v in spec.split(":"))
        # us and cublas_us are the tuner's record, unread by the dispatcher.
        entries.append({"n": n, "k": k, "m": m, "backend": "tgv", "tactic": tactic, "split_k": split,
                        "stages": 0, "us": 0.0, "cublas_us": 0.0})
    props = torch.cuda.get_device_properties(0)
    write_tuning_file(argv[0], props.name, props.multi_processor_count, entries)
    print("pin_tuning: wrote %s (%d entries) for %s" % (argv[0], len(entries), props.name))


if __name__ == "__main__":
    main(sys.argv[1:])
