"""Compile every Triton kernel, as its launcher launches it, for a GPU that is not there.

Run by ``test_compile_check.py`` in a subprocess with ``TRITON_INTERPRET=0``::

    python tests/kernels/_compile_check.py <kernels package name> [sm]

The interpreter runs kernels as numpy and accepts things the compiler rejects (loop-carried
type changes, scalar/tensor mixes, unsupported ops). Here the launchers run on small CPU
tensors with each ``kernel[grid]`` replaced by a recorder; every recorded launch becomes an
``ASTSource`` (argument types from the real arguments, constexprs and ``num_warps`` from the
keywords) and goes through ``triton.compile`` for ``cuda:<sm>`` down to a cubin, with the
ptxas that ships in the triton wheel. No CUDA driver or device is needed.
Exit 0: all compiled; 1: a kernel failed (message on stdout); 77: backend unavailable.
"""
from __future__ import annotations

import importlib
import os
import sys

os.environ["TRITON_INTERPRET"] = "0"

import torch  # noqa: E402
import triton  # noqa: E402

try:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError as e:  # pragma: no cover - depends on the triton version
    print(f"triton offline compilation API unavailable: {e}")
    sys.exit(77)

DTYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16",
          torch.int64: "i64", torch.int32: "i32", torch.uint8: "u8", torch.bool: "i1"}
OPTION_KEYS = ("num_warps", "num_stages")


class Recorder:
    def __init__(self, fn, log):
        self.fn, self.log = fn, log

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.log.append((self.fn, args, kwargs))

        return launch


def signature(fn, args, kwargs):
    sig, const = {}, {}
    names = fn.arg_names
    for name, value in zip(names, args):
        if isinstance(value, torch.Tensor):
            sig[name] = "*" + DTYPES[value.dtype]
        elif isinstance(value, bool):
            sig[name] = "i1"
        elif isinstance(value, int):
            sig[name] = "i32" if -2**31 <= value < 2**31 else "i64"
        elif isinstance(value, float):
            sig[name] = "fp32"
        else:
            raise TypeError(f"{fn.__name__}: argument {name} of type {type(value).__name__}")
    for name, value in kwargs.items():
        if name in OPTION_KEYS:
            continue
        sig[name] = "constexpr"
        const[name] = value
    missing = [n for n in names if n not in sig]
    if missing:
        raise TypeError(f"{fn.__name__}: arguments not passed: {missing}")
    return {n: sig[n] for n in names}, const


def record(pkg: str):
    ca_t = importlib.import_module(f"{pkg}.copy_attention.triton_copy_attention")
    db_t = importlib.import_module(f"{pkg}.diverse_beam.triton_diverse_beam")
    log = []
    for mod in (ca_t, db_t):
        for name in dir(mod):
            obj = getattr(mod, name)
            # launched kernels only; device helpers (topk_merge, ...) stay as they are
            if isinstance(obj, triton.runtime.jit.JITFunction) and name.endswith("_kernel"):
                setattr(mod, name, Recorder(obj, log))
    g = torch.Generator().manual_seed(0)
    B, S, H, V = 3, 5, 40, 300
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        def t(*shape, dtype=dtype):
            return torch.randn(*shape, generator=g).to(dtype)

        args = dict(s=t(B, H), h=t(B, S, H), src_ids=torch.randint(0, V + 2, (B, S), generator=g),
                    src_mask=torch.ones(B, S, dtype=torch.bool), W_o=t(V, H), b_o=t(V),
                    W_c=t(H, H), n_oov=2, k=8)
        for full in (True, False):
            ca_t.copy_attention_step_triton(**args, return_logprobs=full)
        if dtype == torch.float32:
            ca_t.copy_attention_step_triton(**args, allow_tf32=True)
        # the decoder's layout (pysynth.decoding): precomputed copy features, separate query
        HG = 24
        ca_t.copy_attention_step_triton(**{**args, "s": t(B, HG), "W_o": t(V, HG), "W_c": None},
                                        query=t(B, H), return_logprobs=False)
    lp = torch.randn(2, 8, V, generator=g)
    for dtype in (torch.float32, torch.float16):
        for block_v in (128, 1024):  # 1024: the CUDA default
            db_t.diverse_beam_step_triton(lp.to(dtype), torch.zeros(2, 8), 4, 0.5,
                                          block_v=block_v)
    return log


def main() -> int:
    pkg = sys.argv[1]
    sm = int(sys.argv[2]) if len(sys.argv) > 2 else 90
    target = GPUTarget("cuda", sm, 32)
    seen, failed = set(), 0
    for fn, args, kwargs in record(pkg):
        sig, const = signature(fn, args, kwargs)
        key = (fn.__name__, tuple(sorted(sig.items())), tuple(sorted(map(str, const.items()))))
        if key in seen:
            continue
        seen.add(key)
        options = {k: kwargs[k] for k in OPTION_KEYS if k in kwargs}
        try:
            compiled = triton.compile(ASTSource(fn, sig, const), target=target, options=options)
            assert compiled.asm.get("cubin"), "no cubin produced"
            print(f"ok   {fn.__name__} {const}")
        except Exception as e:  # noqa: BLE001 - report every kernel, then fail
            failed += 1
            print(f"FAIL {fn.__name__} {const}: {type(e).__name__}: {e}")
    print(f"{len(seen)} kernel variants, {failed} failed, target cuda:{sm}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
