"""OCR: scanned PDF pages and image files read by Tesseract, with a source map (ADR 0022).

What is read
    A PDF with pages that hold images but no text (wholly scanned: the PDF extractor's
    "no text layer: scanned?"; partly: its view's ``scanned_pages``) is read here instead
    (:func:`groundkit.extract.read` turns to it), and so are PNG, JPEG and TIFF files
    that an include glob asks for (``--include '*.png'``: not in the default globs). A
    PDF page with a text layer is read as the PDF extractor reads it; one without is
    drawn by PDFium at :data:`OPTIONS`' dpi (300) in grayscale and recognised. An image
    file's frames (a multi-page TIFF) are its pages, read at their own resolution.

The text view
    Tesseract's words (its TSV output) grouped as it groups them: the words of a line
    joined by one space, lines by ``\\n``, paragraphs by a blank line, pages by
    :data:`~groundkit.extract.pdf.PAGE_SEPARATOR`. Control characters become U+FFFD, as
    in a PDF's text. Words Tesseract gives no confidence to (``-1``) are layout, not text.

The source map
    One :class:`~groundkit.extract.base.Segment` per line: ``page`` (1-based),
    ``page_offset`` (where the line starts in that page's OCR text) and ``bbox``, the
    union of the line's word boxes in PDF points (left, bottom, right, top of the page's
    user space, mapped back through PDFium's own device-to-page transform, so rotated and
    cropped pages map right; for an image file, pixels at its declared dpi, else 72, with
    the origin at its bottom left). :attr:`~groundkit.extract.base.TextView.ocr_pages`
    holds each page's mean word confidence (0-100), which every locator of the page
    carries (``ocr_confidence``): a citation of OCR text says so.

Identity
    ``ocr/tesseract=VERSION;LANG=sha256:DIGEST;dpi=300;psm=3;oem=1;v1``: the engine, the
    checksum of the language data it loaded, and the options. Tesseract is deterministic
    for those (tesserocr's wheel builds libtesseract without OpenMP: one thread), so
    verification re-OCRs a page and compares as for any view.

Bounds
    OCR runs in the extraction sandbox like every extractor, with :data:`OCR_LIMITS`
    (more time and memory than text extraction, fewer pages). A page or image of more
    than :data:`MAX_PIXELS` pixels (a decompression bomb, a 200-inch page) is refused
    before anything is drawn or decoded; a truncated or undecodable image, a TIFF of more
    frames than the page limit, and a file that is no PNG, JPEG, TIFF or PDF each raise
    :class:`~groundkit.extract.base.ExtractError` with a one-line reason.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from io import BytesIO
from pathlib import Path
from typing import IO, Any

from ..errors import MissingDependencyError
from . import declared, furniture
from .base import DEFAULT_LIMITS, ExtractError, Heading, Limits, Segment, TextView
from .pdf import _find_title, _info, _outline, _page_labels, _read_page
from .pdf import _Page as _TextPage

ALGORITHM = "v1"
"""The view's own version: bump it whenever this module would make other text or map."""

Box = tuple[float, float, float, float]


@dataclass(frozen=True, slots=True)
class Options:
    """What Tesseract is run with: part of the extractor's identity."""

    lang: str = "eng"
    dpi: int = 300
    """PDF pages are drawn at this resolution."""
    psm: int = 3
    """Page segmentation mode: 3, fully automatic (no orientation detection)."""
    oem: int = 1
    """Engine mode: 1, the LSTM recogniser only."""


OPTIONS = Options()
MAX_PIXELS = 40_000_000
"""The most pixels of one page drawn or one image decoded: an A4 page at 600 dpi is 34.8
million; a decompression bomb's header claims billions."""
OCR_LIMITS = replace(DEFAULT_LIMITS, timeout_s=600.0, memory_bytes=768 << 20, max_pages=200)
"""Limits of one OCR extraction: about 3 s a page at 300 dpi on one core, so 200 pages fit
10 minutes; Tesseract and a 300-dpi page need more than text extraction's 256 MiB."""
TESSDATA_DIRS = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata",
                 "/usr/share/tessdata")
"""Where Debian's (and other distributions') language packages put their data, searched
after ``$TESSDATA_PREFIX``."""
_IMAGE_FORMATS = ("PNG", "JPEG", "TIFF")
_IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*")
"""How PNG, JPEG and (little- and big-endian) TIFF files begin."""
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_PAGE_SEPARATOR = "\n\n"


def tessdata_dir(lang: str = OPTIONS.lang) -> Path | None:
    """The folder holding ``LANG.traineddata``: ``$TESSDATA_PREFIX`` first, then the
    distributions' folders; ``None`` when the language is not installed."""
    candidates = [os.environ.get("TESSDATA_PREFIX", ""), *TESSDATA_DIRS]
    for folder in candidates:
        if folder and (Path(folder) / f"{lang}.traineddata").is_file():
            return Path(folder)
    return None


@cache
def _data_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class OcrExtractor:
    """Tesseract (through tesserocr) over scanned PDF pages and image files."""

    name = "ocr"
    library = "tesserocr"
    extra = "ocr"
    suffixes = ("*.png", "*.jpg", "*.jpeg", "*.tif", "*.tiff")

    def __init__(self, options: Options = OPTIONS) -> None:
        self.options = options

    def available(self) -> bool:
        return (importlib.util.find_spec("tesserocr") is not None
                and importlib.util.find_spec("pypdfium2") is not None
                and tessdata_dir(self.options.lang) is not None)

    def identity(self) -> str:
        folder = tessdata_dir(self.options.lang)
        if folder is None or not self.available():
            raise MissingDependencyError(self.library, self.extra, "OCR")
        import tesserocr

        version = tesserocr.tesseract_version().split()[1]
        digest = _data_digest(folder / f"{self.options.lang}.traineddata")
        o = self.options
        return (f"ocr/tesseract={version};{o.lang}=sha256:{digest[:16]};dpi={o.dpi};"
                f"psm={o.psm};oem={o.oem};{ALGORITHM}")

    def extract(self, data: bytes, limits: Limits) -> TextView:
        if not data:
            raise ExtractError("empty file (0 bytes): not an image or PDF")
        folder = tessdata_dir(self.options.lang)
        if folder is None:
            raise ExtractError(f"Tesseract language data {self.options.lang!r} not installed")
        if data[:1024].lstrip(b"\0\t\n\r ").startswith(b"%PDF-"):
            return _read_pages("pdf", _pdf_pages(data, self.options.dpi, limits), folder,
                               self.options, limits, _pdf_facts(data))
        if not data.startswith(_IMAGE_MAGIC):  # before Tesseract loads its model
            raise ExtractError("not a PNG, JPEG or TIFF image")
        return _read_pages("image", _image_pages(data, limits), folder, self.options, limits,
                           None)


EXTRACTORS = {"ocr": OcrExtractor()}


@dataclass(frozen=True, slots=True)
class _Picture:
    """One page to recognise: its image and the map from pixel boxes to PDF points."""

    image: Any
    to_points: Callable[[int, int, int, int], Box]


# long: one pass over the pages with Tesseract open, then the view from what it read
def _read_pages(fmt: str, pages: Iterator[_Picture | _TextPage], folder: Path,
                options: Options, limits: Limits, facts: _PdfFacts | None) -> TextView:
    """The view of a file's pages: a picture recognised by Tesseract, a PDF page with a
    text layer as the PDF extractor reads it."""
    import tesserocr

    texts: list[str] = []
    segments: list[Segment] = []
    confidences: list[tuple[int, float]] = []
    laid_out: list[furniture.PageLines] = []
    starts: dict[int, int] = {}
    size = 0
    with tempfile.TemporaryFile() as diagnostics:
        with _quiet_stderr(diagnostics), tesserocr.PyTessBaseAPI(
                path=str(folder), lang=options.lang, psm=options.psm, oem=options.oem) as api:
            for number, item in enumerate(pages, start=1):
                if isinstance(item, _Picture):
                    api.SetImage(item.image)
                    read = _page(api.GetTSVText(0), item.to_points)
                    if read is None:
                        continue
                    text, lines, confidence = read
                    confidences.append((number, confidence))
                else:
                    text, lines = item.text, list(item.lines)
                if texts:
                    size += len(_PAGE_SEPARATOR)
                starts[number] = size
                segments.extend(Segment(size + start, size + end, page=number, page_offset=start,
                                        bbox=box) for start, end, box in lines)
                laid_out.append(furniture.PageLines(size, text, lines))
                size += len(text)
                if size > limits.max_view_chars:
                    raise ExtractError(f"OCR text longer than the limit of {limits.max_view_chars} "
                                       "characters")
                texts.append(text)
        if not texts and _allocations_failed(diagnostics):
            raise ExtractError(f"extraction ran out of memory (limit {limits.memory_bytes >> 20} "
                               "MiB)")
        if not texts:
            raise ExtractError("OCR found no text on any page")
    if facts is None:
        return TextView(_PAGE_SEPARATOR.join(texts), fmt, tuple(segments), ocr_pages=tuple(
            confidences))
    by_page = dict(zip(starts, texts, strict=True))
    headings = sorted((Heading(starts[index + 1] + _find_title(by_page[index + 1], title),
                               level, title)
                       for level, title, index in facts.outline if index + 1 in starts),
                      key=lambda h: h.start)
    return TextView(_PAGE_SEPARATOR.join(texts), fmt, tuple(segments), tuple(headings),
                    facts.status, furniture.pdf_runs(laid_out),
                    tuple((n, label) for n, label in facts.labels if n in starts),
                    ocr_pages=tuple(confidences))


@contextmanager
def _quiet_stderr(sink: IO[bytes]) -> Iterator[None]:
    """File descriptor 2 pointed at ``sink`` (an unlinked temporary file, for
    :func:`_allocations_failed`) while Tesseract runs, then restored.

    Tesseract and Leptonica write their diagnostics straight to it: a page at the memory
    limit made Leptonica print 800,000 lines of failed allocations. What went wrong
    reaches the caller as a one-line reason instead."""
    saved = os.dup(2)
    try:
        os.dup2(sink.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


_ALLOCATION = re.compile(rb"alloc|Cannot allocate|pixCreate", re.I)


def _allocations_failed(diagnostics: IO[bytes]) -> bool:
    """Whether what Tesseract and Leptonica wrote (its first 64 KiB) says an allocation
    failed: a page past the memory limit then reads as no text, which would be the wrong
    reason."""
    diagnostics.seek(0)
    return bool(_ALLOCATION.search(diagnostics.read(64 * 1024)))


def _page(tsv: str, to_points: Callable[[int, int, int, int], Box],
          ) -> tuple[str, list[tuple[int, int, Box | None]], float] | None:
    """A page's text, its lines ``(start, end, box)`` and mean word confidence, from
    Tesseract's TSV; ``None`` for a page without words."""
    rows: dict[tuple[int, int, int], list[tuple[str, float, tuple[int, int, int, int]]]] = {}
    for row in tsv.splitlines():
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue
        confidence = float(cells[10])
        if confidence < 0:
            continue
        left, top, width, height = (int(c) for c in cells[6:10])
        key = (int(cells[2]), int(cells[3]), int(cells[4]))
        word = _CONTROL.sub("\ufffd", cells[11].strip())
        rows.setdefault(key, []).append((word, confidence, (left, top, left + width,
                                                            top + height)))
    if not rows:
        return None
    parts: list[str] = []
    lines: list[tuple[int, int, Box | None]] = []
    at, previous = 0, None
    for key, words in rows.items():  # Tesseract's reading order
        if previous is not None:
            joint = "\n" if key[:2] == previous[:2] else "\n\n"
            parts.append(joint)
            at += len(joint)
        line = " ".join(word for word, _, _ in words)
        boxes = [to_points(*box) for _, _, box in words]
        lines.append((at, at + len(line), (min(b[0] for b in boxes), min(b[1] for b in boxes),
                                           max(b[2] for b in boxes), max(b[3] for b in boxes))))
        parts.append(line)
        at += len(line)
        previous = key
    scores = [confidence for words in rows.values() for _, confidence, _ in words]
    return "".join(parts), lines, round(sum(scores) / len(scores), 1)


def _pdf_pages(data: bytes, dpi: int, limits: Limits) -> Iterator[_Picture | _TextPage]:
    """Each page of the PDF: its text layer where it has one (as the PDF extractor reads
    it), else drawn at ``dpi`` in grayscale, its pixels mapped back to the page's user
    space by PDFium (rotation and crop box included)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from .pdf import _OPEN_ERRORS

    handle = raw.FPDF_LoadMemDocument64(data, len(data), None)
    if not handle:
        raise ExtractError(_OPEN_ERRORS.get(raw.FPDF_GetLastError(), _OPEN_ERRORS[1]))
    pdf = pdfium.PdfDocument(handle)
    try:
        count = len(pdf)
        if count > DEFAULT_LIMITS.max_pages:
            raise ExtractError(f"PDF has {count} pages, more than the limit of "
                               f"{DEFAULT_LIMITS.max_pages}")
        layers = [_read_page(pdf, index) for index in range(count)]
        blank = sum(not layer.text.strip() for layer in layers)
        if blank > limits.max_pages:
            raise ExtractError(f"PDF pages without text: {blank}, more than OCR's limit of "
                               f"{limits.max_pages}")
        scale = dpi / 72
        for index, layer in enumerate(layers):
            if layer.text.strip():
                yield layer
                continue
            page = pdf[index]
            try:
                width, height = (math.ceil(side * scale) for side in page.get_size())
                if width * height > MAX_PIXELS:
                    raise ExtractError(f"page {index + 1} would be {width}x{height} pixels at "
                                       f"{dpi} dpi, more than the limit of {MAX_PIXELS:,}")
                image = page.render(scale=scale, grayscale=True).to_pil()
                yield _Picture(image, _device_to_page(raw, page, image.width, image.height))
            finally:
                page.close()
    finally:
        pdf.close()


def _device_to_page(raw: Any, page: Any, width: int, height: int,
                    ) -> Callable[[int, int, int, int], Box]:
    def to_points(left: int, top: int, right: int, bottom: int) -> Box:
        xs, ys = [], []
        for dx, dy in ((left, top), (right, bottom)):
            x, y = ctypes.c_double(), ctypes.c_double()
            raw.FPDF_DeviceToPage(page, 0, 0, width, height, 0, dx, dy, x, y)
            xs.append(x.value)
            ys.append(y.value)
        return (round(min(xs), 2), round(min(ys), 2), round(max(xs), 2), round(max(ys), 2))

    return to_points


@dataclass(frozen=True, slots=True)
class _PdfFacts:
    """What a PDF says besides its pages: its standing, page labels and outline."""

    status: str
    labels: tuple[tuple[int, str], ...]
    outline: tuple[tuple[int, str, int], ...]


def _pdf_facts(data: bytes) -> _PdfFacts:
    """The PDF's declared standing, page labels and outline, read as the PDF extractor
    reads them."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError:
        return _PdfFacts("", (), ())
    try:
        return _PdfFacts(declared.from_pdf(_info(pdf)),
                         _page_labels(pdf, list(range(1, len(pdf) + 1))), tuple(_outline(pdf)))
    finally:
        pdf.close()


def _image_pages(data: bytes, limits: Limits) -> Iterator[_Picture]:
    """Each frame of a PNG, JPEG or TIFF, its size checked before it is decoded."""
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(BytesIO(data), formats=_IMAGE_FORMATS)
    except UnidentifiedImageError:
        raise ExtractError("not a PNG, JPEG or TIFF image") from None
    except Image.DecompressionBombError:
        raise ExtractError(f"image declares more than {MAX_PIXELS:,} pixels") from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise ExtractError(f"unreadable image: {_one_line(exc)}") from None
    with image:
        frames = getattr(image, "n_frames", 1)
        if frames > limits.max_pages:
            raise ExtractError(f"image has {frames} frames, more than OCR's limit of "
                               f"{limits.max_pages}")
        for index in range(frames):
            try:
                image.seek(index)
            except (OSError, ValueError, SyntaxError, EOFError) as exc:
                raise ExtractError(f"corrupt image (frame {index + 1}): {_one_line(exc)}"
                                   ) from None
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise ExtractError(f"image is {width}x{height} pixels, more than the limit "
                                   f"of {MAX_PIXELS:,}")
            try:
                picture = image.convert("L")
            except (OSError, ValueError, SyntaxError, EOFError) as exc:
                raise ExtractError(f"truncated or corrupt image (frame {index + 1}): "
                                   f"{_one_line(exc)}") from None
            dpi = _dpi(image.info.get("dpi"))
            yield _Picture(picture, _pixels_to_points(height, 72 / dpi))


def _dpi(declared: Any) -> float:
    """The image's declared horizontal resolution, if it is a plausible one, else 72."""
    try:
        value = float(declared[0])
    except (TypeError, ValueError, IndexError):
        return 72.0
    return value if 10 <= value <= 4800 else 72.0


def _pixels_to_points(height: int, points_per_pixel: float,
                      ) -> Callable[[int, int, int, int], Box]:
    def to_points(left: int, top: int, right: int, bottom: int) -> Box:
        return (round(left * points_per_pixel, 2), round((height - bottom) * points_per_pixel, 2),
                round(right * points_per_pixel, 2), round((height - top) * points_per_pixel, 2))

    return to_points


def _one_line(exc: BaseException) -> str:
    line = " ".join(str(exc).split()) or type(exc).__name__
    return line if len(line) <= 200 else line[:199] + "…"
