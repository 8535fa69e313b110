"""Fixtures and run metadata for the benchmarks in bench/ (not part of the test suite).

Run from the repository root, e.g.::

    python -m pytest bench/bench_metrics.py --benchmark-only --benchmark-json=/tmp/bench.json

The Rust competitors (rouge-rust, rouge-score-rs) score batches on Rayon's global thread
pool, sized by ``RAYON_NUM_THREADS`` when the pool is first used. It is set to 1 here unless
it is already set, so that the default run compares one core with one core; run again with
``RAYON_NUM_THREADS=2`` for their all-core numbers (the JSON records the value).
"""
from __future__ import annotations

import os
import platform
import sys
from importlib import metadata

_USER_ENV = {k: os.environ.get(k) for k in ("RAYON_NUM_THREADS", "PYSYNTH_IMPL", "PYSYNTH_BENCH_SYNTHETIC",
                                              "PYSYNTH_SHARED_DATA")}
os.environ.setdefault("RAYON_NUM_THREADS", "1")  # before any Rust extension starts its pool

import _data  # noqa: E402  (bench/ is on sys.path: rootdir-relative import of this conftest)
import pytest  # noqa: E402


def _core_fingerprint():
    """sha256 (first 16 hex) and mtime of the compiled extension that this run imports."""
    import hashlib

    try:
        import pysynth._core as core

        path = core.__file__
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:16]
        return {"path": os.path.relpath(path, _data.ROOT), "sha256_16": digest,
                "mtime": os.path.getmtime(path)}
    except Exception as exc:  # noqa: BLE001 - metadata only
        return {"error": repr(exc)}


def _git_state():
    import subprocess

    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=_data.ROOT, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except Exception:  # noqa: BLE001 - metadata only
            return None

    return {"commit": git("rev-parse", "HEAD"), "dirty_files": len((git("status", "--porcelain") or "").splitlines())}


_CORE_AT_START = _core_fingerprint()
_GIT_AT_START = _git_state()
_LOADAVG_AT_START = list(os.getloadavg()) if hasattr(os, "getloadavg") else None

_PACKAGES = (
    "pysynth", "numpy", "pytest-benchmark", "rouge-score", "sacrebleu", "nltk",
    "pycocoevalcap", "rouge-rust", "rouge-score-rs", "torch", "onnxruntime", "transformers", "ctranslate2",
)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _versions() -> dict:
    out = {}
    for p in _PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def pytest_benchmark_update_machine_info(config, machine_info):
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count()
    machine_info["nproc"] = usable
    machine_info["cpu_model"] = _cpu_model()
    machine_info["python_version_full"] = sys.version.split()[0]
    machine_info["rayon_num_threads"] = os.environ.get("RAYON_NUM_THREADS")
    machine_info["loadavg_at_start"] = _LOADAVG_AT_START
    machine_info["package_versions"] = _versions()
    machine_info["data_source"] = "real" if _data.use_real() else "synthetic"
    machine_info["pysynth_core"] = _CORE_AT_START
    machine_info["git"] = _GIT_AT_START
    try:
        from pysynth import _dispatch

        machine_info["pysynth_metrics_impl"] = _dispatch.implementation("metrics")
    except Exception as exc:  # noqa: BLE001 - metadata only
        machine_info["pysynth_metrics_impl"] = f"unknown ({exc})"


def pytest_benchmark_update_json(config, benchmarks, output_json):
    output_json["command"] = "python -m pytest " + " ".join(config.invocation_params.args)
    output_json["env"] = dict(_USER_ENV)  # as set by the user (RAYON_NUM_THREADS defaults to 1 here)
    end = _core_fingerprint()
    # the extension loaded at start stays loaded, but a rebuild on disk mid-run means the
    # next run measures different code: report.py flags runs whose fingerprints differ
    output_json["pysynth_core_at_end"] = end
    output_json["pysynth_core_changed_during_run"] = end.get("sha256_16") != _CORE_AT_START.get("sha256_16")
    output_json["loadavg_at_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def _need_real():
    """PYSYNTH_BENCH_REQUIRE_REAL=1: skip (instead of using synthetic text) without the shared data."""
    if os.environ.get("PYSYNTH_BENCH_REQUIRE_REAL", "").strip() not in ("", "0") and not _data.use_real():
        pytest.skip(f"shared data folder {_data.SHARED_DATA} is absent (PYSYNTH_BENCH_REQUIRE_REAL=1)")


@pytest.fixture(scope="session")
def short_wl():
    """100,000 question-length pairs (200,000 distinct strings)."""
    _need_real()
    return _data.short_pairs()


@pytest.fixture(scope="session")
def long_wl():
    """10,000 pairs of 100-300 tokens."""
    _need_real()
    return _data.long_pairs()
