"""Draw the A/B halves of adm007_phrasings.toml (run once, before the rule saw the set).

Each class (flag, silent) is shuffled with a fixed seed and cut in two, so both halves
hold about as many texts of each class. The half is written into the file beside each id
so that later edits of the set cannot move a text from one half to the other.
"""

import random
import re
import tomllib
from pathlib import Path

SEED = 23007
SET = Path(__file__).with_name("adm007_phrasings.toml")


def halves(phrasings: list[dict]) -> dict[str, str]:
    rng = random.Random(SEED)
    half_of: dict[str, str] = {}
    for expect in ("flag", "silent"):
        ids = sorted(p["id"] for p in phrasings if p["expect"] == expect)
        rng.shuffle(ids)
        cut = len(ids) // 2
        half_of.update({i: "A" for i in ids[:cut]})
        half_of.update({i: "B" for i in ids[cut:]})
    return half_of


def main() -> None:
    text = SET.read_text(encoding="utf-8")
    half_of = halves(tomllib.loads(text)["phrasing"])
    SET.write_text(
        re.sub(r'^id = "(h\d+)"$', lambda m: f'{m.group(0)}\nhalf = "{half_of[m.group(1)]}"',
               text, flags=re.M),
        encoding="utf-8")


if __name__ == "__main__":
    main()
