"""Write golden/v2/docs and PROVENANCE.json; summarise and compare built trees."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sys
from pathlib import Path

from .packages import pkg_licence, pkg_version
from .profiles import convert_html
from .selection import entries
from .text import convert_nginx_changes, convert_verbatim

GENERATOR = "golden/tools/debian_docs"
"""The converter, as PROVENANCE.json names it."""
REPO = Path(__file__).resolve().parents[3]
V1_DOCS = REPO / "golden" / "v1" / "docs"
V2 = REPO / "golden" / "v2"

CONVERTERS = {"html": convert_html, "nginx-changes": convert_nginx_changes,
              "verbatim": convert_verbatim}
# optional entry fields copied into the provenance record, under these names
_PROVENANCE_LISTS = (("select", "sections"), ("drop", "sections_dropped"),
                     ("keep", "sections_kept"), ("omit", "sections_omitted"))


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def read_source(path):
    """The installed file as it is (for its checksum) and decompressed if it is .gz."""
    data = Path(path).read_bytes()
    raw = data
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    return raw, data


def _write(path: Path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _copy_birchline(docs_dir: Path, prov):
    """golden v1's documents, byte for byte, under birchline/."""
    for src in sorted(p for p in V1_DOCS.rglob("*") if p.is_file()):
        rel = src.relative_to(V1_DOCS).as_posix()
        data = src.read_bytes()
        _write(docs_dir / "birchline" / rel, data)
        prov[f"birchline/{rel}"] = {
            "package": "groundkit golden v1", "version": "v1",
            "source_path": f"golden/v1/docs/{rel}",
            "licence": "Apache-2.0 (written for groundkit)",
            "source_sha256": sha256(data), "sha256": sha256(data),
        }


def _record(e, raw, outb):
    """The provenance record of one converted document."""
    rec = {
        "package": e["pkg"], "version": pkg_version(e["pkg"]), "source_path": e["src"],
        "licence": pkg_licence(e["pkg"], e.get("licence_files", "*")),
        "source_sha256": sha256(raw), "sha256": sha256(outb),
    }
    for field, name in _PROVENANCE_LISTS:
        if e.get(field):
            rec[name] = list(e[field])
    if e.get("note"):
        rec["note"] = e["note"]
    return rec


def _convert_debian(docs_dir: Path, prov):
    """The selected Debian documents."""
    seen = set()
    for e in entries():
        if e["doc"] in seen:
            raise SystemExit(f"duplicate doc id {e['doc']}")
        seen.add(e["doc"])
        pkg_version(e["pkg"])
        if not Path(e["src"]).is_file():
            raise SystemExit(f"{e['src']} is missing (apt-get install -y {e['pkg']})")
        raw, data = read_source(e["src"])
        outb = CONVERTERS[e["conv"]](e, data).encode("utf-8")
        _write(docs_dir / e["doc"], outb)
        prov[e["doc"]] = _record(e, raw, outb)


def build(out_dir: Path, quiet=False):
    """Write docs/ and PROVENANCE.json under out_dir; return the summary rows."""
    docs_dir = out_dir / "docs"
    if docs_dir.exists():
        shutil.rmtree(docs_dir)
    docs_dir.mkdir(parents=True)
    prov = {}
    _copy_birchline(docs_dir, prov)
    _convert_debian(docs_dir, prov)
    blob = json.dumps({"generator": GENERATOR, "documents": dict(sorted(prov.items()))},
                      ensure_ascii=False, indent=2, sort_keys=False) + "\n"
    (out_dir / "PROVENANCE.json").write_bytes(blob.encode("utf-8"))
    return summary(docs_dir)


def decode(data):
    t = data.decode("utf-8")
    return t[1:] if t.startswith("\ufeff") else t


def summary(docs_dir: Path):
    """Per domain: [documents, characters, documents over 20k, documents under 2k]."""
    rows = {}
    for p in sorted(q for q in docs_dir.rglob("*") if q.is_file()):
        rel = p.relative_to(docs_dir).as_posix()
        dom = rel.split("/")[0]
        if dom == "debian-reference":
            dom = "/".join(rel.split("/")[:2])
        n = len(decode(p.read_bytes()))
        d = rows.setdefault(dom, [0, 0, 0, 0])
        d[0] += 1
        d[1] += n
        d[2] += n > 20000
        d[3] += n < 2000
    return rows


def print_summary(rows, file=sys.stdout):
    print(f"{'domain':<22}{'docs':>6}{'chars':>11}{'>20k':>6}{'<2k':>6}", file=file)
    tot = [0, 0, 0, 0]
    for dom in sorted(rows):
        r = rows[dom]
        print(f"{dom:<22}{r[0]:>6}{r[1]:>11}{r[2]:>6}{r[3]:>6}", file=file)
        tot = [a + b for a, b in zip(tot, r, strict=True)]
    print(f"{'total':<22}{tot[0]:>6}{tot[1]:>11}{tot[2]:>6}{tot[3]:>6}", file=file)


def _built_files(root: Path):
    """PROVENANCE.json and docs/** of a built tree, by relative name."""
    out = {}
    if (root / "PROVENANCE.json").is_file():
        out["PROVENANCE.json"] = root / "PROVENANCE.json"
    d = root / "docs"
    if d.is_dir():
        for p in d.rglob("*"):
            if p.is_file():
                out["docs/" + p.relative_to(d).as_posix()] = p
    return out


def compare(a: Path, b: Path):
    """Differences between two built trees (docs/ and PROVENANCE.json)."""
    diffs = []
    fa, fb = _built_files(a), _built_files(b)
    for k in sorted(set(fa) | set(fb)):
        if k not in fa:
            diffs.append(f"missing in {a}: {k}")
        elif k not in fb:
            diffs.append(f"not produced by the converter: {k}")
        elif fa[k].read_bytes() != fb[k].read_bytes():
            diffs.append(f"differs: {k}")
    return diffs
