"""Build the Lambda code asset of any project on this machine, without Docker.

The asset is

* the **project's** code: the top-level packages (or modules) of the saga reference, the
  dependencies reference and every handler reference, copied from the project root (plus
  any ``include``), minus the app's ``exclude`` (its CLI commands, say);
* **stepsaga** itself, copied from the installed package (``Path(stepsaga.__file__).parent``,
  so a wheel install works as well as a clone), minus what never runs in Lambda
  (``cli/``, ``testing/``, ``scaffold/``, ``cdk/``, ``__main__.py``);
* in ``pip`` mode, stepsaga's runtime dependencies with their whole closure pinned and
  hashed (``lambda-requirements.lock`` beside this file, for Lambda's platform; installed
  with ``--require-hashes --no-deps``), then the app's own ``requirements``, both
  ``pip install``-ed for Lambda's platform (``--platform manylinux2014_aarch64
  --only-binary=:all:``, CPython of the runtime). Refresh the lock after changing
  stepsaga's dependencies: ``python -m stepsaga.cdk._bundling --lock``.

``.pyc`` files are precompiled into the asset by an interpreter of the runtime's version: the
synthesizing Python if it is one, else ``$STEPSAGA_LAMBDA_PYTHON`` or ``python3.14`` on PATH;
with none, no ``.pyc`` is written (one of another version would only be ignored by Lambda).

Before anything is built, :meth:`AssetLayout.check` verifies that every module the
functions load (saga, dependencies, each handler, the generic entry point) is a file of the
asset: a missing one fails the synth with one line instead of deploying functions that fail
on every invocation.
"""

from __future__ import annotations

import compileall
import hashlib
import importlib.metadata
import os
import py_compile
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

import stepsaga
from stepsaga.cdk._saga_deployment import SagaDeployment, module_of
from stepsaga.cdk._settings import BundlingMode
from stepsaga.errors import DeploymentError

__all__ = [
    "ARCHITECTURE",
    "EXCLUDED_DEPENDENCIES",
    "FRAMEWORK_EXCLUDED",
    "LAMBDA_WHEELS",
    "PLATFORM",
    "PYTHON_VERSION",
    "RUNTIME",
    "AssetLayout",
    "LocalPythonBundling",
    "WheelTarget",
    "framework_requirements",
    "lambda_code",
]

#: Lambda runtime and the matching wheel tags (keep the three in step).
RUNTIME: Final = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE: Final = lambda_.Architecture.ARM_64
PYTHON_VERSION: Final = "3.14"
PLATFORM: Final = "manylinux2014_aarch64"


@dataclass(frozen=True)
class WheelTarget:
    """Whose wheels pip installs into the asset: Lambda's (:data:`LAMBDA_WHEELS`, what is
    deployed), or the running interpreter's own (:meth:`host`: a test that imports and
    runs the asset here, ``tests/framework/infra/test_lambda_asset.py``)."""

    #: A pip ``--platform`` tag; None: this interpreter's.
    platform: str | None
    python_version: str

    @classmethod
    def host(cls) -> WheelTarget:
        return cls(None, f"{sys.version_info.major}.{sys.version_info.minor}")

    def pip_options(self) -> list[str]:
        if self.platform is None:
            return ["--only-binary=:all:"]
        return [
            "--platform",
            self.platform,
            "--only-binary=:all:",
            "--implementation",
            "cp",
            "--python-version",
            self.python_version,
        ]


LAMBDA_WHEELS: Final = WheelTarget(PLATFORM, PYTHON_VERSION)

#: Parts of stepsaga no saga Lambda runs: the operator's tools (CLI, console), test helpers,
#: the scaffold, the construct, and the MCP adapter (it serves agents, and needs the ``mcp``
#: extra, which the asset does not carry), relative to the package folder.
FRAMEWORK_EXCLUDED: Final = (
    "cli",
    "console",
    "testing",
    "scaffold",
    "cdk",
    "__main__.py",
    "agents/_mcp.py",
)
_IGNORED: Final = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache"})

#: Runtime dependencies of stepsaga that the asset leaves out, and why.
EXCLUDED_DEPENDENCIES: Final = {
    "boto3": "the Lambda Python runtime ships boto3/botocore",
    "typer": "CLI only",
    "rich": "CLI only",
}
#: stepsaga's runtime closure for Lambda's platform: ``name==version --hash=sha256:…``.
LOCK_FILE: Final = Path(__file__).with_name("lambda-requirements.lock")

#: An interpreter of the runtime's version, to precompile ``.pyc`` with (else
#: ``python3.14`` on PATH, else none are written).
ENV_LAMBDA_PYTHON: Final = "STEPSAGA_LAMBDA_PYTHON"

#: Modules every function loads besides the project's references.
FRAMEWORK_MODULES: Final = (
    "stepsaga.lambdas",
    "stepsaga._handlers.entrypoint",
    "stepsaga._reconciliation.overdue",
    "stepsaga._aws.auto_redrive",
    "stepsaga._aws.ingress",
)


def _distribution(requirement: str) -> str:
    for separator in ("==", ">=", "<=", "~=", "!=", "<", ">", "[", ";", " "):
        requirement = requirement.split(separator, 1)[0]
    return requirement.strip().lower().replace("_", "-")


def framework_requirements() -> list[str]:
    """stepsaga's unconditional requirements (the ranges ``pyproject.toml`` declares), from
    its installed metadata, minus ``EXCLUDED_DEPENDENCIES``."""
    try:
        requires = importlib.metadata.requires("stepsaga") or []
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - not installed
        raise DeploymentError(
            "stepsaga is not installed (pip install the wheel or the clone with its cdk extra)"
        ) from None
    return [r for r in requires if ";" not in r and _distribution(r) not in EXCLUDED_DEPENDENCIES]


def _files_under(folder: Path) -> Iterator[Path]:
    for file in sorted(folder.rglob("*")):
        if not file.is_file() or _IGNORED & set(file.relative_to(folder).parts):
            continue
        if file.suffix == ".pyc":
            continue
        yield file


def _module_files(module: str) -> tuple[str, str]:
    path = module.replace(".", "/")
    return f"{path}.py", f"{path}/__init__.py"


@dataclass(frozen=True)
class AssetLayout:
    """Which files the asset holds, from where (see the module docstring)."""

    project_root: Path
    #: Top-level packages or modules of the project copied into the asset.
    packages: tuple[str, ...]
    #: Project-relative paths left out (files or folders).
    exclude: tuple[str, ...] = ()
    #: Extra pinned requirements of the app's own code (pip mode).
    requirements: tuple[str, ...] = ()
    framework_root: Path = field(default_factory=lambda: Path(stepsaga.__file__).parent)

    @classmethod
    def for_saga(
        cls,
        project_root: Path,
        saga: SagaDeployment,
        *,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        requirements: Iterable[str] = (),
    ) -> AssetLayout:
        """The packages the saga's references name (never ``stepsaga``), plus ``include``."""
        tops = [module_of(ref).split(".")[0] for ref in saga.references.values()]
        include = list(include)
        root = project_root.resolve()
        for name in include:
            if not ((root / name).is_dir() or (root / f"{name}.py").is_file()):
                raise DeploymentError(
                    f"include {name!r}: no package {name}/ or module {name}.py in {root}"
                )
        packages = dict.fromkeys([*tops, *include])
        packages.pop("stepsaga", None)
        return cls(
            project_root=root,
            packages=tuple(packages),
            exclude=tuple(exclude),
            requirements=tuple(requirements),
        )

    def files(self) -> Iterator[tuple[Path, str]]:
        """(source file, path in the asset), in a stable order."""
        left_out = [self.framework_root / e for e in FRAMEWORK_EXCLUDED]
        for file in _files_under(self.framework_root):
            if not any(file == e or file.is_relative_to(e) for e in left_out):
                yield file, f"stepsaga/{file.relative_to(self.framework_root).as_posix()}"
        excluded = [self.project_root / e for e in self.exclude]
        for package in self.packages:
            folder = self.project_root / package
            module = self.project_root / f"{package}.py"
            candidates = list(_files_under(folder)) if folder.is_dir() else []
            if module.is_file():
                candidates.append(module)
            for file in candidates:
                if any(file == e or file.is_relative_to(e) for e in excluded):
                    continue
                yield file, file.relative_to(self.project_root).as_posix()

    def asset_paths(self) -> set[str]:
        return {relative for _, relative in self.files()}

    def check(self, references: Mapping[str, str], in_dir: Path | None = None) -> None:
        """Every referenced module is a file of the asset (the files the layout copies, or
        those of the built asset folder ``in_dir``), else one ``DeploymentError`` line
        naming the first missing one."""
        if in_dir is None:
            present = self.asset_paths()
        else:
            present = {p.relative_to(in_dir).as_posix() for p in in_dir.rglob("*.py")}
        wanted = {**references, **{m: f"{m}:handler" for m in FRAMEWORK_MODULES}}
        for what, ref in wanted.items():
            module = module_of(ref)
            if not present & set(_module_files(module)):
                plain, package = _module_files(module)
                raise DeploymentError(
                    f"{what} {ref!r}: module {module} is not in the Lambda asset (no {plain} "
                    f"or {package} under the project root {self.project_root}); every "
                    "function would fail to load it"
                )

    def requirement_list(self) -> list[str]:
        return [*locked_requirements(), *self.requirements]

    def asset_hash(self, mode: BundlingMode) -> str:
        """Changes whenever the asset's inputs change: sources, requirements, platform."""
        digest = hashlib.sha256()
        digest.update(f"{mode}|{PYTHON_VERSION}|{PLATFORM}|".encode())
        if mode is BundlingMode.PIP:
            digest.update("\n".join(self.requirement_list()).encode())
        for source, relative in self.files():
            digest.update(relative.encode() + b"\0")
            digest.update(source.read_bytes() + b"\0")
        return digest.hexdigest()

    def copy_sources(self, target: Path) -> None:
        for source, relative in self.files():
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


def locked_requirements(lock: Path = LOCK_FILE) -> list[str]:
    """The lock's lines (``name==version --hash=sha256:…``), comments left out."""
    return [
        line.strip()
        for line in lock.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]


def write_lock(lock: Path = LOCK_FILE) -> list[str]:
    """Resolve ``framework_requirements()`` at the versions installed here (the dev extra's
    pins, what the tests ran) for Lambda's platform (``pip download``) and write every wheel
    of the closure, pinned, with its SHA-256."""
    import tempfile

    installed = [
        f"{name}=={importlib.metadata.version(name)}"
        for name in map(_distribution, framework_requirements())
    ]
    with tempfile.TemporaryDirectory() as folder:
        command = pip_command("download", Path(folder), installed)
        subprocess.run(command, check=True, capture_output=True, text=True)  # noqa: S603
        lines = []
        for wheel in sorted(Path(folder).glob("*.whl")):
            name, version = wheel.name.split("-")[:2]
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            lines.append(f"{name.replace('_', '-').lower()}=={version} --hash=sha256:{digest}")
    header = (
        "# stepsaga's Lambda runtime closure "
        f"({PLATFORM}, CPython {PYTHON_VERSION}); written by "
        "`python -m stepsaga.cdk._bundling --lock`, do not edit.\n"
    )
    lock.write_text(header + "\n".join(lines) + "\n", encoding="utf-8")
    return lines


def pip_command(
    verb: str, target: Path, requirements: list[str], wheels: WheelTarget = LAMBDA_WHEELS
) -> list[str]:
    """``pip install --target`` or ``pip download -d`` for Lambda's platform (or ``wheels``)."""
    where = ["--target", str(target)] if verb == "install" else ["-d", str(target)]
    return [
        sys.executable,
        "-m",
        "pip",
        verb,
        "--quiet",
        "--disable-pip-version-check",
        *(["--no-compile"] if verb == "install" else []),
        *wheels.pip_options(),
        *where,
        *requirements,
    ]


def runtime_python(version: str = PYTHON_VERSION) -> str | None:
    """An interpreter of the Lambda runtime's version: this one, ``$STEPSAGA_LAMBDA_PYTHON``
    or ``python<version>`` on PATH; None if there is none."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    return os.environ.get(ENV_LAMBDA_PYTHON) or shutil.which(f"python{version}")


def precompile(target: Path, version: str = PYTHON_VERSION) -> bool:
    """``.pyc`` (unchecked-hash: the asset never changes once built) for the runtime's
    Python, written by an interpreter of that version; without one, none is written (a
    ``.pyc`` of another version would only be ignored) and False is returned."""
    python = runtime_python(version)
    if python is None:
        return False
    if python == sys.executable:
        return bool(
            compileall.compile_dir(
                str(target),
                quiet=2,
                invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
            )
        )
    done = subprocess.run(  # noqa: S603 - an interpreter path, fixed arguments, no shell
        [python, "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode == 0


@jsii.implements(ILocalBundling)
class LocalPythonBundling:
    """CDK calls ``try_bundle`` before it would fall back to Docker. It never returns False:
    a failure raises, because the Docker fallback cannot work here and would only hide the
    real error."""

    def __init__(
        self,
        mode: BundlingMode,
        layout: AssetLayout,
        references: Mapping[str, str] | None = None,
        wheels: WheelTarget = LAMBDA_WHEELS,
    ) -> None:
        self.mode = mode
        self.layout = layout
        self.references = dict(references or {})
        self.wheels = wheels

    def try_bundle(self, output_dir: str, *, image: DockerImage, **_options: Any) -> bool:
        """jsii passes the ``BundlingOptions`` struct as keywords; none of them is used."""
        target = Path(output_dir)
        if self.mode is BundlingMode.PIP:
            # The closure exactly as locked: every wheel pinned and hash-checked. The hashes
            # are of Lambda's wheels; another platform's get the same pins without them.
            locked = (
                ["--require-hashes", "-r", str(LOCK_FILE)]
                if self.wheels == LAMBDA_WHEELS
                else [line.split(" ", 1)[0] for line in locked_requirements()]
            )
            commands = [pip_command("install", target, ["--no-deps", *locked], self.wheels)]
            if self.layout.requirements:
                commands.append(
                    pip_command("install", target, list(self.layout.requirements), self.wheels)
                )
            for command in commands:
                result = subprocess.run(  # noqa: S603 - fixed argv, no shell
                    command, capture_output=True, text=True, check=False
                )
                if result.returncode != 0:
                    raise RuntimeError(
                        f"pip install for the Lambda asset failed:\n{result.stderr[-4000:]}"
                    )
            shutil.rmtree(target / "bin", ignore_errors=True)  # console scripts: unused
        self.layout.copy_sources(target)
        # What was checked before the synth started, checked again on the built folder.
        self.layout.check(self.references, in_dir=target)
        precompile(target, self.wheels.python_version)
        return True


def lambda_code(
    mode: BundlingMode, layout: AssetLayout, references: Mapping[str, str] | None = None
) -> lambda_.AssetCode:
    """The one code asset of a saga's functions (each sets its own handler)."""
    return lambda_.Code.from_asset(
        str(layout.project_root),
        asset_hash=layout.asset_hash(mode),
        asset_hash_type=AssetHashType.CUSTOM,
        bundling=BundlingOptions(
            # Required by the API; never pulled, since local bundling always succeeds or raises.
            image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"),
            local=LocalPythonBundling(mode, layout, references),
        ),
    )


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    if sys.argv[1:] != ["--lock"]:
        raise SystemExit("usage: python -m stepsaga.cdk._bundling --lock")
    print("\n".join(write_lock()))
