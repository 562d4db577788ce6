"""Collections through ir_datasets, offline from a cache pre-seeded from a local mirror.

ir_datasets (MacAvaney et al., SIGIR 2021) downloads each collection's source
files into ``$IR_DATASETS_HOME`` and uses any file already present there
without re-checking it. groundkit gives it a cache of its own
(``<repo>/.cache/ir_datasets`` unless told otherwise) and, before loading,
*seeds* that cache from the local data mirror (:func:`checksums.data_dir`):
each seed copies verified files (md5 and sha256 from the mirror's READMEs) to
the cache path ir_datasets 0.6.3 reads, so no network is needed. A cache file
that differs from its verified source is rewritten; a mismatching source is an
:class:`~groundkit.errors.IntegrityError`. Datasets without a seed, or whose
mirror files are absent, are left to ir_datasets, which downloads them when
online (``offline=True`` makes that an error instead).

``IR_DATASETS_HOME`` must be set before ir_datasets is first imported (its
dataset registry fixes paths at import), so :func:`load` sets it and refuses
to run in a process that already imported ir_datasets with another home.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundkit.errors import IntegrityError, MissingDependencyError, UsageError

from .checksums import MANIFEST, REPO, data_dir, verify_file
from .dataset import Dataset, Doc

DEFAULT_CACHE = REPO / ".cache" / "ir_datasets"


@dataclass(frozen=True, slots=True)
class SeedFile:
    """Copy mirror file ``source`` (a manifest path) to ``target`` in the cache, plus ``suffix``."""

    target: str
    source: str
    suffix: bytes = b""


SEEDS: dict[str, tuple[SeedFile, ...]] = {
    "cranfield": (SeedFile("cranfield/cran.tar.gz", "cranfield/cran.tar.gz"),),
    # ir_datasets caches the three npl.tar.gz members; the mirror's doc-text lacks the
    # final newline the original has (see vaswani/README.md in the mirror).
    "vaswani": (SeedFile("vaswani/docs.txt", "vaswani/npl/doc-text", b"\n"),
                SeedFile("vaswani/queries.txt", "vaswani/npl/query-text"),
                SeedFile("vaswani/qrels.txt", "vaswani/npl/rlv-ass")),
    "beir/nfcorpus": (SeedFile("beir/nfcorpus/source.zip", "beir-nfcorpus/nfcorpus.zip"),),
}
"""ir_datasets id prefix -> the cache files that make it loadable offline."""


def seeds_for(dataset_id: str) -> tuple[SeedFile, ...]:
    for prefix, seeds in SEEDS.items():
        if dataset_id == prefix or dataset_id.startswith(prefix + "/"):
            return seeds
    return ()


def seed(dataset_id: str, cache: Path, data: str | os.PathLike[str] | None = None,
         *, offline: bool = False) -> list[str]:
    """Make ``dataset_id`` loadable from ``cache`` without network; returns the files written."""
    mirror = data_dir(data)
    written = []
    seeds = seeds_for(dataset_id)
    if offline and not seeds:
        raise UsageError(f"ir_datasets id {dataset_id!r} has no offline seed; known: "
                         f"{', '.join(SEEDS)}; pass --online to let ir_datasets download it")
    for item in seeds:
        source = mirror / item.source
        if not source.is_file():
            if offline:
                raise IntegrityError(f"{source} is missing, so {dataset_id!r} cannot load offline;"
                                     f" stage it in {mirror} as its README describes")
            continue
        verify_file(source, MANIFEST[item.source])
        data_bytes = source.read_bytes() + item.suffix
        target = cache / item.target
        if target.is_file() and _sha256(target.read_bytes()) == _sha256(data_bytes):
            continue
        _write_atomic(target, data_bytes)
        written.append(item.target)
    return written


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _import_irds(cache: Path) -> Any:
    """ir_datasets imported with ``IR_DATASETS_HOME = cache`` (or an error saying why not)."""
    wanted = str(cache.resolve())
    if "ir_datasets" in sys.modules:
        current = os.environ.get("IR_DATASETS_HOME", "")
        if current and Path(current).resolve() == Path(wanted):
            return sys.modules["ir_datasets"]
        raise UsageError(f"ir_datasets was already imported with IR_DATASETS_HOME={current!r}; "
                         f"load external collections in a fresh process (cache {wanted})")
    os.environ["IR_DATASETS_HOME"] = wanted
    cache.mkdir(parents=True, exist_ok=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import ir_datasets
    except ImportError as exc:
        raise MissingDependencyError("ir_datasets", "evals", "loading by ir_datasets id") from exc
    return ir_datasets


def load(
    dataset_id: str, *, cache: str | os.PathLike[str] | None = None,
    data: str | os.PathLike[str] | None = None, offline: bool = False,
    grades: Mapping[int, int] | None = None, name: str | None = None,
) -> Dataset:
    """Load an ir_datasets id (``cranfield``, ``vaswani``, ``beir/nfcorpus/test``) as a Dataset.

    ``grades`` maps raw relevance codes to gains (unlisted codes keep their value).
    """
    home = Path(cache) if cache is not None else DEFAULT_CACHE
    seed(dataset_id, home, data, offline=offline)
    irds = _import_irds(home)
    try:
        ds = irds.load(dataset_id)
    except KeyError:
        raise UsageError(f"ir_datasets has no dataset {dataset_id!r}") from None
    remap: Callable[[int], int] = (lambda r: int(grades.get(r, r))) if grades else int
    try:
        docs = tuple(Doc(doc_id=d.doc_id, title=getattr(d, "title", "") or "", text=d.text or "")
                     for d in ds.docs_iter())
        queries = {q.query_id: q.text for q in ds.queries_iter()}
        qrels: dict[str, dict[str, int]] = {}
        for r in ds.qrels_iter():
            qrels.setdefault(r.query_id, {})[r.doc_id] = remap(r.relevance)
    except OSError as exc:  # ir_datasets' download errors are IOErrors
        raise IntegrityError(f"ir_datasets could not provide {dataset_id!r}: {exc}") from exc
    source = {"format": "ir_datasets", "id": dataset_id, "ir_datasets_home": str(home),
              "seeded_from": str(data_dir(data)), "seeded_files": [s.target for s in
                                                                   seeds_for(dataset_id)]}
    return Dataset(name=name or dataset_id.replace("/", "-"), docs=docs, queries=queries,
                   qrels=qrels, source=source)
