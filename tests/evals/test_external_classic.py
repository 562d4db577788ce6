"""Glasgow SMART collections (CISI, MEDLINE, ADI): parsing, exact counts, checksums."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from evals.external import registry
from evals.external.checksums import MANIFEST, FileSpec, verify_file
from evals.external.classic import parse_qrels, read_classic, records
from evals.external.dataset import DatasetError
from groundkit.errors import IntegrityError

DATA = Path(os.environ.get("GROUNDKIT_DATA", Path(__file__).resolve().parents[3] / "shared"
                           / "data"))
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"no test-collection mirror at {DATA}")

SMART = """.I 1\r
.T\r
Dewey Decimal\r
.A\r
Comaromi, J.P.\r
.A\r
Someone, E.\r
.W\r
   The present study is a history   \r
of the DEWEY Decimal Classification.\r
.X\r
1\t5\t1\r
.I 002\r
.W\r
Second record.\r
"""


def test_records_split_fields_and_join_repeated_ones() -> None:
    parsed = dict(records(SMART, "t"))
    assert list(parsed) == ["1", "2"]
    assert parsed["1"]["T"] == "Dewey Decimal"
    assert parsed["1"]["A"] == "Comaromi, J.P.\nSomeone, E."
    assert parsed["1"]["W"] == ("The present study is a history\n"
                                "of the DEWEY Decimal Classification.")
    assert parsed["2"] == {"W": "Second record."}


def test_text_before_the_first_record_is_an_error_naming_the_line() -> None:
    with pytest.raises(DatasetError, match="t:1"):
        list(records("stray text\n.I 1\n.W\nx\n", "t"))


def test_both_judgment_layouts_parse_to_binary_relevance() -> None:
    smart = "     1     28\t0\t0.000000\n     1     35\t0\t0.000000\n"
    assert parse_qrels(smart, "smart", "t") == {"1": {"28": 1, "35": 1}}
    assert parse_qrels("1 0 13 1\n1 0 14 1\n", "trec", "t") == {"1": {"13": 1, "14": 1}}
    with pytest.raises(DatasetError, match="t:1"):
        parse_qrels("1 x 13 1\n", "trec", "t")


def _tarball(path: Path, members: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_small_tarball_reads_as_a_dataset(tmp_path: Path) -> None:
    tarball = _tarball(tmp_path / "adi.tar.gz", {
        "ADI.ALL": ".I 1\n.T\nfirst title\n.W\nfirst text\n.I 2\n.W\nsecond text\n",
        "ADI.QRY": ".I 1\n.W\nfirst\n",
        "ADI.REL": "1 1 0 0.000000\n",
    })
    dataset = read_classic("adi", tarball)
    assert dataset.counts() == {"docs": 2, "queries": 1, "judged_queries": 1, "qrels": 1}
    assert dataset.docs[0].title == "first title" and dataset.docs[1].title == ""


@needs_data
@pytest.mark.parametrize(("name", "counts"), [
    ("cisi", {"docs": 1460, "queries": 112, "judged_queries": 76, "qrels": 3114}),
    ("medline", {"docs": 1033, "queries": 30, "judged_queries": 30, "qrels": 696}),
    ("adi", {"docs": 82, "queries": 35, "judged_queries": 35, "qrels": 170}),
])
def test_the_staged_classic_collections_have_their_published_counts(
        name: str, counts: dict[str, int]) -> None:
    dataset = registry.load_checked(registry.DATASETS[name], registry.Sources(data=DATA))
    assert dataset.counts() == counts
    assert all(d.doc_id == str(int(d.doc_id)) for d in dataset.docs)
    judged_docs = {d for docs in dataset.qrels.values() for d in docs}
    assert judged_docs <= {d.doc_id for d in dataset.docs}


@needs_data
def test_sampled_items_of_the_staged_cisi_collection() -> None:
    dataset = registry.load_checked(registry.DATASETS["cisi"], registry.Sources(data=DATA))
    first = dataset.docs[0]
    assert first.title == "18 Editions of the Dewey Decimal Classifications"
    assert first.text.startswith("The present study is a history of the DEWEY Decimal")
    assert dataset.queries["1"].startswith("What problems and concerns are there")
    assert dataset.qrels["1"]["28"] == 1


def test_a_file_with_the_wrong_checksum_is_an_integrity_error(tmp_path: Path) -> None:
    path = tmp_path / "adi.tar.gz"
    path.write_bytes(b"not the original")
    with pytest.raises(IntegrityError, match="does not match its recorded checksums"):
        verify_file(path, MANIFEST["adi/adi.tar.gz"])
    spec = FileSpec(size=16, sha256="0" * 64)
    with pytest.raises(IntegrityError, match="sha256"):
        verify_file(path, spec)


def test_a_tampered_mirror_refuses_to_load_the_dataset(tmp_path: Path) -> None:
    (tmp_path / "adi").mkdir()
    _tarball(tmp_path / "adi" / "adi.tar.gz", {"ADI.ALL": "", "ADI.QRY": "", "ADI.REL": ""})
    with pytest.raises(IntegrityError):
        registry.load_checked(registry.DATASETS["adi"], registry.Sources(data=tmp_path))


def test_a_missing_mirror_file_says_how_to_stage_it(tmp_path: Path) -> None:
    with pytest.raises(IntegrityError, match="README"):
        registry.load_checked(registry.DATASETS["medline"], registry.Sources(data=tmp_path))
