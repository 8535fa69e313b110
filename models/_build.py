"""The one build of every model distribution ``pysynth-model-<name>`` (``models/<name>/setup.py``
calls :func:`setup_model`; ``tools/package_models.py`` writes those folders).

The model's files are not copied into the checkout a second time: the build copies them from
``pysynth/models/assets/<name>/``, byte for byte, into the wheel as ``pysynth_model_<name>/<name>/``,
beside an ``__init__.py`` whose ``PATH`` is the folder the entry point (group ``pysynth.models``)
names. pip builds a local directory in place, so ``pip install ./models/<name>`` from the checkout
finds them; an sdist alone cannot (it would not hold the files), hence the clear error below.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ASSETS = Path(__file__).resolve().parent.parent / "pysynth" / "models" / "assets"

INIT = '''"""The pysynth model {name!r} (its files in the folder :data:`PATH`; see ``pysynth models list``)."""
import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), {name!r})
'''


def package_name(name: str) -> str:
    """The import name of model ``name``'s distribution: ``pysynth_model_<name>`` with ``_``."""
    return "pysynth_model_" + name.replace("-", "_")


def setup_model(project: Path) -> None:
    """``setup()`` for the model folder ``project`` (``models/<name>``)."""
    name = Path(project).name
    src = ASSETS / name
    if not (src / "model.json").is_file():
        raise SystemExit(f"pysynth-model-{name} builds from a pysynth checkout: {src} is missing; run "
                         f"`pip install ./models/{name}` from the checkout's root (an sdist does not hold the files)")
    pkg = package_name(name)
    stage = Path(project) / "build" / "src" / pkg  # the package's only source file, written here
    stage.mkdir(parents=True, exist_ok=True)
    (stage / "__init__.py").write_text(INIT.format(name=name), encoding="utf-8")

    class BuildModel(build_py):
        def run(self):
            super().run()
            dst = Path(self.build_lib) / pkg / name
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.lock", ".*"))

    setup(packages=[pkg], package_dir={pkg: str(stage.relative_to(project))}, cmdclass={"build_py": BuildModel},
          zip_safe=False)
