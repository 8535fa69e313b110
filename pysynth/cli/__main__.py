import sys

from pysynth.cli import main

sys.exit(main())
