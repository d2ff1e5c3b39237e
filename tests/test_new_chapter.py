"""``make new-chapter``: the scaffold writes the README's worked example under new names, it passes
the linter and every chapter test as written, and bad input is one line that writes nothing."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import support
from new_chapter import ScaffoldError, main, names, nav_line, planned

ROOT = support.ROOT
README_SLUG, README_TITLE = "cache-growth", "Cache Growth: One User's Context"


def test_the_readme_s_worked_example_is_what_the_scaffold_writes() -> None:
    files, nav = support.readme_example()
    assert support.example_slug() == README_SLUG
    written = planned(names(README_SLUG, README_TITLE))
    assert sorted(files) == sorted(written)
    for path, text in written.items():
        assert files[path] == text, f"README's {path} differs from what scripts/new_chapter.py writes"
    number = re.compile(r'"\d+\. ')
    assert number.sub('"N. ', nav.strip()) == number.sub('"N. ', nav_line(names(README_SLUG, README_TITLE), 1))


def test_every_name_follows_the_slug_so_two_chapters_never_collide() -> None:
    one, other = planned(names("prefix-caching", "Prefix Caching")), planned(names("moe", "Mixture of Experts"))
    assert not set(one) & set(other)
    assert "roofline/prefixcaching.py" in one and "docs/chapters/moe/calculators/moe.py" in other
    assert "{{ md.figure-prefix-caching }}" in one["docs/chapters/prefix-caching/index.md"]
    assert 'content.table("moe-reads"' in other["docs/chapters/moe/page.py"]


def _small_checkout(tmp_path: Path) -> Path:
    """What the scaffold reads and writes: the docs, the package and mkdocs.yml."""
    for name in ("docs", "roofline"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    return tmp_path


def _listing(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--slug", "Prefix Caching", "--title", "T"], "slug 'Prefix Caching': use lower-case words joined by hyphens"),
        (["--slug=-moe", "--title", "T"], "slug '-moe': use lower-case words"),
        (["--slug", "moe--ep", "--title", "T"], "slug 'moe--ep': use lower-case words"),
        (["--slug", "moe", "--title", 'Say "hi"'], "title 'Say \"hi\"': write it in plain words"),
        (["--slug", "moe", "--title", "<img src=x onerror=alert(1)>"], "write it in plain words, without quotes"),
        (["--slug", "moe", "--title", "   "], "title '': write it in plain words"),
        (["--slug", "moe", "--title", "MoE", "--short", "A: B"], "short title 'A: B': plain words without a colon"),
        (["--slug", "moe", "--title", "MoE", "--module", "Mo-E"], "module 'Mo-E': a Python name in lower case"),
        (["--slug", "kv-cache", "--title", "Again"], "docs/chapters/kv-cache/ exists already: choose another SLUG"),
        (["--slug", "kvcache", "--title", "Again"], "roofline/kvcache.py exists already"),
        (["--slug", "kv-budget", "--title", "Again"], "a calculator named 'kv_budget' exists already"),
        (["--title", "No slug"], "give the chapter a slug and a title: make new-chapter SLUG=moe"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, arguments, says) -> None:
    for name in ("SLUG", "TITLE", "SHORT", "MODULE"):
        monkeypatch.delenv(name, raising=False)
    root = _small_checkout(tmp_path)
    before = _listing(root)
    assert main([*arguments, "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("new_chapter.py: error: ") and says in err, err
    assert _listing(root) == before


def test_the_chapter_is_written_with_its_nav_line_numbered_next(tmp_path, capsys, monkeypatch) -> None:
    root = _small_checkout(tmp_path)
    monkeypatch.setenv("SLUG", "long-context")  # as make passes SLUG=... TITLE=...
    monkeypatch.setenv("TITLE", "Long Context: Paying for Attention")
    assert main(["--root", str(root)]) == 0
    chapters = len(re.findall(r'- "\d+\. ', (ROOT / "mkdocs.yml").read_text(encoding="utf-8")))
    nav = (root / "mkdocs.yml").read_text(encoding="utf-8")
    assert f'      - "{chapters + 1}. Long Context": chapters/long-context/index.md\n' in nav
    assert (root / "docs/chapters/long-context/calculators/long_context.py").is_file()
    with pytest.raises(ScaffoldError, match="exists already"):  # a second time: refused
        from new_chapter import scaffold

        scaffold(root, names("long-context", "Again"))


def test_make_new_chapter_runs_the_scaffold_then_the_figures() -> None:
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "new-chapter", "SLUG=moe", "TITLE=MoE"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "scripts/new_chapter.py\n" in done.stdout and "scripts/build_figures.py" in done.stdout, done.stdout


#: The tests a chapter must pass that run without a site build (README, "The rules a chapter meets").
CHAPTER_TESTS = [
    "tests/test_every_chapter.py",
    "tests/test_own_entries.py",
    "tests/test_figures.py",
    "tests/test_quiz.py",
]


@pytest.mark.slow
@pytest.mark.cost(90)
def test_two_scaffolded_chapters_pass_the_linter_and_the_chapter_tests_in_a_throwaway_checkout(tmp_path) -> None:
    """The README's worked example (the scaffold's output for its slug) and a second chapter, written
    by ``scripts/new_chapter.py`` into a copy of this checkout, then ``make figures``, ``make lint`` on
    their files and the chapter tests of ``make test-fast``, as a new author runs them."""
    root = support.copy_checkout(tmp_path / "repo")
    env = support.checkout_env(root)
    for slug, title in ((README_SLUG, README_TITLE), ("toy-topic", "Toy Topic: A Second Chapter")):
        done = subprocess.run(
            [sys.executable, "scripts/new_chapter.py", "--slug", slug, "--title", title],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    figures = subprocess.run(
        [sys.executable, "scripts/build_figures.py"], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    assert figures.returncode == 0, figures.stderr
    written = [str(path.relative_to(root)) for path in (root / "docs" / "chapters").glob("*/**/*.py")]
    written = [path for path in written if "cache-growth" in path or "toy-topic" in path]
    written += ["roofline/cachegrowth.py", "roofline/toytopic.py"]
    for check in (["check"], ["format", "--check"]):
        linted = subprocess.run(
            [sys.executable, "-m", "ruff", *check, *written], cwd=root, capture_output=True, text=True, check=False
        )
        assert linted.returncode == 0, linted.stdout + linted.stderr
    fast = "not slow and not browser and not node"  # what make test-fast selects
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "-m", fast, *CHAPTER_TESTS],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    out = tests.stdout + tests.stderr
    assert tests.returncode == 0, out[-4000:]
    for name in ("cache-growth", "cache_growth", "toy-topic", "toy_topic"):
        assert re.search(rf"PASSED \S+\[[^\]]*{name}", out), f"no chapter test ran on {name}"
    assert " failed" not in out and " skipped" not in out.split("short test summary info")[-1]
