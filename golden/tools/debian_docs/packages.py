"""Facts about installed Debian packages: version and licence."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

_versions = {}
_licences = {}


def pkg_version(pkg):
    """The installed version (dpkg-query); exit with a hint if the package is missing."""
    if pkg not in _versions:
        try:
            v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], check=True,
                               capture_output=True, text=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            v = ""
        if not v:
            raise SystemExit(f"package {pkg} is not installed (apt-get install -y {pkg})")
        _versions[pkg] = v
    return _versions[pkg]


def _dep5_fields(para):
    """The fields of one DEP-5 paragraph (continuation lines joined with newlines)."""
    fields, last = {}, None
    for ln in para.split("\n"):
        if ln[:1] in (" ", "\t") and last:
            fields[last] += "\n" + ln.strip()
        elif ":" in ln:
            last, _, val = ln.partition(":")
            last = last.strip()
            fields[last] = val.strip()
    return fields


def pkg_licence(pkg, files_pattern):
    """Short licence name of the DEP-5 stanza of /usr/share/doc/PKG/copyright whose
    Files field lists files_pattern."""
    key = (pkg, files_pattern)
    if key in _licences:
        return _licences[key]
    text = Path(f"/usr/share/doc/{pkg}/copyright").read_text(encoding="utf-8")
    found = None
    for para in re.split(r"\n\s*\n", text):
        fields = _dep5_fields(para)
        if ("Files" in fields and "License" in fields
                and files_pattern in fields["Files"].split()):
            found = fields["License"].split("\n")[0].strip()
            break
    if not found:
        raise SystemExit(f"{pkg}: no Files stanza listing {files_pattern!r} in its copyright file")
    _licences[key] = found
    return found
