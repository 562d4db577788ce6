"""Small HTML helpers shared by the report's sections: escaping and number formats."""

from __future__ import annotations

from html import escape


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
