"""Build script: drives CMake to build the pybind11 module ``pysynth._core``.

``pip install .`` (or ``pip install -e .``) configures and builds with CMake; the
compiled module lands next to the Python sources (editable) or in the wheel.
``kernels/`` ships inside the package as ``pysynth.kernels``. The shipped models do not: each is
its own distribution, ``pip install ./models/<name>`` (``models/_build.py``; docs/models.md).
Set ``PYSYNTH_NO_EXT=1`` to install the pure-Python package only.
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        if not isinstance(ext, CMakeExtension):
            return super().build_extension(ext)
        import pybind11

        out_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        build_temp = Path(self.build_temp).resolve() / ext.name
        build_temp.mkdir(parents=True, exist_ok=True)
        _drop_stale_cache(build_temp)
        cfg = os.environ.get("PYSYNTH_BUILD_TYPE", "Release")
        args = [
            f"-DCMAKE_BUILD_TYPE={cfg}",
            f"-DPYSYNTH_OUTPUT_DIR={out_dir}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
        ]
        gen = []
        try:
            import ninja  # noqa: F401

            gen = ["-G", "Ninja"]
        except ImportError:
            pass
        subprocess.run(["cmake", str(ROOT), *gen, *args], cwd=build_temp, check=True)
        jobs = str(os.cpu_count() or 2)
        subprocess.run(
            ["cmake", "--build", ".", "--target", "_core", "-j", jobs],
            cwd=build_temp,
            check=True,
        )


def _drop_stale_cache(build_temp: Path) -> None:
    """A second ``pip install .`` in the same checkout reuses ``build/``, whose CMake cache names
    the ninja/cmake of the first install's temporary build environment, deleted since: CMake
    then fails ("ninja --version ... no such file"). Start that cache afresh."""
    cache = build_temp / "CMakeCache.txt"
    if not cache.is_file():
        return
    for line in cache.read_text(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.split(":")[0] in ("CMAKE_MAKE_PROGRAM", "CMAKE_COMMAND") and value and not Path(value).exists():
            cache.unlink()
            shutil.rmtree(build_temp / "CMakeFiles", ignore_errors=True)
            return


ext_modules = [] if os.environ.get("PYSYNTH_NO_EXT") else [CMakeExtension("pysynth._core")]

# pip builds in the source folder: the build's scratch (a copy of the package and the CMake
# objects, 26 MB) goes to a temporary folder removed when the build ends, so `pip install .`
# leaves no build/ in the clone. An isolated build could not reuse it anyway (its CMake cache
# names the deleted build environment's tools); incremental C++ builds: cmake --build build/dev.
_SCRATCH = tempfile.mkdtemp(prefix="pysynth-build-")
atexit.register(shutil.rmtree, _SCRATCH, True)

setup(
    packages=find_packages(include=["pysynth", "pysynth.*"])
    + ["pysynth.kernels"]
    + ["pysynth.kernels." + p for p in find_packages("kernels")],
    package_dir={"pysynth.kernels": "kernels"},
    package_data={
        "pysynth": ["py.typed", "_core/*.pyi"],
        "pysynth.data": ["*.gz", "*.md", "*.json"],
        "pysynth.serve": ["*.html"],
        "pysynth.qagen": ["*.json"],  # the learned roundtrip filter's coefficients (issue 26)
        "pysynth.llm": ["prompts/*.txt"],  # the default prompt templates (issue 30)
        # no pysynth/models/assets: each model is its own distribution (models/<name>, models/_build.py)
    },
    # only package_data: a SOURCES.txt left in *.egg-info by an older build still lists the model files
    include_package_data=False,
    exclude_package_data={"pysynth.models": ["assets/*", "assets/**/*"]},
    ext_modules=ext_modules,
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": _SCRATCH}},
    zip_safe=False,
)
