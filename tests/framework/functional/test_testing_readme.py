"""The "Test your saga" page's example (docs/how-to/test-your-saga.md) is
``examples/user_saga/test_my_saga.py``,
verbatim, and it passes when run as a user would: a fresh pytest in a project of its own,
with the plugin loaded by its entry point."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stepsaga.testing._localstack import LocalStack
from stepsaga.workflow import compile as compile_saga

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples" / "user_saga"


DOCS = ROOT / "docs" / "how-to"


def file_block(page: Path, name: str) -> str:
    """The page's code block shown as the file ``name`` (``title="name"``)."""
    text = page.read_text(encoding="utf-8")
    return text.split(f'```python title="{name}"\n', 1)[1].split("```", 1)[0]


def test_the_docs_show_the_example_file() -> None:
    shown = file_block(DOCS / "test-your-saga.md", "test_my_saga.py")
    assert shown == (EXAMPLE / "test_my_saga.py").read_text(encoding="utf-8")


def test_the_example_saga_is_the_one_of_writing_a_saga() -> None:
    writing = file_block(DOCS / "write-a-saga.md", "my_sagas.py")
    shown: dict[str, Any] = {}
    exec(writing, shown)  # the page's own example
    spec = importlib.util.spec_from_file_location("my_sagas", EXAMPLE / "my_sagas.py")
    assert spec is not None
    assert spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    assert compile_saga(example.returns) == compile_saga(shown["returns"])


def run_example(tmp_path: Path, environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    for name in ("my_sagas.py", "test_my_saga.py"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in environ.items() if not k.startswith("PYTEST_")},
        check=False,
    )


def without_docker(tmp_path: Path) -> dict[str, str]:
    environ = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/none.sock"}
    environ.pop("STEPSAGA_LOCALSTACK_PYTHON", None)
    return environ


def test_the_example_passes_on_the_engine_and_moto_and_skips_the_rest(tmp_path: Path) -> None:
    result = run_example(tmp_path, without_docker(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed, 4 skipped" in result.stdout, result.stdout
    assert "needs Docker: Docker is not reachable" in result.stdout
    assert "needs LocalStack: LocalStack is not installed" in result.stdout


@pytest.mark.localstack
def test_the_example_passes_on_localstack(tmp_path: Path, localstack: LocalStack) -> None:
    environ = {**without_docker(tmp_path), "STEPSAGA_LOCALSTACK_PYTHON": str(localstack.python)}
    result = run_example(tmp_path, environ)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed, 2 skipped" in result.stdout, result.stdout


@pytest.mark.docker
def test_the_example_passes_on_step_functions_local(tmp_path: Path) -> None:
    result = run_example(tmp_path, dict(os.environ))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed" in result.stdout, result.stdout
