"""`python -m klent ...` (what `torchrun -m klent train ...` runs)."""

import sys

from klent.cli import main

sys.exit(main())
