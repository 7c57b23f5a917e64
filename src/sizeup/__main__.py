import sys

from sizeup.cli.main import main

sys.exit(main())
