"""The documentation (README.md and the MkDocs site in docs/): every internal link resolves,
every code block that claims to run runs, and the site builds with warnings as errors.

Which blocks run is the convention in docs/contributing/index.md ("Code blocks that run"):
a block with ``title="path"`` is a file of the page's project; a ``python`` block runs; a
``console`` block is a transcript whose ``$`` commands run and whose output must match;
``py``, ``sh``, ``bash``, ``toml``, ``json`` and bare blocks are shown only."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import re
import shlex
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]

FENCE = re.compile(r"^(`{3,})([^\n`]*)\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
TITLE = re.compile(r'title="([^"]+)"')
LINK = re.compile(r"!?\[(?:[^\]`]|`[^`]*`)*\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    title: str | None
    body: str

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        info = match.group(2).strip()
        title = TITLE.search(info)
        found.append(
            Block(
                page=page,
                line=text.count("\n", 0, match.start()) + 1,
                lang=info.split(" ", 1)[0],
                title=title.group(1) if title else None,
                body=match.group(3),
            )
        )
    return found


def prose(page: Path) -> str:
    """The page without its code: fenced blocks and inline code hold no links."""
    return INLINE_CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))


def slugify(title: str) -> str:
    """A heading's id as MkDocs' toc extension makes it (GitHub's agrees for these headings)."""
    value = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slugify(re.sub(r"[`*]", "", title)) for title in HEADING.findall(text)}


# --- links -----------------------------------------------------------------------------


def test_pages_have_internal_links_to_check() -> None:
    assert sum(len(LINK.findall(prose(page))) for page in PAGES) > 100


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists() or root not in resolved.parents:
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_internal_link_resolves_to_a_file_and_anchor(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, "\n".join(broken)


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## What `to` raise\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\nSee `[x](#no)`, [a](#title), [b](other.md#what-to-raise),\n"
        "[c](other.md#nowhere), [d](gone.md) and [e](https://example.com/x.md).\n"
    )
    assert anchors(tmp_path / "other.md") == {"other", "what-to-raise"}
    assert broken_links(page, root=tmp_path) == [
        "other.md#nowhere: no heading #nowhere in other.md",
        "gone.md: no such file",
    ]


# --- code blocks that run ---------------------------------------------------------------


def runnable_pages() -> list[Path]:
    return [p for p in PAGES if any(b.lang in ("python", "console") for b in blocks(p))]


def write_files(page: Path, project: Path) -> None:
    """The page's ``title="path"`` blocks, written as its project. A case file's approval is
    moved to now (the ledger refuses one older than its 30-day window)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for block in blocks(page):
        if block.title is None:
            continue
        path = project / block.title
        path.parent.mkdir(parents=True, exist_ok=True)
        body = block.body
        if block.lang == "json":
            body = re.sub(r'"approved_at": "[^"]+"', f'"approved_at": "{now}"', body)
        path.write_text(body, encoding="utf-8")
        if path.suffix == ".py":
            py_compile.compile(str(path), doraise=True)
            for folder in path.relative_to(project).parents:
                if folder != Path("."):
                    (project / folder / "__init__.py").touch()


def environ(project: Path) -> dict[str, str]:
    """A user's shell: the venv's tools first, no state home or project of ours, no waits."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "STEPSAGA_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(STEPSAGA_TIME_SCALE="0", COLUMNS="120", NO_COLOR="1", HOME=str(project))
    return env


def normalize(line: str) -> str:
    line = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?Z?", "<time>", line)
    line = re.sub(r"\b\d+\.\d+s\b", "<seconds>", line)
    return " ".join(line.split())


def transcript(body: str) -> Iterator[tuple[str, list[str]]]:
    """``$ command`` lines with the output shown under each."""
    command: str | None = None
    shown: list[str] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            if command is not None:
                yield command, shown
            command, shown = line[2:], []
        elif line.strip():
            shown.append(line)
    if command is not None:
        yield command, shown


def matches(shown: list[str], actual: list[str]) -> bool:
    """Every shown line in order, consecutive except where a ``…`` line stands for any."""
    want = [normalize(s) for s in shown]
    got = [normalize(a) for a in actual if a.strip()]

    def at(i: int, j: int) -> bool:
        if i == len(want):
            return True
        if want[i] == "…":
            return any(at(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and got[j] == want[i] and at(i + 1, j + 1)

    return any(at(0, j) for j in range(len(got) + 1))


def test_a_transcript_matches_only_what_was_printed() -> None:
    body = "$ stepsaga x\na\n…\nd in 1.02s\n$ cd y\n"
    assert list(transcript(body)) == [("stepsaga x", ["a", "…", "d in 1.02s"]), ("cd y", [])]
    assert matches(["a", "…", "d in 1.02s"], ["a", "b", "c", "d   in 9.99s"])
    assert not matches(["a", "d"], ["a", "b", "d"])
    assert not matches(["a", "…", "e"], ["a", "b", "d"])


def run_console(block: Block, env: dict[str, str], cwd: Path) -> Path:
    for command, shown in transcript(block.body):
        if command.startswith("cd "):
            cwd = cwd / shlex.split(command)[1]
            continue
        if command.startswith("export "):
            for word in shlex.split(command)[1:]:
                name, _, value = word.partition("=")
                env[name] = value
            continue
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        actual = (result.stdout + result.stderr).splitlines()
        assert result.returncode == 0, f"{block}: $ {command}\n{result.stdout}{result.stderr}"
        printed = "\n".join(actual)
        assert matches(shown, actual), f"{block}: $ {command}\n{chr(10).join(shown)}\n--\n{printed}"
    return cwd


def run_python(block: Block, project: Path) -> None:
    script = project / f"_block_{block.line}.py"
    script.write_text(block.body, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, script.name],
        cwd=project,
        env=environ(project),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{block}:\n{result.stdout}{result.stderr}"


@pytest.mark.slow
@pytest.mark.parametrize("page", runnable_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_that_claims_to_run_runs(page: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    write_files(page, project)
    env, cwd = environ(project), project
    for block in blocks(page):
        if block.title is not None:
            continue
        if block.lang == "python":
            run_python(block, project)
        elif block.lang == "console":
            cwd = run_console(block, env, cwd)


def test_the_quick_start_and_the_tutorial_run() -> None:
    assert {ROOT / "README.md", DOCS / "tutorial.md"} <= set(runnable_pages())


STEPSAGA_IMPORT = re.compile(r"^\s*from (stepsaga[\w.]*) import (\([^)]*\)|[^\n]*)", re.MULTILINE)


def stepsaga_imports() -> Iterator[tuple[Block, str, str]]:
    for page in PAGES:
        for block in blocks(page):
            if block.lang in ("python", "py"):
                for module, names in STEPSAGA_IMPORT.findall(block.body):
                    for name in re.findall(r"\w+", names.split("#")[0]):
                        yield block, module, name


def test_code_blocks_import_only_what_a_public_door_exports() -> None:
    """Private modules and names outside a door's ``__all__`` are not for users' code."""
    wrong = []
    for block, module, name in stepsaga_imports():
        door = importlib.import_module(module)
        exported = getattr(door, "__all__", [n for n in vars(door) if not n.startswith("_")])
        public = "._" not in module and name in exported
        if not public:
            wrong.append(f"{block}: from {module} import {name}")
    assert not wrong, "\n".join(wrong)
    assert any(module == "stepsaga.errors" for _, module, _ in stepsaga_imports())


# --- the README and the site ------------------------------------------------------------


def section(page: Path, heading: str) -> str:
    text = page.read_text(encoding="utf-8")
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def tables(text: str) -> list[str]:
    return re.findall(r"^\|.*\|$(?:\n^\|.*\|$)*", text, re.MULTILINE)


def test_the_readme_is_short_and_its_tables_are_the_step_handler_pages() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    shown = tables(section(ROOT / "README.md", "## What a step author needs"))
    assert len(shown) == 2
    page = tables((DOCS / "how-to" / "write-a-step-handler.md").read_text(encoding="utf-8"))
    assert set(shown) <= set(page), "the README's two tables drifted from the how-to page"


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [
        str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if f" {p.relative_to(DOCS)}" not in nav
    ]
    assert not missing, missing


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:  # pragma: no cover - the dev extra pins it
        if os.environ.get("CI") == "true":
            raise AssertionError("mkdocs is not installed (the dev extra pins it)")
        pytest.skip("needs mkdocs: install the dev extra")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env={**environ(tmp_path), "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    api = (tmp_path / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert 'id="stepsaga.StepHandler"' in api  # generated from the docstrings
    assert 'id="stepsaga._util.lazy"' not in api
    assert (tmp_path / "how-to" / "console" / "index.html").exists()
    assert 'class="mermaid"' in (tmp_path / "index.html").read_text(encoding="utf-8")
