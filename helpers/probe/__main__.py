import sys

from helpers.probe.cli import main

sys.exit(main())
