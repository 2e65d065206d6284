"""spark-submit entry point: `spark-submit [options] <path of this file> snapshot|report ...`.

spark-submit wants a Python file as the application; this one runs the same CLI as
`freshness-tracker spark ...` inside the session spark-submit set up (its --master and --conf
apply). `python -c "import freshness_tracker.spark.submit as s; print(s.__file__)"` prints the
path to pass.
"""

from __future__ import annotations

import sys

from freshness_tracker.cli import main

if __name__ == "__main__":
    sys.exit(main(["spark", *sys.argv[1:]]))
