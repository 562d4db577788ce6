"""Scanned pages and hostile images, made at test time (none is checked in).

A *scan* here is a real text PDF page drawn by PDFium and saved by Pillow as an
image-only PDF (no text layer: what a scanner's PDF is). The hostile files are built
byte by byte: a PNG whose header claims 10^10 pixels, truncated PNG and JPEG files, a TIFF
and a PDF with more pages than OCR reads, and a PDF page larger than OCR draws.
"""

from __future__ import annotations

import struct
import zlib
from io import BytesIO
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pdf"
R_INTRO = FIXTURES / "r-intro-p2-p9-11.pdf"
"""Four pages of An Introduction to R (Debian's r-doc-pdf): prose, a table of contents."""


def page_image(source: Path, index: int, dpi: int) -> object:
    """Page ``index`` of ``source`` drawn at ``dpi`` in grayscale (a PIL image)."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(source)
    try:
        return pdf[index].render(scale=dpi / 72, grayscale=True).to_pil()
    finally:
        pdf.close()


def scanned_pdf(source: Path = R_INTRO, pages: tuple[int, ...] = (0,), dpi: int = 200) -> bytes:
    """The given pages of ``source`` as an image-only PDF, each image at ``dpi`` (the page
    keeps its size in points)."""
    images = [page_image(source, index, dpi) for index in pages]
    out = BytesIO()
    first, *rest = images
    first.save(out, "PDF", resolution=dpi, save_all=True, append_images=rest)  # type: ignore[attr-defined]
    return out.getvalue()


def image_file(source: Path = R_INTRO, index: int = 0, dpi: int = 200,
               fmt: str = "PNG") -> bytes:
    """Page ``index`` of ``source`` as a PNG, JPEG or TIFF file declaring ``dpi``."""
    out = BytesIO()
    page_image(source, index, dpi).save(out, fmt, dpi=(dpi, dpi))  # type: ignore[attr-defined]
    return out.getvalue()


def _chunk(kind: bytes, body: bytes) -> bytes:
    return (struct.pack(">I", len(body)) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))


def png_bomb(width: int = 100_000, height: int = 100_000) -> bytes:
    """A small PNG whose header claims ``width`` x ``height`` 8-bit gray pixels."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(b"\0" * 1024)) + _chunk(b"IEND", b""))


def truncated(data: bytes, keep: float = 0.5) -> bytes:
    """The first ``keep`` of ``data``: a download cut short."""
    return data[: int(len(data) * keep)]


def many_frame_tiff(frames: int) -> bytes:
    """A TIFF of ``frames`` tiny blank pages."""
    from PIL import Image

    images = [Image.new("L", (8, 8), 255) for _ in range(frames)]
    out = BytesIO()
    images[0].save(out, "TIFF", save_all=True, append_images=images[1:])
    return out.getvalue()


def image_pages_pdf(count: int, width: float = 200, height: float = 200) -> bytes:
    """A PDF of ``count`` pages of ``width`` x ``height`` points, each holding a tiny image
    and no text (a scan, as far as the PDF extractor can tell)."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument.new()
    for _ in range(count):
        page = pdf.new_page(width, height)
        image = pdfium.PdfImage.new(pdf)
        image.set_bitmap(pdfium.PdfBitmap.new_native(4, 4, pdfium.raw.FPDFBitmap_BGR))
        image.set_matrix(pdfium.PdfMatrix().scale(10, 10))
        page.insert_obj(image)
        page.gen_content()
    out = BytesIO()
    pdf.save(out)
    return out.getvalue()


def mixed_pdf(text_page: int = 0, scanned_page: int = 1) -> bytes:
    """Page ``text_page`` of the R manual as it is (a text layer) followed by page
    ``scanned_page`` as a scan: a PDF only partly scanned."""
    import pypdfium2 as pdfium

    out = pdfium.PdfDocument.new()
    out.import_pages(pdfium.PdfDocument(R_INTRO), [text_page])
    out.import_pages(pdfium.PdfDocument(scanned_pdf(pages=(scanned_page,))), [0])
    buffer = BytesIO()
    out.save(buffer)
    return buffer.getvalue()


def upside_down_scan(source: Path = R_INTRO, index: int = 0, dpi: int = 200) -> bytes:
    """Page ``index`` of ``source`` as a scan whose image is stored upside down, with
    ``/Rotate 180`` so that it is shown upright (as a scanner fed the wrong way round
    and corrected by a viewer writes it)."""
    import pypdfium2 as pdfium

    width, height = pdfium.PdfDocument(source)[index].get_size()
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(width, height)
    image = pdfium.PdfImage.new(pdf)
    image.set_bitmap(pdfium.PdfBitmap.from_pil(page_image(source, index, dpi)))
    image.set_matrix(pdfium.PdfMatrix().scale(width, height).rotate(180)
                     .translate(width, height))
    page.insert_obj(image)
    page.gen_content()
    page.set_rotation(180)
    out = BytesIO()
    pdf.save(out)
    return out.getvalue()
