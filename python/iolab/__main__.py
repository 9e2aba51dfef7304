import sys

from iolab.cli import main

sys.exit(main())
