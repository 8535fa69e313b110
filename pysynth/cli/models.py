"""``pysynth models list|path|install``: which models are installed, where, and installing one from
the checkout (each shipped model is its own distribution, ``models/<name>``; docs/models.md).
``pysynth --models-dir DIR``: a folder of model folders searched first (as ``PYSYNTH_MODELS``)."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from pysynth.cli import _common as C


class ModelsDir(argparse.Action):
    """``--models-dir DIR``: put DIR in front of ``PYSYNTH_MODELS`` for this run (and its workers)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from pysynth.models.registry import ENV

        old = os.environ.get(ENV, "")
        os.environ[ENV] = os.pathsep.join([str(Path(values).resolve())] + ([old] if old else []))
        setattr(namespace, self.dest, values)


def _cmd_list(args) -> int:
    from pysynth.models import registry

    rows = []
    for name in sorted(set(registry.models()) | set(registry.CATALOG)):
        m = registry.shipped(name)
        rows.append((name, m.source if m else "not installed", str(m.directory) if m else ""))
    w0, w1 = (max(len(r[i]) for r in rows) for i in (0, 1))
    for name, source, path in rows:
        print(f"{name:<{w0}}  {source:<{w1}}  {path}".rstrip())
    missing = [r[0] for r in rows if not r[2]]
    if missing:
        C.say(f"{len(missing)} not installed: pysynth models install NAME (or --all) from the pysynth checkout")
    return 0


def _cmd_path(args) -> int:
    from pysynth.models import registry

    # the model's folder (card, model.json, meta.json), as `models list` shows it, installed or in
    # the checkout; not the store inside it that the loaders open (an installed package's onnx/)
    path = registry.resolve(args.name, what="NAME").path
    lay = registry.layout(path)
    print(lay.root if lay is not None else path)
    return 0


def checkout(start: Path | None = None) -> Path | None:
    """The pysynth checkout that holds ``models/<name>/`` builds: ``start`` if given, else this
    package's source tree (an editable install) or the working directory or one of its parents."""
    import pysynth

    if start is not None:
        cands = [Path(start)]
    else:
        cwd = Path.cwd().resolve()
        cands = [Path(pysynth.__file__).resolve().parents[1], cwd, *cwd.parents]
    for c in cands:
        if (c / "models" / "_build.py").is_file() and (c / "pysynth" / "models" / "assets").is_dir():
            return c
    return None


def _cmd_install(args) -> int:
    from pysynth.models import registry

    names = list(registry.CATALOG) if args.all else args.names
    if not names:
        raise C.UsageError("argument NAME: give model names or --all")
    unknown = [n for n in names if n not in registry.CATALOG]
    if unknown:
        raise C.UsageError(f"argument NAME: {', '.join(unknown)} is not a shipped model; choose from "
                           f"{', '.join(registry.CATALOG)}")
    root = checkout(args.checkout)
    if root is None:
        where = f"--checkout {args.checkout}" if args.checkout else "no pysynth checkout here"
        raise ValueError(f"{where} (a clone with models/_build.py and pysynth/models/assets/): from the clone's "
                         f"root run pip install {' '.join('./models/' + n for n in names)}, or give --checkout DIR")
    cmd = [sys.executable, "-m", "pip", "install", *(str(root / "models" / n) for n in names)]
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    C.say(f"installing {', '.join(names)} from {root}: {' '.join(cmd[1:])}")
    done = subprocess.run(cmd, check=False)
    if done.returncode:
        raise RuntimeError(f"pip install failed (exit {done.returncode}); see its output above")
    registry.refresh()
    for n in names:
        m = registry.shipped(n)
        C.say(f"{n}: {m.directory if m else 'not found after installing'}")
    return 0


def add_commands(sub) -> None:
    m = sub.add_parser("models", help="the installed models: list, path, install (each model is its own package)",
                       description="Each shipped model is its own distribution, pysynth-model-NAME, built from "
                                   "the checkout's models/NAME. Models are found in: PYSYNTH_MODELS (pysynth "
                                   "--models-dir DIR), installed model packages, the checkout's "
                                   "pysynth/models/assets.")
    ms = m.add_subparsers(dest="models_command", required=True, metavar="VERB")
    ls = ms.add_parser("list", help="every shipped model: where it is found, or 'not installed'")
    ls.set_defaults(func=_cmd_list)
    p = ms.add_parser("path", help="the model's folder (its card, model.json, meta.json), as `list` shows it; "
                                   "any --model takes it")
    p.add_argument("name", metavar="NAME")
    p.set_defaults(func=_cmd_path)
    i = ms.add_parser("install", help="pip-install models from the pysynth checkout (pip install ./models/NAME)")
    i.add_argument("names", nargs="*", metavar="NAME")
    i.add_argument("--all", action="store_true", help="every shipped model")
    i.add_argument("--checkout", metavar="DIR", type=C.input_dir("checkout"),
                   help="the pysynth clone (default: this package's source tree, or the working directory or a "
                        "parent of it)")
    i.add_argument("--dry-run", action="store_true", help="print the pip command, install nothing")
    i.set_defaults(func=_cmd_install)
