"""attn-run --profile's table, read back (docs/runtime.md, "Profiling")."""

import re

_ROW = re.compile(r"(\S+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)"
                  r"(?:\s+([0-9.]+|-)\s+([0-9.]+|-)\s+([0-9.]+|-))?\s*$")


def _number(text):
    return None if text in (None, "-") else float(text)


def parse_profile(text):
    """{kernel kind: {"calls", "ms", "share", "gflops", "gbs", "intensity"}}
    per run; a column the table leaves "-" (no flops counted) is None."""
    kinds, inside = {}, False
    for line in text.splitlines():
        if line.startswith("kernel "):
            inside = True
            continue
        m = _ROW.match(line) if inside else None
        if m:
            kinds[m.group(1)] = {
                "calls": int(m.group(2)), "ms": float(m.group(3)),
                "share": float(m.group(4)), "gflops": _number(m.group(5)),
                "gbs": _number(m.group(6)), "intensity": _number(m.group(7))}
        elif inside and line.strip() and not line.startswith(" "):
            inside = False
    return kinds
