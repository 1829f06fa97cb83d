"""``stepsaga init DIR``: a new project with the design card's layout and a sample saga.

The template (``template/``, shipped in the wheel) is a complete project: a subscription
upgrade saga, its step handlers and fake clients, tests, an example case and
``[tool.stepsaga]``. Python files are stored as ``*.py-tpl`` so they are never imported
(or linted) as part of stepsaga; ``{{name}}`` and ``{{approved_at}}`` are filled in.
"""

from __future__ import annotations

from datetime import datetime
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from stepsaga.errors import InvalidInputError

__all__ = ["create_project"]

_SUFFIX = "-tpl"


def create_project(target: Path, *, now: datetime) -> list[Path]:
    """Write the sample project into ``target`` (missing or empty); the files written.
    Refuses, writing nothing, a folder that holds anything."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InvalidInputError(
            f"{target}: not an empty folder (stepsaga init writes a new project)", field="dir"
        )
    name = _project_name(target)
    values = {"{{name}}": name, "{{approved_at}}": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    template = resources.files(__package__).joinpath("template")
    written: list[Path] = []
    target.mkdir(parents=True, exist_ok=True)
    for source, relative in _files(template, Path()):
        destination = target / relative.with_name(relative.name.removesuffix(_SUFFIX))
        destination.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        destination.write_text(text, encoding="utf-8")
        written.append(destination)
    return written


def _files(folder: Traversable, relative: Path) -> list[tuple[Traversable, Path]]:
    found: list[tuple[Traversable, Path]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            found += _files(entry, relative / entry.name)
        else:
            found.append((entry, relative / entry.name))
    return found


def _project_name(target: Path) -> str:
    name = "".join(c if c.isalnum() else "-" for c in target.resolve().name.lower()).strip("-")
    return name or "stepsaga-project"
