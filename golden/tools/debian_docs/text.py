"""Plain-text sources: the nginx CHANGES file and Debian's example files."""

from __future__ import annotations

import re

from .render import fence_for, finish
from .selection import NGINX

_RELEASE = re.compile(r"^Changes with nginx (\d+(?:\.\d+)+)\s+(\d{2} \w{3} \d{4})\s*$")


def _vkey(v):
    return tuple(int(x) for x in v.split("."))


def parse_changes(text):
    """The releases of an nginx CHANGES file: [(version, date, [item lines, ...]), ...]."""
    releases, cur, item = [], None, None
    for line in text.split("\n"):
        m = _RELEASE.match(line)
        if m:
            cur = (m.group(1), m.group(2), [])
            releases.append(cur)
            item = None
        elif line.startswith("    *) "):
            item = [line[7:].strip()]
            cur[2].append(item)
        elif line.strip() and item is not None:
            item.append(line.strip())
        elif line.strip():
            raise SystemExit(f"nginx CHANGES: unexpected line {line!r}")
        else:
            item = None
    return releases


def convert_nginx_changes(entry, data):
    first, last = (_vkey(v) for v in entry["versions"])
    releases = parse_changes(data.decode("utf-8"))
    chosen = [r for r in releases if first <= _vkey(r[0])[:2] <= last]
    if not chosen:
        raise SystemExit(f"{entry['doc']}: no release in {entry['versions']}")
    lines = [f"# nginx changes: versions {entry['versions'][0]} to {entry['versions'][1]}", ""]
    for ver, date, items in chosen:
        lines += [f"## Changes with nginx {ver} ({date})", ""]
        for it in items:
            lines.append("- " + " ".join(it))
        lines.append("")
    return finish(lines)


def convert_verbatim(entry, data):
    text = data.decode("utf-8").replace("\r\n", "\n")
    name = entry["src"][len(NGINX) + 1:]
    body = "\n".join(ln.rstrip() for ln in text.split("\n")).strip("\n")
    f = fence_for(body)
    return finish([f"# nginx (Debian package documentation): {name}", "",
                   f"Installed by nginx-doc as {entry['src']}.", "", f, body, f])
