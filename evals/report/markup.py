"""Small HTML helpers shared by the report's sections: escaping, number formats and a
passage's source locator as a label."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any


def e(value: object) -> str:
    """``value`` escaped for HTML text and attribute values."""
    return escape(str(value), quote=True)


def num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def signed(value: float) -> str:
    return f"{value:+.3f}".replace("-", "−")


def pval(value: float) -> str:
    return "&lt;0.001" if value < 0.001 else f"{value:.3f}"


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def source_label(source: Mapping[str, Any] | None) -> str:
    """A passage's compact source (:func:`evals.report.model.compact_source`) for people:
    ``p. 41–42`` (``p. 3, 5–6`` with a gap), ``bytes 1804–2930 in word/document.xml``
    (``(+1 part)`` when it spans more); "" for none."""
    if not source:
        return ""
    if source.get("pages"):
        return "p. " + ", ".join(f"{a}–{b}" if b > a else f"{a}" for a, b in _runs(source["pages"]))
    if source.get("byte_start") is None:
        return ""
    label = f"bytes {source['byte_start']}–{source['byte_end']}"
    if source.get("part"):
        label += f" in {source['part']}"
    if source.get("parts", 1) > 1:
        more = source["parts"] - 1
        label += f" (+{more} part{'s' if more > 1 else ''})"
    return label


def _runs(pages: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive pages as ``(first, last)`` runs, in the given order."""
    runs: list[tuple[int, int]] = []
    for page in pages:
        if runs and page == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], page)
        else:
            runs.append((page, page))
    return runs
