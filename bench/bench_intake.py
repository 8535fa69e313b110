"""Text intake: Python list of str -> UTF-8 for the C++ kernels, pybind11 + C-API against Cython.

Run from the repository root (builds two throw-away extensions in a temp dir; Cython and
pybind11 must be importable, ``pip install cython``):

    OMP_NUM_THREADS=1 python bench/bench_intake.py [--rounds 7] [--n 1000000]

Compared, on the same lists in the same run (median of ``--rounds`` calls each):

pybind11 intake.cpp      csrc/bindings/intake.cpp ``to_strings`` as the bindings use it (the real
                         file, compiled here): a zero-copy UTF-8 view of every str
                         (``PyUnicode_AsUTF8AndSize``); the views are summed so that they are used.
pybind11 intake+buffer   the same, then the views copied into one uint8 buffer + int64 offsets.
pybind11 list caster     pybind11's ``std::vector<std::string>`` caster (the path intake.cpp
                         replaced): one std::string per item.
Cython views             csrc/cython/intake.pyx ``to_views``: intake.cpp's algorithm in Cython.
Cython buffer            csrc/cython/intake.pyx ``to_buffer``: one uint8 buffer + int64 offsets,
                         encoded straight from each str's storage (no per-item allocation, no
                         UTF-8 copy cached in the str).

Workloads (real text, every list item a distinct str object): SQuAD 1.1 train questions
(87,599; 0.8% non-ASCII) tiled to ``--n`` items, their ASCII-only subset, the French side of the
Tatoeba pairs (158,774; 42% non-ASCII) tiled to ``--n``, and the SQuAD contexts (18,896
paragraphs, ~750 characters; 30% non-ASCII) tiled to ``--n // 10``. "cold": fresh str objects
for every call (text just read or decoded: non-ASCII str have no cached UTF-8 yet); "warm": the
same list again (the UTF-8 that ``PyUnicode_AsUTF8AndSize`` cached in each non-ASCII str is reused).
Results are checked equal before timing (byte totals; buffers against ``str.encode``).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PYSYNTH_SHARED_DATA", "/work/shared/data"))

_WRAPPER = r"""
#include <cstring>
#include <string>
#include <vector>
#include "common.hpp"
namespace py = pybind11;
PYBIND11_MODULE(intake_pb, m) {
  m.def("views", [](py::handle t) {
    auto c = pysynth::bind::to_strings(t, "texts");
    long long s = 0;
    for (auto v : c.views) s += static_cast<long long>(v.size());
    return s;
  });
  m.def("buffer", [](py::handle t) {
    auto c = pysynth::bind::to_strings(t, "texts");
    py::array_t<long long> off(static_cast<py::ssize_t>(c.views.size() + 1));
    long long* o = off.mutable_data();
    o[0] = 0;
    for (size_t i = 0; i < c.views.size(); ++i) o[i + 1] = o[i] + static_cast<long long>(c.views[i].size());
    py::array_t<unsigned char> buf(static_cast<py::ssize_t>(o[c.views.size()]));
    unsigned char* b = buf.mutable_data();
    for (size_t i = 0; i < c.views.size(); ++i) std::memcpy(b + o[i], c.views[i].data(), c.views[i].size());
    return py::make_tuple(buf, off);
  });
  m.def("caster", [](const std::vector<std::string>& t) {
    long long s = 0;
    for (const auto& v : t) s += static_cast<long long>(v.size());
    return s;
  });
}
"""


def build(tmp: Path):
    """Compile intake.pyx and intake.cpp (+ a wrapper) into tmp with the same flags; import both."""
    import pybind11
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    flags = ["-O3", "-DNDEBUG"]
    (tmp / "intake_pb.cpp").write_text(_WRAPPER)
    exts = cythonize(
        [Extension("intake_cy", [str(ROOT / "csrc/cython/intake.pyx")], include_dirs=[np.get_include()],
                   extra_compile_args=flags, define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")])],
        build_dir=str(tmp), quiet=True, language_level=3,
    )
    exts.append(Extension(
        "intake_pb", [str(tmp / "intake_pb.cpp"), str(ROOT / "csrc/bindings/intake.cpp")],
        include_dirs=[pybind11.get_include(), str(ROOT / "csrc/bindings"), str(ROOT / "csrc/include")],
        extra_compile_args=flags + ["-std=c++17"], language="c++",
    ))
    dist = Distribution({"ext_modules": exts})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib = str(tmp)
    cmd.build_temp = str(tmp / "obj")
    cmd.ensure_finalized()
    cmd.run()
    sys.path.insert(0, str(tmp))
    import intake_cy
    import intake_pb

    return intake_cy, intake_pb


def workloads(n: int):
    sq = json.load(gzip.open(DATA / "squad11_train/train-v1.1.reconstructed.json.gz", "rt", encoding="utf-8"))
    questions = [qa["question"] for a in sq["data"] for p in a["paragraphs"] for qa in p["qas"]]
    contexts = [p["context"] for a in sq["data"] for p in a["paragraphs"]]
    with gzip.open(DATA / "tatoeba_eng_fra/pairs.jsonl.gz", "rt", encoding="utf-8") as f:
        french = [json.loads(line)["fr"] for line in f]

    def tile(base, m):
        return (base * (m // len(base) + 1))[:m]

    return {
        "SQuAD questions, ASCII only": tile([q for q in questions if q.isascii()], n),
        "SQuAD questions (0.8% non-ASCII)": tile(questions, n),
        "Tatoeba French (42% non-ASCII)": tile(french, n),
        "SQuAD contexts (30% non-ASCII)": tile(contexts, n // 10),
    }


def fresh(texts):
    """Distinct str objects with no cached UTF-8 (as text arrives from a file or a decoder)."""
    return [s.encode("utf-8").decode("utf-8") for s in texts]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="pysynth_intake_"))
    cy, pb = build(tmp)
    tools = {
        "pybind11 intake.cpp": pb.views,
        "pybind11 intake+buffer": pb.buffer,
        "pybind11 list caster": pb.caster,
        "Cython views": cy.to_views,
        "Cython buffer": cy.to_buffer,
    }
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, numpy {np.__version__}, n={args.n}, rounds={args.rounds}\n")
    print("| workload | mode | tool | median (ms) | ns/str | intake.cpp / this |")
    print("|---|---|---|---|---|---|")
    for wname, base in workloads(args.n).items():
        base = fresh(base)
        expect = sum(len(s.encode("utf-8")) for s in base)
        blob = "".join(base).encode("utf-8")
        for tname, fn in tools.items():  # results checked before timing
            out = fn(fresh(base[:50_000]))
            out = fn(base)
            if isinstance(out, tuple):
                buf, off = out
                assert int(off[-1]) == expect and buf.tobytes() == blob, (wname, tname)
            else:
                assert out == expect, (wname, tname, out, expect)
        for mode in ("cold", "warm"):
            med = {}
            for tname, fn in tools.items():
                ts = []
                for _ in range(args.rounds):
                    texts = fresh(base) if mode == "cold" else base
                    if mode == "warm":
                        fn(texts)
                    t0 = time.perf_counter()
                    fn(texts)
                    ts.append(time.perf_counter() - t0)
                    del texts
                med[tname] = statistics.median(ts)
            ref = med["pybind11 intake.cpp"]
            for tname, m in med.items():
                print(f"| {wname} | {mode} | {tname} | {m * 1e3:.1f} | {m / len(base) * 1e9:.0f} | {ref / m:.2f}x |",
                      flush=True)


if __name__ == "__main__":
    main()
