"""Keep or drop whole sections of a converted document by heading name."""

from __future__ import annotations

import re

_NUMBERING = re.compile(
    r"^(?:(?:Chapter|Appendix|Kapitel|Chapitre)\s+)?(?:[0-9A-Z]{1,2}(?:\.[0-9]+)*\.?\s+)")


def heading_name(text):
    """A heading's text without its section number ("3.1. Column Data Types" ->
    "Column Data Types")."""
    return _NUMBERING.sub("", text).strip()


class _SectionFilter:
    """The state of a walk through the headings: which section is being skipped or kept."""

    def __init__(self, keep, omit):
        self.keep, self.omit = keep, omit
        self.used = set()          # the patterns that matched a heading
        self.skip_below = None     # inside a dropped section of this level
        self.keep_below = None     # inside a kept section of this level

    def _matches(self, pats, name):
        for p in pats:
            if re.fullmatch(p, name):
                self.used.add(p)
                return True
        return False

    def _omitted(self, name):
        return bool(self.omit) and self._matches(self.omit, name)

    def keeps_heading(self, lvl, name):
        """Whether a heading (not the title) stays; it opens or closes a section."""
        if self.skip_below is not None and lvl > self.skip_below:
            return False
        self.skip_below = None
        if self.keep_below is not None and lvl > self.keep_below:
            if self._omitted(name):
                self.skip_below = lvl
                return False
            return True
        self.keep_below = None
        if self._omitted(name):
            self.skip_below = lvl
            return False
        if self.keep is not None:
            if self._matches(self.keep, name):
                self.keep_below = lvl
                return True
            self.skip_below = lvl
            return False
        return True

    def keeps_block(self):
        return self.skip_below is None


def filter_sections(blocks, entry):
    """Keep or drop whole sections (a heading and everything below it, up to the next
    heading of the same or a higher level), matching heading names by regular expression.

    entry["keep"]:  keep only the preamble (blocks before the first section heading below
                    the title) and the sections whose name matches one of these
    entry["omit"]:  drop the sections whose name matches one of these
    """
    keep, omit = entry.get("keep"), entry.get("omit")
    if not keep and not omit:
        return blocks
    state = _SectionFilter(keep, omit)
    heads = [b[1] for b in blocks if b[0] == "h"]
    title_level = min(heads) if heads else 1
    # the title heading (the first one at the top level) is never filtered
    out, first_title = [], True
    for b in blocks:
        if b[0] != "h":
            if state.keeps_block():
                out.append(b)
        elif first_title and b[1] == title_level:
            first_title = False
            out.append(b)
        elif state.keeps_heading(b[1], heading_name(b[2])):
            out.append(b)
    missing = [p for p in (keep or []) + (omit or []) if p not in state.used]
    if missing:
        raise SystemExit(f"{entry['doc']}: no section heading matches {missing}")
    return out
