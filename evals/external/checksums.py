"""A checksummed manifest of the staged data files and a typed integrity error.

Like ir_datasets' ``etc/downloads.json`` with ``util/hash.py``: every file a
named dataset reads is listed with its size, md5 and sha256 (copied from the
README next to it in the data directory, which records where each file came
from), and :func:`verify` refuses a file that does not match with
:class:`groundkit.errors.IntegrityError` before anything is parsed.

The data directory is ``$GROUNDKIT_DATA``, else ``<repo>/../shared/data``
(:func:`data_dir`). It is read-only: readers stream from it, never copy it
into the repository.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from groundkit.errors import IntegrityError, UsageError

REPO = Path(__file__).resolve().parents[2]
DATA_ENV = "GROUNDKIT_DATA"


@dataclass(frozen=True, slots=True)
class FileSpec:
    """A file's expected size and digests (md5 and/or sha256; at least one)."""

    size: int
    md5: str | None = None
    sha256: str | None = None


MANIFEST: dict[str, FileSpec] = {
    "beir-scifact/corpus.jsonl.gz": FileSpec(
        2752547, "d03a157cdad11201fa313259adb922bf",
        "7062adb7fd2931f40c846cf0215f4b8ba877bac94dc3d334bb9c4d714fb6fc33"),
    "beir-scifact/queries.jsonl": FileSpec(
        209731, "846a4365aec1857489dd3dbc130f2c2e",
        "8ff84a7c903f722981cd8d595c022660140c51867b27608a6d4910db86080313"),
    "beir-scifact/qrels/test.tsv": FileSpec(
        5389, "cd0b61fe12d16a9605897affe40e3f02",
        "0864bb985e0ca2367ba217977e72004d549054b2b06666ed9d4825ac7c21284c"),
    "beir-scifact/qrels/train.tsv": FileSpec(
        14502, "345740844326320ff73e594322b51034",
        "a53f2114831916c096b6c37d9e54da68cef4efdcdbd5ed46533601af972acf1d"),
    "beir-nfcorpus/corpus.jsonl.gz": FileSpec(
        1973458, "a11b8e1ca229064ac692eb72826fe1f4",
        "8a3f1352e679a584b5acf465a0af4edec2505a1e26c7c4583a9c1d7d4434f1d6"),
    "beir-nfcorpus/queries.jsonl": FileSpec(
        441466, "cd7889291e912df1f4466b2c83671b8b",
        "d024e6621b84925d485ae473d316a0c3af31c62c8068a59fb29d22f7613aef2a"),
    "beir-nfcorpus/qrels/test.tsv": FileSpec(
        279572, "572f8f91862455ac735141b5e9b8cc46",
        "f8fba6ef3d4dd9c3a242a8ba4ae38276fc3622fce7dcbae764766d564542fd2a"),
    "beir-nfcorpus/qrels/dev.tsv": FileSpec(
        258218, "a35ae0c9bbad6b28cb0f766e33a7c913",
        "b1d38b5e8f78c4a5820bce2b7ec2db54911d7690dc601e76811846b211180bd8"),
    "beir-nfcorpus/nfcorpus.zip": FileSpec(
        2448432, "a89dba18a62ef92f7d323ec890a0d38d",
        "efe5be03f8c5b86a5870102d0599d227c8c6e2484328e68c6522560385671b0b"),
    "cranfield/cran.tar.gz": FileSpec(
        506960, "1730f7be572d95a5a4b56c59a7b900a5",
        "8c48a8412e4a7e6e0dd5af99c959f8d75fdf88135602adc1a56aa22770652d64"),
    "vaswani/npl/doc-text": FileSpec(
        3231451, "0cd91b2c0a6c951215f0d92ba5f73297",
        "c657448b9c0e7da5be1b8a849aa02db38d63fe4c3faf350806e99f2fc7bf134e"),
    "vaswani/npl/query-text": FileSpec(
        7457, "97985fec54441a49ece652e043c08b57",
        "0f5e9a179334183cc3b04fe24d9bdfc3f656b08330e6798d8df5dc621bf8e6d5"),
    "vaswani/npl/rlv-ass": FileSpec(
        13240, "518a7072519ce6177d517dd69bbf49d0",
        "1af78732abed49055218c1548c27cfa354c5d02a9b6c9cb854b9d0b74fcce24c"),
    "cisi/cisi.tar.gz": FileSpec(
        775144, "87a36dd881ccb91aa46de09de11525c0",
        "bddb284e19369d153dad90770ae897e19221b0bc50e1329b5a702aa56f5e8483"),
    "medline/med.tar.gz": FileSpec(
        375183, "05dec9173d5c695fbf125b5565569f1f",
        "07478afc5370ba3dfa66c8c1994ea56a2341cea8584af619a63eb51c31f26f1e"),
    # Not staged yet: Terrier's English stopword list (terrier-org/terrier-core,
    # modules/core/src/main/resources/stopword-list.txt at commit 3ceec7d8).
    "terrier/stopword-list.txt": FileSpec(
        5230, "83aa2847fd2ea1ec104b700932b6b7a4",
        "e898516899c485739ca1fef24f6b2590ecf95cd06ba22e66587f64b079610999"),
    "adi/adi.tar.gz": FileSpec(
        17307, "b8fc0133e42492f4ae8d4f512aa00b77",
        "68c1867824cbad9e28ce498fafa644d5ac1a7a8a41cde0bffaf402095bbc7aa6"),
}
"""Staged files, relative to :func:`data_dir`, as their READMEs record them."""


def data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The local mirror of the test collections: ``explicit``, ``$GROUNDKIT_DATA`` or default."""
    if explicit is not None:
        return Path(explicit).expanduser().resolve()
    if env := os.environ.get(DATA_ENV):
        return Path(env).expanduser().resolve()
    return (REPO.parent / "shared" / "data").resolve()


def digests(path: Path) -> tuple[int, str, str]:
    """Size, md5 and sha256 of a file, read once in 1 MiB blocks."""
    md5, sha = hashlib.md5(usedforsecurity=False), hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            size += len(block)
            md5.update(block)
            sha.update(block)
    return size, md5.hexdigest(), sha.hexdigest()


def verify_file(path: Path, spec: FileSpec) -> None:
    """Raise :class:`IntegrityError` unless ``path`` has ``spec``'s size and digests."""
    try:
        size, md5, sha = digests(path)
    except FileNotFoundError:
        raise IntegrityError(f"{path} is missing; stage it as its README describes") from None
    except OSError as exc:
        raise IntegrityError(f"{path} is unreadable: {exc.strerror or exc}") from None
    problems = []
    if size != spec.size:
        problems.append(f"size {size} != {spec.size}")
    if spec.md5 and md5 != spec.md5:
        problems.append(f"md5 {md5} != {spec.md5}")
    if spec.sha256 and sha != spec.sha256:
        problems.append(f"sha256 {sha} != {spec.sha256}")
    if problems:
        raise IntegrityError(f"{path} does not match its recorded checksums ({'; '.join(problems)})"
                             "; replace it with the original named in its README")


def verified(relpath: str, data: str | os.PathLike[str] | None = None) -> Path:
    """The path of a manifest file under the data directory, checked against the manifest."""
    spec = MANIFEST.get(relpath)
    if spec is None:
        raise UsageError(f"{relpath!r} is not in the data manifest; known: {', '.join(MANIFEST)}")
    path = data_dir(data) / relpath
    verify_file(path, spec)
    return path
