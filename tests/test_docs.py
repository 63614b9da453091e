"""The documentation builds with warnings as errors and agrees with the README."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    for page in ("index.html", "methodology/index.html", "lcs/index.html", "asv/index.html",
                 "troubleshooting/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def _bash_blocks(text: str) -> list[str]:
    return [line.strip() for block in re.findall(r"```bash\n(.*?)```", text, re.S) for line in block.splitlines()]


def test_getting_started_has_the_readme_commands():
    readme = _bash_blocks((ROOT / "README.md").read_text())
    index = _bash_blocks((ROOT / "docs" / "index.md").read_text())
    assert readme and all(cmd in index for cmd in readme), (readme, index)


def test_every_docs_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert pages and all(f": {name}" in nav for name in pages), pages


def test_documented_commands_exist():
    """Every `launchbench X` the docs mention is a real subcommand."""
    from launchbench.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    known = set(sub.choices)
    mentioned = set()
    for page in (ROOT / "docs").glob("*.md"):
        mentioned |= set(re.findall(r"`launchbench ([a-z][a-z-]+)", page.read_text()))
        for cmd in _bash_blocks(page.read_text()):
            mentioned |= set(re.findall(r"^launchbench ([a-z][a-z-]+)", cmd))
    assert mentioned, "docs mention no launchbench subcommand"
    assert mentioned <= known, sorted(mentioned - known)


def test_the_docs_launchbench_imports_work():
    """Every ``from launchbench... import`` / ``import launchbench...`` line of a Python block in
    the docs runs (docs/publishing.md once showed ``from launchbench import report, schema``)."""
    root = Path(__file__).resolve().parent.parent
    lines = []
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for block in re.findall(r"```python\n(.*?)```", path.read_text(), re.S):
            lines += [(path.name, ln.strip()) for ln in block.splitlines()
                      if re.match(r"\s*(from launchbench\S* import |import launchbench)", ln)]
    assert lines, "no launchbench import in the docs' Python blocks: the check checks nothing"
    for name, line in lines:
        proc = subprocess.run([sys.executable, "-c", line], capture_output=True, text=True, cwd=root)
        assert proc.returncode == 0, f"{name}: {line}: {proc.stderr.strip().splitlines()[-1:]}"


def test_ci_runs_the_readme_test_command():
    """.ci/run runs the README's test command itself (on Python 3.12), not a variant of it."""
    tests = [cmd for cmd in _bash_blocks((ROOT / "README.md").read_text()) if "-m pytest" in cmd]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert len(tests) == 1 and tests[0] in ci, (tests, [line for line in ci if "pytest" in line])
