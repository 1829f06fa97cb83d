"""The approved case: the only trusted source of tenant, case and intent.

Every saga's input model extends ``ApprovedCase`` (tenant, case id, approval with its
revision, approver and time): the framework reads identity from there, never from free
text. Validated at the boundary (CLI ``start``, the AWS backend, handlers' events); unknown
fields are rejected so a typo never silently drops a consequential parameter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
)

from stepsaga._model.approval_time import ApprovedAt
from stepsaga._model.inputs import read_json_file, validate_object
from stepsaga._model.person import PersonId
from stepsaga._util.timestamps import iso_z_seconds
from stepsaga.errors import InvalidInputError
from stepsaga.ledger._models import MAX_REVISION

#: Identifiers become parts of ledger keys and execution names: keep them to safe characters.
TenantId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,31}$")]
CaseId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$")]
Reference = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")]
Text = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]

MAX_CASE_FILE_BYTES = 64 * 1024


class StrictModel(BaseModel):
    """Frozen, strict about unknown fields, strips whitespace: the base of every case model."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class CaseApproval(StrictModel):
    approved_by: PersonId
    approved_at: ApprovedAt
    revision: int = Field(ge=1, le=MAX_REVISION, strict=True)


class ApprovedCase(StrictModel):
    """The identity every saga input carries: whose case, which one, which approved intent.

    Extend it with the saga's own fields (``class Upgrade(ApprovedCase): plan: Plan``);
    override ``execution_input`` to canonicalize values (money) before the state machine
    sees them, calling ``super().execution_input()`` first.
    """

    tenant_id: TenantId
    case_id: CaseId
    approval: CaseApproval

    def execution_input(self) -> dict[str, Any]:
        """The JSON the state machine starts with: ISO timestamps, no ``None`` fields."""
        data = self.model_dump(mode="json", exclude_none=True)
        data["approval"]["approved_at"] = iso_z_seconds(self.approval.approved_at)
        return data


class OpenCase(ApprovedCase):
    """The input of a saga that declares no ``input_model``: identity checked, the rest
    passed through as given."""

    model_config = ConfigDict(extra="allow", frozen=True, str_strip_whitespace=True)


C = TypeVar("C", bound=ApprovedCase)


def parse_case(data: object, model: type[C]) -> C:
    """Validate already-decoded JSON; raises ``InvalidInputError`` with the field named.

    A nested model that says nothing about unknown fields (a plain ``BaseModel``) refuses
    them too (:func:`unknown_fields`): pydantic would drop them silently, and a dropped
    field is a consequential parameter the saga never sees. A model that sets ``extra``
    itself (``"allow"``, ``"ignore"``) is taken at its word."""
    if not (isinstance(model, type) and issubclass(model, ApprovedCase)):
        raise TypeError(f"{model!r} is not an ApprovedCase model")
    case = validate_object(model.model_validate, data, "case")
    dropped = unknown_fields(case, data)
    if dropped:
        lines = [f"{path}: Extra inputs are not permitted" for path in dropped]
        raise InvalidInputError("; ".join(lines), field=dropped[0], problems=lines)
    return case


def unknown_fields(value: object, data: object, path: str = "") -> list[str]:
    """The input's keys a nested model without its own ``extra`` setting dropped."""
    found: list[str] = []
    if isinstance(value, BaseModel) and isinstance(data, dict):
        fields = type(value).model_fields
        known: dict[str, str] = {}
        for name, info in fields.items():
            known[name] = name
            if isinstance(info.alias, str):
                known[info.alias] = name
        if "extra" not in type(value).model_config:
            found += [_join(path, key) for key in data if key not in known]
        for key, item in data.items():
            if key in known:
                found += unknown_fields(getattr(value, known[key]), item, _join(path, key))
    elif isinstance(value, list | tuple) and isinstance(data, list):
        for index, (member, item) in enumerate(zip(value, data, strict=False)):
            found += unknown_fields(member, item, _join(path, str(index)))
    elif isinstance(value, dict) and isinstance(data, dict):
        for key, item in data.items():
            if key in value:
                found += unknown_fields(value[key], item, _join(path, str(key)))
    return found


def _join(path: str, part: str) -> str:
    return f"{path}.{part}" if path else part


def load_case(path: Path, model: type[C]) -> C:
    """Read and validate a case file; every failure is one ``InvalidInputError`` line."""
    data = read_json_file(path, what="case file", max_bytes=MAX_CASE_FILE_BYTES)
    return parse_case(data, model)
