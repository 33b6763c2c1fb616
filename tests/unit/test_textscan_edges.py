"""Edges of the text scanning the language and opening contracts share (tasks/core/contracts/textscan.py): every
script range at both of its ends, combining marks as letters, the whole `Corruption` of replies with mojibake
and with byte-level BPE symbols (counts, samples, the ones skipped), and the continuation-byte map itself."""

from __future__ import annotations

import pytest

from tasks.core.contracts.textscan import (
    Corruption,
    _continuation_map,
    _is_plausible,
    has_kana,
    is_han_only,
    is_wide,
    letter_weight,
    scan_encoding,
    split_sentences,
)

pytestmark = pytest.mark.unit

WIDE = [0x3040, 0x30FF, 0x3400, 0x9FFF, 0xAC00, 0xD7AF, 0xF900, 0xFAFF]
NARROW = [0x303F, 0x3100, 0x33FF, 0xA000, 0xABFF, 0xD7B0, 0xF8FF, 0xFB00]


@pytest.mark.parametrize(("cp", "wide"), [(c, True) for c in WIDE] + [(c, False) for c in NARROW],
                         ids=[f"{c:04X}" for c in WIDE + NARROW])
def test_each_wide_range_at_both_ends(cp: int, wide: bool) -> None:
    assert is_wide(chr(cp)) is wide


@pytest.mark.parametrize(("text", "kana"), [
    (chr(0x3040), True), (chr(0x30FF), True), ("ア", True), ("ーア", True),
    (chr(0x303F), False), (chr(0x3100), False), ("・ー", False), ("abc", False), ("", False),
])
def test_kana_at_both_ends_and_the_marks_that_are_not_kana(text: str, kana: bool) -> None:
    assert has_kana(text) is kana


@pytest.mark.parametrize(("text", "han"), [
    (chr(0x3400), True), (chr(0x9FFF), True), (chr(0xF900), True), ("漢字。", True),
    (chr(0xA000), False), ("ﬀ", False), ("漢a", False), ("", False), ("123 。", False),
])
def test_han_only_at_both_ends_of_each_range(text: str, han: bool) -> None:
    assert is_han_only(text) is han


@pytest.mark.parametrize(("cp", "plausible"), [
    (0x00A0, True), (0x024F, True), (0x1F300, True), (0x1FAFF, True), (0x009F, False), (0x0250, False),
])
def test_a_plausible_character_at_both_ends_of_a_range(cp: int, plausible: bool) -> None:
    assert _is_plausible(cp) is plausible


def test_combining_marks_weigh_as_letters() -> None:
    assert letter_weight("\u0301") == 1 and letter_weight("\u093e") == 1  # Mn, Mc
    assert letter_weight("नमस्ते") == 6 and letter_weight("日本a") == 7


@pytest.mark.parametrize(("text", "found"), [
    ("à€€ then Ã©tÃ© and Ã¨", Corruption(mojibake=3, replacement=0, c1_controls=0, sample="Ã©")),
    ("»Fuß« und »Spaß«", Corruption(mojibake=0, replacement=0, c1_controls=0, sample="")),
    ("The MĠARR team said helloĠworldĠhowĊareĠyouĊĊfine and more text here",
     Corruption(0, 0, 0, "", bpe_space=3, bpe_newline=3, bpe_sample="id helloĠworldĠho")),
    ("aĠbĠcĠd", Corruption(0, 0, 0, "", bpe_space=3, bpe_newline=0, bpe_sample="aĠbĠcĠd")),
    ("Ġabc dĠeĠfĠg", Corruption(0, 0, 0, "", bpe_space=3, bpe_newline=0, bpe_sample="Ġabc dĠeĠfĠg")),
], ids=["mojibake-after-an-invalid-one", "german", "bpe-after-maltese", "bpe-at-1", "bpe-at-0"])
def test_the_whole_corruption_found(text: str, found: Corruption) -> None:
    assert scan_encoding(text) == found


def test_an_x_at_a_sentences_end_is_kept() -> None:
    assert split_sentences("X marks it. Next one X") == ["X marks it.", "Next one X"]


def test_the_continuation_map_knows_each_byte_in_both_views() -> None:
    cont = _continuation_map()
    assert all(cont[chr(b)] == b for b in range(0x80, 0xC0))
    assert (cont["€"], cont["’"], cont["Ÿ"], cont["¿"]) == (0x80, 0x92, 0x9F, 0xBF)
    assert len(cont) == 64 + 27  # cp1252 names 27 of 0x80..0x9F; 0xA0..0xBF read the same in both
    assert "À" not in cont and "\x7f" not in cont
