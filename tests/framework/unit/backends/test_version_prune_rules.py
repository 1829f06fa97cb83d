"""Whatever versions, aliases and executions a state machine has, ``prune_versions`` never
deletes one a case needs. An in-memory Step Functions with AWS's semantics for the five
calls (paged, filtered by version and status; a delete of an aliased version refused)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from stepsaga.backends._aws.versions import REDRIVE_WINDOW, prune_versions

MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:dev-saga"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")


@dataclass
class FakeStepFunctions:
    versions: list[int]
    aliases: dict[str, int]
    #: (version, status, days since it stopped; None while running)
    executions: list[tuple[int, str, float | None]]
    page: int = 2
    deleted: list[int] = field(default_factory=list)

    def _paged(self, items: list[Any], key: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        start = int(kwargs.get("nextToken", 0))
        size = min(self.page, kwargs.get("maxResults", self.page))
        page: dict[str, Any] = {key: items[start : start + size]}
        if start + size < len(items):
            page["nextToken"] = str(start + size)
        return page

    def list_state_machine_versions(self, **kwargs: Any) -> dict[str, Any]:
        assert kwargs["stateMachineArn"] == MACHINE
        items = [{"stateMachineVersionArn": f"{MACHINE}:{v}"} for v in self.versions]
        return self._paged(items, "stateMachineVersions", kwargs)

    def list_state_machine_aliases(self, **kwargs: Any) -> dict[str, Any]:
        items = [{"stateMachineAliasArn": f"{MACHINE}:{a}"} for a in self.aliases]
        return self._paged(items, "stateMachineAliases", kwargs)

    def describe_state_machine_alias(self, stateMachineAliasArn: str) -> dict[str, Any]:  # noqa: N803
        version = self.aliases[stateMachineAliasArn.rpartition(":")[2]]
        route = {"stateMachineVersionArn": f"{MACHINE}:{version}", "weight": 100}
        return {"routingConfiguration": [route]}

    def list_executions(self, **kwargs: Any) -> dict[str, Any]:
        version = int(kwargs["stateMachineArn"].rpartition(":")[2])
        items = [
            {
                "name": f"run-{i}",
                "status": status,
                **({"stopDate": NOW - timedelta(days=ago)} if ago is not None else {}),
            }
            for i, (v, status, ago) in enumerate(self.executions)
            if v == version and status == kwargs["statusFilter"]
        ]
        return self._paged(items, "executions", kwargs)

    def delete_state_machine_version(self, stateMachineVersionArn: str) -> None:  # noqa: N803
        version = int(stateMachineVersionArn.rpartition(":")[2])
        if version in self.aliases.values():
            error = {"Error": {"Code": "ConflictException", "Message": "aliased"}}
            raise ClientError(error, "DeleteStateMachineVersion")  # type: ignore[arg-type]
        self.versions.remove(version)
        self.deleted.append(version)


@st.composite
def machines(draw: st.DrawFn) -> FakeStepFunctions:
    versions = draw(st.lists(st.integers(1, 40), min_size=1, max_size=12, unique=True))
    aliases = draw(
        st.dictionaries(st.sampled_from(["live", "canary", "old"]), st.sampled_from(versions))
    )
    executions = draw(
        st.lists(
            st.tuples(
                st.sampled_from(versions),
                st.sampled_from(STATUSES),
                st.floats(0, 30),
            ).map(lambda e: (e[0], e[1], None if e[1] == "RUNNING" else e[2])),
            max_size=15,
        )
    )
    return FakeStepFunctions(sorted(versions, reverse=draw(st.booleans())), aliases, executions)


@settings(max_examples=150, deadline=None)
@given(fake=machines(), keep=st.integers(1, 5), dry_run=st.booleans())
def test_prune_never_deletes_a_version_a_case_needs(
    fake: FakeStepFunctions, keep: int, dry_run: bool
) -> None:
    before = sorted(fake.versions, reverse=True)
    view = prune_versions(fake, MACHINE, keep=keep, now=NOW, dry_run=dry_run)  # type: ignore[arg-type]
    needed = set(before[:keep]) | set(fake.aliases.values())
    for version, status, ago in fake.executions:
        if status == "RUNNING" or (
            status in ("FAILED", "TIMED_OUT", "ABORTED")
            and ago is not None
            and timedelta(days=ago) <= REDRIVE_WINDOW
        ):
            needed.add(version)
    assert not needed & set(fake.deleted)
    expected_gone = set() if dry_run else set(before) - needed
    assert set(fake.deleted) == expected_gone  # and everything else old went
    assert {row.version for row in view.versions} == set(before)
    assert not view.refused
