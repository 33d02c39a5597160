"""The ctypes mirrors of tgv.h's structs (python/tgv_gemm/_lib.py) list the C
fields in the C order: a field appended to the header but not to the mirror
lets the library write past the Python object.

Needs no torch and no GPU: _lib.py is loaded from its file, and only
tgv_default_options, which touches no device, is called.
"""

import ctypes
import os
import re

import pytest
from tgv_libonly import ROOT, load_lib


def header_fields(struct):
    with open(os.path.join(ROOT, "include", "tgv", "tgv.h")) as f:
        text = f.read()
    body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (struct, struct), text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = []
    for declaration in body.split(";"):
        declaration = declaration.strip()
        if not declaration:
            continue
        head, _, rest = declaration.partition(",")
        names.append(head.split()[-1].lstrip("*"))
        names += [n.strip().lstrip("*") for n in rest.split(",") if n.strip()]
    return names


@pytest.mark.parametrize(
    "struct,mirror", [("tgv_problem", "Problem"), ("tgv_options", "Options"), ("tgv_tactic_info", "TacticInfo"),
     ("tgv_plan_info", "PlanInfo"), ("tgv_device_desc", "DeviceDesc"), ("tgv_tuning_entry", "TuningEntry")]
)
def test_mirror_lists_the_header_fields_in_order(struct, mirror):
    lib = load_lib()
    assert [name for name, _ in getattr(lib, mirror)._fields_] == header_fields(struct)


def test_default_options_stay_within_the_mirror():
    lib = load_lib()
    size = ctypes.sizeof(lib.Options)
    buffer = (ctypes.c_ubyte * (size + 16))(*([0xA5] * (size + 16)))
    options = lib.Options.from_buffer(buffer)
    lib.lib.tgv_default_options_(options)
    assert bytes(buffer[size:]) == b"\xa5" * 16
    assert (options.backend, options.tactic, options.pdl, options.split_k, options.stages) == (0, -1, 1, 0, 0)
