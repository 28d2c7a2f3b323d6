"""One median for the whole project: ``traceview/stats.py`` (nearest rank, docs/json.md).

A median or quantile computed any other way (the standard library's, numpy's, or written
out as the mean of the two middle values) fails here, naming the file and line. The
Hodges-Lehmann estimates are another statistic (the centre of pairwise averages or
differences) and are listed with that reason.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "traceview"
OTHER_MEDIAN = re.compile(
    r"statistics\.(?:median|quantiles)|median_low|median_high|np\.(?:median|quantile|percentile)"
    r"|numpy\.(?:median|quantile|percentile)|\.median\(\)"
    r"|\[(?P<mid>\w+(?: // 2)?) - 1\] \+ \w+\[(?P=mid)\]")  # the mean of the two middle values
# file -> why its match is not a second median
ALLOWED = {
    "paired.py": "Hodges-Lehmann estimate: median of the Walsh averages (another statistic)",
    "multi/twosample.py": "Hodges-Lehmann two-sample estimate: median of all differences",
    # the exact bootstrap interval's tails: inverted_cdf is the nearest-rank quantile
    "multi/compare.py": "np.quantile(method='inverted_cdf'), the nearest-rank definition",
}


def test_no_second_median():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if OTHER_MEDIAN.search(line.split("#", 1)[0]) and rel not in ALLOWED:
                found.append(f"{rel}:{no}: {line.strip()}")
    assert not found, "a median outside traceview/stats.py:\n" + "\n".join(found)


def test_the_allowed_files_still_need_it():
    """An entry of ALLOWED whose file no longer matches is stale: remove it."""
    stale = [rel for rel in ALLOWED
             if not any(OTHER_MEDIAN.search(line.split("#", 1)[0])
                        for line in (ROOT / rel).read_text().splitlines())]
    assert not stale, stale
