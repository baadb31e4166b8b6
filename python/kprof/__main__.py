"""python -m kprof ARGS: the bundled `kprof` command."""
import sys

from ._cli import main

sys.exit(main())
