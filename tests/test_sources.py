from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.sources import (
    Candidate,
    DecodeError,
    Skipped,
    decode_bytes,
    discover,
    is_within,
    lies_under,
)


def test_utf8_without_bom_decodes_exactly_keeping_every_line_ending() -> None:
    d = decode_bytes("a\r\nb\rc\nd é".encode())
    assert (d.text, d.encoding, d.bom_len) == ("a\r\nb\rc\nd é", "utf-8", 0)


def test_a_utf8_bom_is_stripped_from_the_text_and_remembered() -> None:
    d = decode_bytes(b"\xef\xbb\xbfhi")
    assert (d.text, d.encoding, d.bom_len) == ("hi", "utf-8", 3)


@pytest.mark.parametrize("codec,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_utf16_with_a_bom_decodes(codec: str, bom: bytes) -> None:
    text = "Grüße 😀\r\nline"
    d = decode_bytes(bom + text.encode(codec))
    assert (d.text, d.encoding, d.bom_len) == (text, codec, 2)


@pytest.mark.parametrize(
    "data,reason",
    [(b"abc\x00def", "binary"), (b"caf\xe9", "not UTF-8"),
     (b"\xff\xfe\x00\x00x\x00\x00\x00", "UTF-32"), (b"\xff\xfe\x00\xd8", "invalid utf-16")],
)
def test_undecodable_bytes_are_refused_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(DecodeError, match=reason):
        decode_bytes(data)


def _walk(root: Path, **kw: object) -> tuple[list[str], dict[str, str]]:
    found, skipped = [], {}
    for item in discover(root, **kw):  # type: ignore[arg-type]
        if isinstance(item, Candidate):
            found.append(item.relpath)
        else:
            assert isinstance(item, Skipped)
            skipped[item.path] = item.reason
    return found, skipped


def test_discovery_takes_text_and_code_and_skips_vcs_and_dependency_folders(
    make_tree: TreeMaker,
) -> None:
    root = make_tree({
        "a.md": "x", "b/c.py": "x", "d.png": b"\x89PNG", ".git/config.txt": "x",
        "node_modules/m/index.js": "x", ".venv/lib/x.py": "x", "docs/e.rst": "x",
    })
    found, skipped = _walk(root)
    assert found == ["a.md", "b/c.py", "docs/e.rst"] and skipped == {}


def test_include_and_exclude_globs_are_honoured(make_tree: TreeMaker) -> None:
    root = make_tree({"a.md": "x", "b.txt": "x", "drafts/c.md": "x"})
    found, _ = _walk(root, include=("*.md",), exclude=("drafts/",))
    assert found == ["a.md"]


def test_symlinks_out_of_the_root_are_skipped_and_inside_ones_followed(
    make_tree: TreeMaker, tmp_path: Path,
) -> None:
    outside = make_tree({"secret.md": "x"})
    root = make_tree({"a.md": "x", "sub/b.md": "x"})
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "leakdir").symlink_to(outside)
    (root / "alias.md").symlink_to(root / "a.md")
    found, skipped = _walk(root)
    assert found == ["a.md", "alias.md", "sub/b.md"]
    assert set(skipped) == {"leak.md", "leakdir"}
    assert all("outside" in r for r in skipped.values())


def test_a_symlink_loop_cannot_hang_discovery(make_tree: TreeMaker) -> None:
    root = make_tree({"a/b.md": "x"})
    (root / "a" / "loop").symlink_to(root / "a")
    (root / "up").symlink_to(root)
    found, _ = _walk(root)
    assert "a/b.md" in found and len(found) <= 3


def test_fifos_and_oversized_files_are_skipped_with_reasons(make_tree: TreeMaker) -> None:
    root = make_tree({"big.md": "x" * 100, "ok.md": "x"})
    os.mkfifo(root / "pipe.md")
    found, skipped = _walk(root, max_bytes=50)
    assert found == ["ok.md"]
    assert "too large" in skipped["big.md"] and "FIFO" in skipped["pipe.md"]


def test_containment_is_component_wise_not_a_string_prefix(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root-evil").mkdir()
    assert is_within(tmp_path / "root" / "x", tmp_path / "root")
    assert not is_within(tmp_path / "root-evil" / "x", tmp_path / "root")
    assert not is_within(tmp_path / "root" / ".." / "root-evil", tmp_path / "root")
    assert lies_under("/data/root", "/data/root") and lies_under("/data/root/a/b", "/data/root")
    assert not lies_under("/data/root-evil/a", "/data/root") and lies_under("/etc", "/")
