"""launchbench.base.atomic: whole files or nothing, shareable modes."""
import os
import stat

import pytest

from launchbench.base.atomic import write_json_atomic, write_text_atomic


def test_replaces_whole_file_and_respects_umask(tmp_path):
    path = tmp_path / "sub" / "r.json"
    old = os.umask(0o022)
    try:
        write_json_atomic(path, {"a": 1})
    finally:
        os.umask(old)
    assert path.read_text() == '{\n "a": 1\n}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert os.listdir(path.parent) == ["r.json"]  # no temp file left behind


def test_unserialisable_document_leaves_the_old_file(tmp_path):
    path = tmp_path / "r.json"
    write_text_atomic(path, "kept\n")
    with pytest.raises(ValueError):
        write_json_atomic(path, {"a": float("nan")})
    assert path.read_text() == "kept\n"
    assert os.listdir(tmp_path) == ["r.json"]
