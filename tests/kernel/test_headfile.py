"""The head file: two checksummed slots, one fdatasync a write, torn writes survived."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hikmah.ledger.chain import GENESIS
from hikmah.ledger.headfile import SLOT, HeadFile
from hikmah.model.errors import LedgerError
from hikmah.model.head import Head

A = Head(seq=5, hash="a" * 64)
B = Head(seq=6, hash="b" * 64)
C = Head(seq=9, hash="c" * 64)


def test_round_trip_and_alternating_slots(tmp_path: Path) -> None:
    path = tmp_path / "head"
    file = HeadFile(path)
    assert file.read() == (None, None)
    file.write(A, None)
    assert HeadFile(path).read() == (A, None)
    file.write(A, B)
    assert HeadFile(path).read() == (A, B)
    file.write(None, None)
    assert HeadFile(path).read() == (Head(seq=0, hash=GENESIS), None)
    assert os.listdir(tmp_path) == ["head"]
    assert path.stat().st_size == 2 * SLOT
    assert path.stat().st_mode & 0o777 == 0o600
    file.close()


def test_a_reopened_file_continues_the_generations(tmp_path: Path) -> None:
    first = HeadFile(tmp_path / "head")
    first.write(A, None)
    first.write(B, None)
    first.close()
    second = HeadFile(tmp_path / "head")
    assert second.read() == (B, None)
    second.write(C, None)
    second.close()
    assert HeadFile(tmp_path / "head").read() == (C, None)


def test_a_torn_slot_falls_back_to_the_other(tmp_path: Path) -> None:
    path = tmp_path / "head"
    file = HeadFile(path)
    file.write(A, None)  # generation 1, slot 1
    file.write(B, None)  # generation 2, slot 0
    file.close()
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF  # tear the newest slot
    path.write_bytes(bytes(data))
    assert HeadFile(path).read() == (A, None)


@pytest.mark.parametrize("data", [b"", bytes(2 * SLOT)])
def test_a_file_no_state_was_ever_written_to_is_no_head(tmp_path: Path, data: bytes) -> None:
    # What an earlier version left when it died between creating the file and its first
    # write (before that write's commit: the ledger is empty then, and a ledger with
    # records beside no head is still reported by verify).
    path = tmp_path / "head"
    path.write_bytes(data)
    assert HeadFile(path).read() == (None, None)
    file = HeadFile(path)
    file.write(A, None)
    file.close()
    assert HeadFile(path).read() == (A, None)


@pytest.mark.parametrize("data", [b"garbage", b"\xff" * (2 * SLOT), b"\0" * SLOT + b"\1"])
def test_no_intact_slot_is_an_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "head"
    path.write_bytes(data)
    with pytest.raises(LedgerError, match="corrupt"):
        HeadFile(path).read()


def test_an_unwritable_place_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LedgerError):
        HeadFile(tmp_path / "missing" / "head").write(A, None)
