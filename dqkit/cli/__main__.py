import sys

from dqkit.cli import main

sys.exit(main())
