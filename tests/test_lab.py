"""The lab's cheap guards (the full check of every committed document is `python lab/check.py`):
every path the prose cites into lab/ resolves, archive members included; the recipes name no /tmp path
outside their one settings file; a run's archive is repeatable and its commands fold into its README."""
import re
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lab"))

import citations  # noqa: E402  (lab/citations.py: standard library only)
import pack  # noqa: E402

RECIPES = ROOT / "lab" / "recipes"
SETTINGS = {"settings.sh", "settings.py"}
#: A hard-coded scratch or environment path: what settings.sh names once, for every recipe.
HARD_PATH = re.compile(r"/tmp\b")
#: The made-up run of the tests below (spelled so that this file cites nothing itself).
RUN = "/".join(("lab", "results", "h200", "2026-01-01-x"))


def test_every_citation_into_the_lab_resolves():
    assert citations.cited(ROOT), "no citation found: did the prose or the resolver move?"
    assert citations.unresolved(ROOT) == []


def _tree(tmp_path: Path) -> Path:
    """A checkout with one run: README.md citing a file, a folder, a glob and an archive member."""
    run = tmp_path / RUN
    (run / "sub").mkdir(parents=True)
    (run / "a.json.gz").write_bytes(b"{}")
    (run / "sub" / "trust1.log").write_text("log\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(f"see `{RUN}/a.json.gz`\n")
    (tmp_path / "lab" / "README.md").write_text("| `h200/2026-01-01-x/` | ... |\n")
    return run


def test_a_missing_file_folder_or_member_is_reported(tmp_path):
    run = _tree(tmp_path)
    (run / "README.md").write_text("`a.json.gz`, `sub/`, `*.json.gz`, `trust1.log`, `sub/trust{1,2}.log`\n")
    (tmp_path / "docs" / "x.md").write_text(f"`{RUN}/logs.tar.gz:b.log` and `{RUN}/gone.json`.\n")
    assert citations.unresolved(tmp_path) == [
        f"docs/x.md: {RUN}/logs.tar.gz:b.log", f"docs/x.md: {RUN}/gone.json", f"{RUN}/README.md: sub/trust{{1,2}}.log"]


def test_a_fenced_block_of_a_run_readme_cites_nothing(tmp_path):
    run = _tree(tmp_path)
    (run / "README.md").write_text("`a.json.gz`\n\n~~~\n# envs built by `gpu/compare.sh`\n~~~\n\n```\n`gone.log`\n```\n")
    assert citations.unresolved(tmp_path) == []
    (run / "README.md").write_text("`a.json.gz`, `gone.log`\n")
    assert citations.unresolved(tmp_path) == [f"{RUN}/README.md: gone.log"]


def test_packed_files_still_resolve_from_the_run_readme_and_by_member(tmp_path):
    run = _tree(tmp_path)
    (run / "b.log").write_text("worker log\n")
    pack.write_archive(run / "asv-results.tar.gz", {"m/x-y.json": b"{}"})  # another archive goes into the one
    (run / "README.md").write_text("`b.log`, `trust1.log`, `sub/`, `a.json.gz`, `asv-results.tar.gz`\n")
    (tmp_path / "docs" / "x.md").write_text(f"`{RUN}/logs.tar.gz:sub/trust1.log`\n")
    tree = citations.Tree(tmp_path)
    packed = pack.pack(RUN, sorted(tree.files), citations.cited_files(tmp_path, tree), root=tmp_path)
    assert packed == [f"{RUN}/asv-results.tar.gz", f"{RUN}/b.log", f"{RUN}/sub/trust1.log"]
    assert not (run / "sub").exists() and (run / "a.json.gz").exists()  # cited by full path: kept
    assert citations.unresolved(tmp_path) == []


def test_commands_are_folded_into_the_run_readme_verbatim(tmp_path):
    run = _tree(tmp_path)
    (run / "README.md").write_text("# A run\n\n`a.json.gz`\n")
    (run / "command.txt").write_text("python -m launchbench compare --variant a=env:/x ~~~ -o a.json\n")
    bare = tmp_path / "lab" / "results" / "h200" / "2026-01-02-y"  # no README: its commands stay a file
    bare.mkdir()
    (bare / "command.txt").write_text("launchbench peers\n")
    tree = citations.Tree(tmp_path)
    cited = citations.cited_files(tmp_path, tree)
    assert pack.pack(RUN, sorted(tree.files), cited, root=tmp_path) == [f"{RUN}/command.txt", f"{RUN}/sub/trust1.log"]
    assert pack.pack(bare.relative_to(tmp_path).as_posix(), sorted(tree.files), cited, root=tmp_path) == []
    assert not (run / "command.txt").exists() and (bare / "command.txt").exists()
    assert (run / "README.md").read_text() == (
        "# A run\n\n`a.json.gz`\n\n## Commands\n\nAs run, verbatim, with the device machine's paths of the day.\n\n"
        "From command.txt:\n\n~~~~\npython -m launchbench compare --variant a=env:/x ~~~ -o a.json\n~~~~\n")


def test_the_archive_is_repeatable(tmp_path):
    members = {"z.log": b"last\n", "a/b.err": b"first\n"}
    pack.write_archive(tmp_path / "one.tar.gz", members)
    pack.write_archive(tmp_path / "two.tar.gz", dict(reversed(list(members.items()))))
    assert (tmp_path / "one.tar.gz").read_bytes() == (tmp_path / "two.tar.gz").read_bytes()
    with tarfile.open(tmp_path / "one.tar.gz") as tar:
        assert [(m.name, m.mtime) for m in tar.getmembers()] == [("a/b.err", 0), ("z.log", 0)]


def hard_paths(folder: Path) -> list:
    """'file:line' for each /tmp path in a recipe other than the settings files."""
    found = []
    for path in sorted(p for p in folder.iterdir() if p.is_file() and p.name not in SETTINGS):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if HARD_PATH.search(line):
                found.append(f"{path.name}:{n}")
    return found


def test_recipes_take_every_path_from_the_settings_file():
    assert hard_paths(RECIPES) == [], "name the path in lab/recipes/settings.sh (or settings.py) and use it"
    unsourced = [p.name for p in sorted(RECIPES.glob("*.sh")) if p.name != "settings.sh"
                 and '. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"' not in p.read_text()]
    assert unsourced == []


def test_the_path_guard_catches_a_hard_coded_env(tmp_path):
    (tmp_path / "settings.sh").write_text("LB_ENV030=${LB_ENV030:-$LB_TMP/env030}\nLB_TMP=${LB_TMP:-/tmp}\n")
    (tmp_path / "ok.sh").write_text('"$LB_ENV030/bin/python" -m launchbench compare\n')
    (tmp_path / "bad.sh").write_text('echo\n/tmp/env030/bin/python -m launchbench compare\n')
    assert hard_paths(tmp_path) == ["bad.sh:2"]


def test_the_range_recipes_pick_the_commits_and_wheels_the_committed_runs_used():
    """lab/recipes/steps.py's choices for asv_range.sh (alone, cpair) and releases.sh (prebuilt), run on the
    committed range and plan: the prebuilt wheels in the order the committed series measured them, the C step
    with its predecessor, and commits spread over the range with both ends."""
    import gzip
    import json

    sys.path.insert(0, str(ROOT / "lab" / "recipes"))
    import steps

    run = ROOT / "lab" / "results" / "h100" / "2026-11-27-asv-range-cuts"
    manifest = json.loads((run / "range.json").read_text())
    plan = json.loads((run / "plan.txt.json").read_text())
    with gzip.open(ROOT / "lab" / "results" / "h100" / "2026-11-27-claims-mlir-prebuilt" / "prebuilt-series.json.gz") as fh:
        measured = [p["wheel"].rsplit("/", 1)[1] for p in json.load(fh)["points"]]
    assert [w.rsplit("/", 1)[1] for w in steps.wheels_around_c_step(manifest, plan, 6)] == measured
    index, prev, sha = steps.c_step(manifest)
    assert manifest["commits"][index - 1]["kind"] == "c" and sha.startswith("0393a8e6") and prev.startswith("c25a464c")
    assert steps.spread(list("abcdefghij"), 4) == ["a", "d", "g", "j"] and steps.spread(list("ab"), 1) == ["b"]
