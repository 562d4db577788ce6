"""Build golden/v3's documents: golden v2's, a formats slice, and the HTML twins.

    .venv/bin/python golden/tools/formats_slice.py          # writes v3/docs, twins, PROVENANCE
    .venv/bin/python golden/tools/formats_slice.py --check  # builds in a temporary folder, compares
    .venv/bin/python golden/tools/formats_slice.py --list     # the selection

* ``docs/`` holds golden v2's 144 documents byte for byte, and the **formats slice**:
  real files nobody on the team wrote, copied unchanged from Debian packages (PDFs of the R
  manuals and gnuplot's manual, HTML pages of the Debian Administrator's Handbook), and
  DOCX, ODT and EPUB files a real converter (pandoc) made from other pages of that
  handbook.
* ``twins/`` holds the original HTML page behind each v2 document that was converted
  from one whole page (same content, another format): the harness's ``twins`` suite
  indexes them in place of their Markdown conversions (:mod:`evals.golden.twins`).
* ``PROVENANCE.json``: v2's records, plus one per new file (package, version, source,
  licence, both sha256s, and the converter with its options for made files) and the twins.

pandoc stamps ODT and EPUB members with the clock and EPUB with a random identifier;
the builder fixes both (``SOURCE_DATE_EPOCH``, a fixed identifier, members re-packed with
a fixed date in their order), so the same packages always give the same bytes.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from debian_docs.packages import pkg_version
from slice_io import check, sha256, write

REPO = Path(__file__).resolve().parents[2]
V2 = REPO / "golden" / "v2"
V3 = REPO / "golden" / "v3"
GENERATOR = "golden/tools/formats_slice.py"

HANDBOOK = "/usr/share/doc/debian-handbook/html/en-US"
HANDBOOK_LICENCE = "GPL-2.0+ or CC-BY-SA-3.0"
EPOCH = "1663804800"  # 2022-09-22, the debian-handbook release the slice is made from
ZIP_DATE = (2022, 9, 22, 0, 0, 0)

COPIED: tuple[tuple[str, str, str, str], ...] = (
    # (doc_id, package, source path, licence)
    ("r-manuals/R-admin.pdf", "r-doc-pdf", "/usr/share/R/doc/manual/R-admin.pdf", "GPL-2"),
    ("r-manuals/R-data.pdf", "r-doc-pdf", "/usr/share/R/doc/manual/R-data.pdf", "GPL-2"),
    ("gnuplot/gnuplot.pdf", "gnuplot-doc", "/usr/share/doc/gnuplot/gnuplot.pdf",
     "gnuplot (verbatim copies may be distributed)"),
    *((f"debian-handbook/html/{page}", "debian-handbook", f"{HANDBOOK}/{page}", HANDBOOK_LICENCE)
      for page in (
          "sect.rights-management.html", "sect.user-group-databases.html",
          "sect.creating-accounts.html", "sect.shell-environment.html",
          "sect.task-scheduling-cron-atd.html", "sect.asynchronous-task-scheduling-anacron.html",
          "sect.quotas.html", "sect.backup.html", "sect.hotplug.html",
          "sect.power-management.html", "sect.syslog.html", "sect.inetd.html",
          "sect.hostname-name-service.html", "sect.firewall-packet-filtering.html",
          "sect.remote-login.html", "sect.supervision.html", "sect.config-misc.html",
          "sect.monitoring.html", "sect.dhcp.html", "sect.config-bootloader.html")),
)
"""Files copied byte for byte."""

CONVERTED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # (doc_id, pandoc writer, handbook pages in order)
    ("debian-handbook/office/apt-get.docx", "docx", ("sect.apt-get.html",)),
    ("debian-handbook/office/apt-cache-and-frontends.docx", "docx",
     ("sect.apt-cache.html", "sect.apt-frontends.html")),
    ("debian-handbook/office/package-authentication.odt", "odt",
     ("sect.package-authentication.html",)),
    ("debian-handbook/office/upgrades.odt", "odt",
     ("sect.regular-upgrades.html", "sect.automatic-upgrades.html")),
    ("debian-handbook/office/file-servers.epub", "epub3",
     ("sect.ftp-file-server.html", "sect.nfs-file-server.html",
      "sect.windows-file-server-with-samba.html")),
)
"""Files pandoc makes from handbook pages (HTML in, one office or e-book file out)."""



def repack(data: bytes) -> bytes:
    """The same zip members in the same order, dated ``ZIP_DATE``; ``mimetype`` stored."""
    with tempfile.SpooledTemporaryFile() as out:
        with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
            for info in src.infolist():
                member = zipfile.ZipInfo(info.filename, ZIP_DATE)
                member.compress_type = (zipfile.ZIP_STORED if info.filename == "mimetype"
                                        else zipfile.ZIP_DEFLATED)
                member.external_attr = 0o644 << 16
                dst.writestr(member, src.read(info))
        out.seek(0)
        return out.read()


def pandoc(writer: str, pages: tuple[str, ...], title: str) -> tuple[bytes, list[str]]:
    """``pages`` converted by pandoc's ``writer``; the bytes and the options used."""
    options = ["-f", "html", "-t", writer, "--metadata", f"title={title}"]
    if writer.startswith("epub"):
        options += ["--metadata", f"identifier=urn:groundkit:golden-v3:{title}"]
    env = {"PATH": "/usr/bin:/bin", "SOURCE_DATE_EPOCH": EPOCH, "LANG": "C.UTF-8"}
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "out"
        subprocess.run(["pandoc", *options, "-o", str(target),
                        *(f"{HANDBOOK}/{p}" for p in pages)],
                       check=True, env=env, cwd=tmp, capture_output=True)
        data = target.read_bytes()
    return (data if writer == "docx" else repack(data)), options


def build(out: Path) -> dict[str, int]:
    """Write ``out/docs``, ``out/twins`` and ``out/PROVENANCE.json``; counts by kind."""
    docs, twins = out / "docs", out / "twins"
    for folder in (docs, twins):
        if folder.exists():
            shutil.rmtree(folder)
    v2 = json.loads((V2 / "PROVENANCE.json").read_text(encoding="utf-8"))["documents"]
    records: dict[str, dict] = {}
    for src in sorted(p for p in (V2 / "docs").rglob("*") if p.is_file()):
        doc_id = src.relative_to(V2 / "docs").as_posix()
        write(docs / doc_id, src.read_bytes())
        records[doc_id] = v2[doc_id]
    for doc_id, pkg, path, licence in COPIED:
        data = Path(path).read_bytes()
        write(docs / doc_id, data)
        records[doc_id] = {"package": pkg, "version": pkg_version(pkg), "source_path": path,
                           "licence": licence, "source_sha256": sha256(data),
                           "sha256": sha256(data)}
    pandoc_version = pkg_version("pandoc")
    for doc_id, writer, pages in CONVERTED:
        title = Path(doc_id).stem
        data, options = pandoc(writer, pages, title)
        write(docs / doc_id, data)
        sources = [f"{HANDBOOK}/{p}" for p in pages]
        records[doc_id] = {
            "package": "debian-handbook", "version": pkg_version("debian-handbook"),
            "source_path": sources[0] if len(sources) == 1 else sources,
            "licence": HANDBOOK_LICENCE,
            "source_sha256": [sha256(Path(s).read_bytes()) for s in sources],
            "sha256": sha256(data),
            "converter": {"program": "pandoc", "version": pandoc_version,
                          "options": options, "source_date_epoch": EPOCH,
                          "zip": "as written" if writer == "docx"
                          else f"members re-packed dated {ZIP_DATE[:3]}"}}
    twin_records = _twins(twins, v2)
    blob = {"generator": GENERATOR, "documents": dict(sorted(records.items())),
            "twins": twin_records}
    (out / "PROVENANCE.json").write_text(json.dumps(blob, indent=2, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    return {"v2 documents": len(v2), "copied": len(COPIED), "converted": len(CONVERTED),
            "twins": len(twin_records)}


def _twins(twins: Path, v2: dict[str, dict]) -> dict[str, dict]:
    """The original page of every v2 document converted from one whole HTML page."""
    records = {}
    for doc_id, record in sorted(v2.items()):
        source = record["source_path"]
        whole = source.endswith(".html") and not any(
            k in record for k in ("sections", "sections_omitted", "sections_kept",
                                  "sections_dropped", "note"))
        if not whole:
            continue
        data = Path(source).read_bytes()
        if sha256(data) != record["source_sha256"]:
            raise SystemExit(f"{source}: not the bytes golden v2 was built from (another "
                             f"{record['package']} version?)")
        twin = doc_id.rsplit(".", 1)[0] + ".html"
        write(twins / twin, data)
        records[doc_id] = {"twin": f"twins/{twin}", "source_path": source,
                           "package": record["package"], "version": record["version"],
                           "sha256": sha256(data)}
    return records




def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python golden/tools/formats_slice.py",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="build into a temporary folder and compare with the committed files; "
                         "exit 1 on any difference")
    ap.add_argument("--out", type=Path, default=V3, help="the golden folder (default golden/v3)")
    ap.add_argument("--list", action="store_true", help="print the selection and exit")
    args = ap.parse_args(argv)
    if args.list:
        for doc_id, pkg, path, _ in COPIED:
            print(f"{doc_id:<60} {pkg:<16} {path}")
        for doc_id, writer, pages in CONVERTED:
            print(f"{doc_id:<60} pandoc -t {writer:<6} {' '.join(pages)}")
        return 0
    if not args.check:
        print(build(args.out))
        return 0
    return check(build, args.out)


if __name__ == "__main__":
    sys.exit(main())
