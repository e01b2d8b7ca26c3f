"""Run every benchmark (benchmarks/bench_*.py), one after another, printing their Markdown tables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    only = sys.argv[1:]
    failed = 0
    for script in sorted(HERE.glob("bench_*.py")):
        if only and not any(word in script.stem for word in only):
            continue
        print(f"\n# {script.stem}\n", flush=True)
        failed |= subprocess.run([sys.executable, str(script)], check=False).returncode
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
