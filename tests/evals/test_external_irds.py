"""ir_datasets offline: seeding a private cache from the mirror, exact counts, integrity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evals.external import irds
from evals.external.checksums import MANIFEST
from groundkit.errors import IntegrityError, UsageError

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("GROUNDKIT_DATA", REPO.parent / "shared" / "data"))
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"no test-collection mirror at {DATA}")

LOAD = """
import json, sys
from evals.external import irds
from evals.external.registry import CRANFIELD_GRADES
out = {}
for name in ("cranfield", "vaswani"):
    grades = CRANFIELD_GRADES if name == "cranfield" else None
    ds = irds.load(name, cache=sys.argv[1], data=sys.argv[2], offline=True, grades=grades)
    out[name] = {"counts": ds.counts(), "doc": [ds.docs[0].doc_id, ds.docs[-1].text[-40:]],
                 "query": ds.queries["1"][:40], "qrels_1": sorted(ds.qrels["1"].items())[:3],
                 "grades": sorted({r for d in ds.qrels.values() for r in d.values()})}
print(json.dumps(out))
"""


@needs_data
def test_cranfield_and_vaswani_load_offline_with_their_exact_counts(tmp_path: Path) -> None:
    cache = tmp_path / "ir_datasets"
    env = {**os.environ, "NO_PROXY": "*", "HTTP_PROXY": "http://127.0.0.1:9",
           "HTTPS_PROXY": "http://127.0.0.1:9"}  # any download attempt would fail
    done = subprocess.run([sys.executable, "-W", "error", "-c", LOAD, str(cache), str(DATA)],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout)
    assert got["cranfield"]["counts"] == {"docs": 1400, "queries": 225, "judged_queries": 225,
                                          "qrels": 1837}
    assert got["vaswani"]["counts"] == {"docs": 11429, "queries": 93, "judged_queries": 93,
                                        "qrels": 2083}
    assert got["cranfield"]["grades"] == [0, 1, 2, 3, 4]  # -1 -> 0; 1 (complete answer) -> 4
    assert got["vaswani"]["query"] == "MEASUREMENT OF DIELECTRIC CONSTANT OF LI"
    assert not got["vaswani"]["doc"][1].endswith("/")  # the mirror's missing final newline
    assert (cache / "cranfield" / "cran.tar.gz").stat().st_size == \
        MANIFEST["cranfield/cran.tar.gz"].size
    assert (cache / "vaswani" / "docs.txt").stat().st_size == \
        MANIFEST["vaswani/npl/doc-text"].size + 1


@needs_data
def test_seeding_rewrites_a_damaged_cache_file_and_leaves_a_good_one(tmp_path: Path) -> None:
    assert irds.seed("cranfield", tmp_path, DATA) == ["cranfield/cran.tar.gz"]
    assert irds.seed("cranfield", tmp_path, DATA) == []
    (tmp_path / "cranfield" / "cran.tar.gz").write_bytes(b"damaged")
    assert irds.seed("cranfield", tmp_path, DATA) == ["cranfield/cran.tar.gz"]


def test_a_mirror_file_with_the_wrong_checksum_is_never_seeded(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "cranfield").mkdir(parents=True)
    (mirror / "cranfield" / "cran.tar.gz").write_bytes(b"x" * 10)
    with pytest.raises(IntegrityError, match=r"cran\.tar\.gz"):
        irds.seed("cranfield", tmp_path / "cache", mirror)
    assert not (tmp_path / "cache" / "cranfield" / "cran.tar.gz").exists()


def test_offline_loading_without_the_mirror_file_says_what_to_stage(tmp_path: Path) -> None:
    with pytest.raises(IntegrityError, match="cannot load offline"):
        irds.seed("vaswani", tmp_path / "cache", tmp_path / "empty", offline=True)


def test_an_id_without_an_offline_seed_is_refused_offline(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no offline seed"):
        irds.seed("msmarco-passage/dev", tmp_path, tmp_path, offline=True)


def test_beir_ids_seed_from_the_mirror_zip() -> None:
    seeds = irds.seeds_for("beir/nfcorpus/test")
    assert [s.target for s in seeds] == ["beir/nfcorpus/source.zip"]
    assert irds.seeds_for("beir/scifact/test") == ()  # no zip staged: the BEIR directory path
