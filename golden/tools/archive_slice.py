"""Build golden/v4's documents: golden v3's, and an archive slice of earlier releases.

    .venv/bin/python golden/tools/archive_slice.py          # writes v4/docs, twins, PROVENANCE
    .venv/bin/python golden/tools/archive_slice.py --check  # builds in a temporary folder, compares
    .venv/bin/python golden/tools/archive_slice.py --list   # the selection

* ``docs/`` holds golden v3's 172 documents byte for byte, and the **archive slice**:
  the earlier version of some of v3's Debian documents, from the packages of Debian 11
  "bullseye" (the release before bookworm, which v3's come from), converted with the
  same rules and the same page and section selection as the current document
  (``debian_docs``' selection and converters, unchanged). An archived document sits at
  ``<domain>/archive/<release>/<the current document's path below its domain>``, e.g.
  ``postgresql/archive/13/routine-vacuuming.md`` beside ``postgresql/routine-vacuuming.md``:
  groundkit reads a folder named ``archive`` as "this document is superseded".
* ``twins/``: golden v3's, byte for byte.
* ``PROVENANCE.json``: v3's records, plus one per archived document (package, version,
  source path, licence, both sha256s, the sections kept or left out, and the ``.deb``
  it came from with its sha256 and its suite), and v3's twins.

The bullseye packages cannot be installed beside the bookworm ones, so they are never
installed: the ``.deb`` files are fetched once into a cache folder (``--debs``, default
``/tmp/groundkit-archive-debs``) with ``apt-get download`` and a temporary sources list
for bullseye, checked against the sha256 pinned below (another ``.deb`` is an error),
and read with ``dpkg-deb --fsys-tarfile``. The same ``.deb`` files always give the same
bytes.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import posixpath
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(Path(__file__).resolve().parent), str(REPO)]

from debian_docs.build import _PROVENANCE_LISTS, CONVERTERS  # noqa: E402
from debian_docs.packages import _dep5_fields  # noqa: E402
from debian_docs.selection import entries  # noqa: E402
from slice_io import check, sha256, write  # noqa: E402

V3 = REPO / "golden" / "v3"
V4 = REPO / "golden" / "v4"
GENERATOR = "golden/tools/archive_slice.py"
SUITE = "bullseye"
MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
DEBS = Path("/tmp/groundkit-archive-debs")


class Package(NamedTuple):
    """A bullseye package, pinned, and where its files sit compared with the current one."""

    name: str
    version: str
    deb: str
    """the file name ``apt-get download`` gives it"""
    sha256: str
    release: str
    """the upstream release, the folder below ``archive/``"""
    current: str
    """the bookworm package golden v3's document came from"""
    current_root: str
    root: str
    """``current_root`` as this package installs it"""


PACKAGES: tuple[Package, ...] = (
    Package("postgresql-doc-13", "13.16-0+deb11u1",
            "postgresql-doc-13_13.16-0+deb11u1_all.deb",
            "2610eef54ac9ca948a5513f1593d07f4573a0ff1c5d3c5b6c37378452421550c", "13",
            "postgresql-doc-15", "/usr/share/doc/postgresql-doc-15/html",
            "/usr/share/doc/postgresql-doc-13/html"),
    Package("git-doc", "1:2.30.2-1+deb11u2", "git-doc_1%3a2.30.2-1+deb11u2_all.deb",
            "44196660d7b999a0b43356197226a89060773580b231bc20f75b5e146a80717a", "2.30",
            "git-doc", "/usr/share/doc/git-doc", "/usr/share/doc/git-doc"),
    Package("debian-policy", "4.5.1.0", "debian-policy_4.5.1.0_all.deb",
            "de213bc47247528707f6d2b17333638fe205cd1ef732b2be3c2e69ab4c4ecac8", "4.5.1",
            "debian-policy", "/usr/share/doc/debian-policy", "/usr/share/doc/debian-policy"),
    Package("debian-reference-en", "2.78", "debian-reference-en_2.78_all.deb",
            "0934fdcb8c8f032f73136d787e4adbf1802fbd9dd9b72afaea202d9a87a16571", "2.78",
            "debian-reference-en", "/usr/share/debian-reference", "/usr/share/debian-reference"),
)
BY_CURRENT = {p.current: p for p in PACKAGES}

ARCHIVED: tuple[str, ...] = (
    # golden v3 documents whose bullseye version disagrees with them on concrete values
    # (defaults, limits, numbers, option and command names); the selection and the
    # disagreements found are in golden/v4/review/AUTHORING.md
    "postgresql/routine-vacuuming.md",
    "postgresql/runtime-config-resource.md",
    "postgresql/sql-vacuum.md",
    "postgresql/sql-createindex.md",
    "postgresql/auth-pg-hba-conf.md",
    "postgresql/backup-dump.md",
    "postgresql/indexes-types.md",
    "git/git-rebase.md",
    "git/git-config.md",
    "git/git-credential-cache.md",
    "git/git-stash.md",
    "debian-policy/ch-maintainerscripts.md",
    "debian-policy/ch-controlfields.md",
    "debian-policy/ch-relationships.md",
    "debian-reference/en/ch03.md",
    "debian-reference/en/ch07.md",
)
"""The current documents (golden v3 doc ids) an earlier version is added for."""

NOTES: dict[str, str] = {
    "git/git-config.md": "the list of all configuration variables (197,000 characters in "
                         "git 2.30) is left out",
}
"""A note replacing the selection's, where the selection's does not hold for the old page."""



def archived_id(doc_id: str, package: Package) -> str:
    """``postgresql/x.md`` -> ``postgresql/archive/13/x.md`` (the rest of the path kept)."""
    domain, rest = doc_id.split("/", 1)
    return f"{domain}/archive/{package.release}/{rest}"


def selection() -> list[tuple[str, dict, Package, str]]:
    """(archived doc id, the current document's selection entry, package, source path)."""
    by_doc = {e["doc"]: e for e in entries()}
    out = []
    for doc_id in ARCHIVED:
        entry = by_doc[doc_id]
        package = BY_CURRENT[entry["pkg"]]
        if not entry["src"].startswith(package.current_root + "/"):
            raise SystemExit(f"{doc_id}: {entry['src']} is not below {package.current_root}")
        source = package.root + entry["src"][len(package.current_root):]
        out.append((archived_id(doc_id, package), entry, package, source))
    return out


# -- the .deb files -------------------------------------------------------------------------

def _download(packages: list[Package], debs: Path) -> None:
    """``apt-get download`` the pinned versions from bullseye into ``debs``."""
    debs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "lists" / "partial").mkdir(parents=True)
        (root / "cache" / "archives" / "partial").mkdir(parents=True)
        (root / "sources.list").write_text(
            f"deb [signed-by={KEYRING}] {MIRROR} {SUITE} main\n", encoding="utf-8")
        apt = ["-o", f"Dir::Etc::SourceList={root / 'sources.list'}",
               "-o", "Dir::Etc::SourceParts=/dev/null",
               "-o", f"Dir::State::Lists={root / 'lists'}",
               "-o", f"Dir::Cache={root / 'cache'}"]
        for command in (["apt-get", *apt, "update"],
                        ["apt-get", *apt, "download",
                         *(f"{p.name}={p.version}" for p in packages)]):
            done = subprocess.run(command, cwd=debs, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(command[:1] + command[-3:])} failed:\n"
                                 f"{done.stderr.strip()}")


def fetch(debs: Path) -> None:
    """Make sure ``debs`` holds the pinned .deb files (downloaded if missing, checked always)."""
    missing = [p for p in PACKAGES if not (debs / p.deb).is_file()]
    if missing:
        print(f"downloading {', '.join(p.deb for p in missing)} into {debs}", file=sys.stderr)
        _download(missing, debs)
    for p in PACKAGES:
        path = debs / p.deb
        if not path.is_file():
            raise SystemExit(f"{path}: not downloaded")
        found = sha256(path.read_bytes())
        if found != p.sha256:
            raise SystemExit(f"{path}: sha256 {found}, not the pinned {p.sha256} "
                             f"({p.name} {p.version} from {SUITE})")


class Deb:
    """The files of one .deb (its data tar, read by ``dpkg-deb --fsys-tarfile``)."""

    def __init__(self, path: Path, package: Package):
        self.package = package
        fields = subprocess.run(["dpkg-deb", "-f", str(path), "Package", "Version"],
                                check=True, capture_output=True, text=True).stdout
        found = dict(line.split(": ", 1) for line in fields.strip().split("\n"))
        if (found.get("Package"), found.get("Version")) != (package.name, package.version):
            raise SystemExit(f"{path}: holds {found}, not {package.name} {package.version}")
        data = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(path)], check=True,
                              capture_output=True).stdout
        self._files: dict[str, bytes] = {}
        self._links: dict[str, str] = {}
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar.getmembers():
                name = posixpath.normpath("/" + member.name.removeprefix("./"))
                if member.issym():
                    self._links[name] = posixpath.normpath(
                        posixpath.join(posixpath.dirname(name), member.linkname))
                elif member.isfile():
                    handle = tar.extractfile(member)
                    assert handle is not None
                    self._files[name] = handle.read()

    def read(self, path: str) -> bytes:
        """A file's bytes (symbolic links followed)."""
        for _ in range(10):
            if path not in self._links:
                break
            path = self._links[path]
        if path not in self._files:
            raise SystemExit(f"{self.package.deb}: no file {path}")
        return self._files[path]

    def licence(self, files_pattern: str) -> str:
        """The ``License:`` of the DEP-5 stanza of the package's copyright file whose
        ``Files`` lists ``files_pattern`` (as debian_docs reads an installed package's)."""
        text = self.read(f"/usr/share/doc/{self.package.name}/copyright").decode("utf-8")
        for para in re.split(r"\n\s*\n", text):
            fields = _dep5_fields(para)
            if ("Files" in fields and "License" in fields
                    and files_pattern in fields["Files"].split()):
                return fields["License"].split("\n")[0].strip()
        raise SystemExit(f"{self.package.deb}: no Files stanza listing {files_pattern!r}")


# -- the build --------------------------------------------------------------------------------

def build(out: Path, debs: Path = DEBS) -> dict[str, int]:
    """Write ``out/docs``, ``out/twins`` and ``out/PROVENANCE.json``; counts by kind."""
    fetch(debs)
    opened = {p.name: Deb(debs / p.deb, p) for p in PACKAGES}
    docs, twins = out / "docs", out / "twins"
    for folder in (docs, twins):
        if folder.exists():
            shutil.rmtree(folder)
    v3 = json.loads((V3 / "PROVENANCE.json").read_text(encoding="utf-8"))
    records: dict[str, dict] = {}
    for src in sorted(p for p in (V3 / "docs").rglob("*") if p.is_file()):
        doc_id = src.relative_to(V3 / "docs").as_posix()
        write(docs / doc_id, src.read_bytes())
        records[doc_id] = v3["documents"][doc_id]
    for src in sorted(p for p in (V3 / "twins").rglob("*") if p.is_file()):
        write(twins / src.relative_to(V3 / "twins"), src.read_bytes())
    for doc_id, entry, package, source in selection():
        if doc_id in records:
            raise SystemExit(f"{doc_id}: already a golden v3 document")
        deb = opened[package.name]
        raw = deb.read(source)
        data = gzip.decompress(raw) if source.endswith(".gz") else raw
        old_entry = dict(entry, doc=doc_id, pkg=package.name, src=source)
        text = CONVERTERS[entry["conv"]](old_entry, data).encode("utf-8")
        write(docs / doc_id, text)
        records[doc_id] = _record(entry, package, deb, source, raw, text)
    blob = {"generator": GENERATOR, "documents": dict(sorted(records.items())),
            "twins": v3["twins"]}
    (out / "PROVENANCE.json").write_text(json.dumps(blob, indent=2, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    return {"v3 documents": len(v3["documents"]), "archived": len(ARCHIVED),
            "twins": len(v3["twins"])}


def _record(entry: dict, package: Package, deb: Deb, source: str, raw: bytes,
            text: bytes) -> dict:
    """The provenance record of one archived document (debian_docs' fields, then the
    .deb's)."""
    rec = {"package": package.name, "version": package.version, "source_path": source,
           "licence": deb.licence(entry.get("licence_files", "*")),
           "source_sha256": sha256(raw), "sha256": sha256(text)}
    for field, name in _PROVENANCE_LISTS:
        if entry.get(field):
            rec[name] = list(entry[field])
    note = NOTES.get(entry["doc"], entry.get("note"))
    if note:
        rec["note"] = note
    rec.update({"suite": SUITE, "deb": package.deb, "deb_sha256": package.sha256,
                "current": entry["doc"],
                "converted_as": f"debian_docs' selection entry of {entry['doc']}"})
    return rec




def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python golden/tools/archive_slice.py",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="build into a temporary folder and compare with the committed files; "
                         "exit 1 on any difference")
    ap.add_argument("--out", type=Path, default=V4, help="the golden folder (default golden/v4)")
    ap.add_argument("--debs", type=Path, default=DEBS,
                    help=f"the cache folder of the bullseye .deb files (default {DEBS}); "
                         "missing ones are downloaded with apt-get")
    ap.add_argument("--list", action="store_true", help="print the selection and exit")
    args = ap.parse_args(argv)
    if args.list:
        for doc_id, entry, package, source in selection():
            print(f"{doc_id:<52} {package.name} {package.version:<20} {source}"
                  f"  (earlier version of {entry['doc']})")
        return 0
    if not args.check:
        print(build(args.out, args.debs))
        return 0
    return check(lambda out: build(out, args.debs), args.out)


if __name__ == "__main__":
    sys.exit(main())
