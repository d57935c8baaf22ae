"""Figures and the table they are printed in.

A Figure is one measured value with its unit and, when there is one, the
target it is compared with. `met` is informational only: the benchmark
never fails on a missed target, it says so in the table.
"""
import math


def percentile(values, p):
    """Linear-interpolated percentile (p in 0..100) of a non-empty sequence."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo = math.floor(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Figure:
    __slots__ = ("name", "value", "unit", "limit", "better", "note")

    def __init__(self, name, value, unit="ms", limit=None, better="lower", note=""):
        self.name = name
        self.value = value
        self.unit = unit
        self.limit = limit      # the target's bound, or None for a figure without target
        self.better = better    # "lower": target is value < limit ("le": <=), "higher": value >= limit
        self.note = note

    @property
    def met(self):
        if self.limit is None or self.value is None or (isinstance(self.value, float) and math.isnan(self.value)):
            return None
        if self.better == "lower":
            return self.value < self.limit
        if self.better == "le":
            return self.value <= self.limit
        return self.value >= self.limit

    def target_text(self):
        if self.limit is None:
            return ""
        sign = {"lower": "<", "le": "<=", "higher": ">="}[self.better]
        return "%s %s" % (sign, _fmt(self.limit, self.unit))

    def row(self):
        verdict = {True: "ok", False: "MISSED", None: ""}[self.met]
        return (self.name, _fmt(self.value, self.unit), self.target_text(), verdict, self.note)


def _fmt(value, unit):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if unit == "%":
        return "%.1f %%" % value
    if unit == "ms":
        return "%.1f ms" % value if abs(value) < 100 else "%.0f ms" % value
    if unit == "s":
        return "%.2f s" % value
    if isinstance(value, float):
        return "%.1f %s" % (value, unit)
    return ("%d %s" % (value, unit)).strip()


def table(title, figures):
    """The section's figures as aligned text."""
    head = ("figure", "value", "target", "", "how")
    rows = [head] + [f.row() for f in figures]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    out = ["", "== %s ==" % title]
    for r in rows:
        cells = [r[i].ljust(widths[i]) for i in range(4)]
        out.append(("  ".join(cells) + "  " + r[4]).rstrip())
    return "\n".join(out)


def ms(seconds):
    return seconds * 1000.0
