"""Prints the commands of the README's quick-start block, one per line, comments stripped.

CI runs exactly these (`.ci/run`), so the commands a new user copies are the ones tested.
The block is the first ```bash fence after the line `<!-- quickstart -->`.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def quickstart_commands(readme: str) -> list[str]:
    found = re.search(r"<!-- quickstart -->\s*```bash\n(.*?)```", readme, re.DOTALL)
    if found is None:
        raise SystemExit("readme_commands: no ```bash block after <!-- quickstart --> in README.md")
    lines = (line.split("  #")[0].strip() for line in found.group(1).splitlines())
    return [line for line in lines if line and not line.startswith("#")]


if __name__ == "__main__":
    with open(os.path.join(ROOT, "README.md")) as f:
        print("\n".join(quickstart_commands(f.read())))
    sys.exit(0)
