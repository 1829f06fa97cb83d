"""A project: the sagas a team declares and what builds their clients.

``pyproject.toml`` of the project (a team's, or this repository's reference app)::

    [tool.stepsaga]
    dependencies = "services.deps:dependencies"   # a stepsaga.Dependencies object
    default-saga = "subscription-upgrade"         # optional: the one --saga may leave out

    [tool.stepsaga.sagas]
    subscription-upgrade = "workflows.upgrade:saga"

    [tool.stepsaga.commands]                       # optional: project CLI commands
    demo = "workflows.demo:demo"

The CLI finds it from the working directory upward (``--project DIR`` or
``$STEPSAGA_PROJECT`` override); the project root goes first on ``sys.path``, so its
``workflows``/``tasks`` packages are the ones imported. A saga's key must equal its
``Saga.name`` (the state machine's name). Sagas load on first use, so naming them costs
nothing.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepsaga._model.refs import REF, load_ref
from stepsaga._project.dependencies import Dependencies, NoDependencies
from stepsaga.errors import InvalidInputError
from stepsaga.workflow._names import SAGA_NAME

if TYPE_CHECKING:  # a saga's module (and the models it builds) loads on first use
    from stepsaga.workflow._saga import Saga

PYPROJECT = "pyproject.toml"
ENV_PROJECT = "STEPSAGA_PROJECT"
_KEYS = {"sagas", "dependencies", "commands", "default-saga"}

HOW_TO = (
    'add [tool.stepsaga.sagas] my-saga = "workflows.my_saga:saga" to its pyproject.toml '
    "(stepsaga init DIR makes a project), or pass --project DIR"
)


@dataclass(frozen=True)
class Project:
    """The declared sagas (by name → ``module:attr``) and the dependency factory."""

    root: Path | None
    saga_refs: Mapping[str, str]
    dependencies_ref: str | None = None
    commands: Mapping[str, str] = field(default_factory=dict)
    #: The saga a command runs when it names none (needed once a project declares two).
    default_saga: str | None = None
    _loaded: dict[str, Saga] = field(default_factory=dict, compare=False, repr=False)
    _dependencies: list[Any] = field(default_factory=list, compare=False, repr=False)

    # --- finding one -------------------------------------------------------------------

    @classmethod
    def find(cls, start: Path | None = None) -> Project:
        """The nearest project from ``start`` (default: the working directory) upward."""
        here = (start or Path.cwd()).resolve()
        for folder in (here, *here.parents):
            candidate = folder / PYPROJECT
            if candidate.is_file() and _declares_stepsaga(candidate):
                return cls.load(folder)
        raise InvalidInputError(
            f"no stepsaga project in {here} or above: {HOW_TO}", field="project"
        )

    @classmethod
    def load(cls, root: Path) -> Project:
        """The project whose ``pyproject.toml`` is in ``root``."""
        path = root / PYPROJECT
        if not path.is_file():
            raise InvalidInputError(f"project {root}: no {PYPROJECT} there", field="project")
        section = _section(path)
        if section is None:
            raise InvalidInputError(f"{path}: no [tool.stepsaga]: {HOW_TO}", field="project")
        return cls._from_section(root.resolve(), section, str(path))

    @classmethod
    def of(cls, *sagas: Saga, dependencies: Any = None, default: str | None = None) -> Project:
        """A project made in Python (tests, scripts): these sagas, this ``Dependencies``,
        ``default`` the saga run when none is named."""
        project = cls(
            root=None,
            saga_refs={saga.name: f"<in-process>:{saga.name}" for saga in sagas},
            default_saga=default,
        )
        project._loaded.update({saga.name: saga for saga in sagas})
        project._dependencies.append(dependencies if dependencies is not None else NoDependencies())
        return project

    @classmethod
    def _from_section(cls, root: Path, section: Mapping[str, Any], where: str) -> Project:
        unknown = sorted(set(section) - _KEYS)
        if unknown:
            raise InvalidInputError(
                f"{where}: [tool.stepsaga] has unknown keys {', '.join(unknown)} "
                f"(known: {', '.join(sorted(_KEYS))})",
                field="project",
            )
        sagas = _refs(section.get("sagas"), f"{where}: [tool.stepsaga.sagas]", names=True)
        if not sagas:
            raise InvalidInputError(
                f"{where}: [tool.stepsaga.sagas] declares no saga", field="project"
            )
        dependencies = section.get("dependencies")
        if dependencies is not None and (
            not isinstance(dependencies, str) or not REF.match(dependencies)
        ):
            raise InvalidInputError(
                f"{where}: [tool.stepsaga] dependencies must be 'package.module:attr', got "
                f"{dependencies!r}",
                field="project",
            )
        commands = _refs(section.get("commands", {}), f"{where}: [tool.stepsaga.commands]")
        default = section.get("default-saga")
        if default is not None and default not in sagas:
            raise InvalidInputError(
                f"{where}: [tool.stepsaga] default-saga {default!r} is not one of "
                f"[tool.stepsaga.sagas] ({', '.join(sagas)})",
                field="project",
            )
        return cls(
            root=root,
            saga_refs=sagas,
            dependencies_ref=dependencies,
            commands=commands,
            default_saga=default,
        )

    # --- using it -----------------------------------------------------------------------

    def importable(self) -> Project:
        """Put the project root first on ``sys.path`` (its packages win over any other)."""
        if self.root is not None:
            root = str(self.root)
            if root in sys.path:
                sys.path.remove(root)
            sys.path.insert(0, root)
        return self

    @property
    def saga_names(self) -> list[str]:
        return list(self.saga_refs)

    def declares(self, name: str) -> bool:
        return name in self.saga_refs

    def saga(self, name: str | None = None) -> Saga:
        """The saga ``name``; with one declared saga, or a ``default-saga``, ``name`` may be
        left out."""
        if name is None and self.default_saga is not None:
            name = self.default_saga
        if name is None:
            if len(self.saga_refs) != 1:
                raise InvalidInputError(
                    f"this project declares {len(self.saga_refs)} sagas "
                    f"({', '.join(self.saga_refs)}): pass --saga NAME",
                    field="saga",
                )
            name = next(iter(self.saga_refs))
        if name not in self.saga_refs:
            raise InvalidInputError(
                f"saga {name!r} is not declared by this project "
                f"(declared: {', '.join(self.saga_refs)})",
                field="saga",
            )
        if name not in self._loaded:
            from stepsaga.workflow._loader import load_saga

            self.importable()
            saga = load_saga(self.saga_refs[name], f"saga {name}")
            if saga.name != name:
                raise InvalidInputError(
                    f"[tool.stepsaga.sagas] {name} = {self.saga_refs[name]!r} is the saga named "
                    f"{saga.name!r}: the key must be the saga's name",
                    field="saga",
                )
            self._loaded[name] = saga
        return self._loaded[name]

    def dependencies(self) -> Dependencies[Any]:
        """The project's ``Dependencies`` (``NoDependencies`` if it declares none)."""
        if not self._dependencies:
            if self.dependencies_ref is None:
                value: Any = NoDependencies()
            else:
                self.importable()
                value = load_ref(self.dependencies_ref, "dependencies")
                if isinstance(value, type):
                    value = value()
            if not callable(getattr(value, "local", None)):
                raise InvalidInputError(
                    f"dependencies {self.dependencies_ref!r}: {type(value).__name__} has no "
                    "local(ctx) method (see stepsaga.Dependencies)",
                    field="dependencies",
                )
            self._dependencies.append(value)
        return self._dependencies[0]  # type: ignore[no-any-return]


def _declares_stepsaga(path: Path) -> bool:
    try:
        return _section(path) is not None
    except InvalidInputError:
        return True  # it says [tool.stepsaga] but is broken: load() reports why


def _section(path: Path) -> Mapping[str, Any] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInputError(f"{path}: {exc}", field="project") from None
    tool = data.get("tool", {})
    section = tool.get("stepsaga") if isinstance(tool, dict) else None
    if section is None:
        return None
    if not isinstance(section, dict):
        raise InvalidInputError(f"{path}: [tool.stepsaga] must be a table", field="project")
    return section


def _refs(value: object, where: str, *, names: bool = False) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(f"{where} must be a table of name = 'module:attr'", field="project")
    refs: dict[str, str] = {}
    for name, ref in value.items():
        if names and not SAGA_NAME.match(name):
            raise InvalidInputError(
                f"{where}: {name!r} is not a saga name (1-80 letters, digits, '-' or '_')",
                field="project",
            )
        if not isinstance(ref, str) or not REF.match(ref):
            raise InvalidInputError(
                f"{where}: {name} must be 'package.module:attr', got {ref!r}", field="project"
            )
        refs[name] = ref
    return refs
