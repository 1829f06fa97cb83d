"""``Step(dual_control=True)``: declared on the step (a per-item or parallel member too),
refused where no item can ever be opened, carried into the actions ``stop`` settles."""

from __future__ import annotations

import pytest

from stepsaga import Compensate, EffectClass, Escalate, ForEach, Parallel, Saga, Step
from stepsaga.backends._assemble import CaseIdentity, planned_actions
from stepsaga.errors import SagaDefinitionError


def refund(name: str = "Refund", **more: object) -> Step:
    return Step(
        name,
        operation="refund",
        effect=EffectClass.KEYED_WRITE,
        on_later_failure=Escalate("refund issued, order not shipped"),
        **more,  # type: ignore[arg-type]
    )


def test_a_read_step_cannot_take_dual_control() -> None:
    with pytest.raises(SagaDefinitionError, match="dual_control needs an effect"):
        Step("Look", effect=EffectClass.READ, dual_control=True)


def test_dual_control_must_be_a_bool() -> None:
    with pytest.raises(SagaDefinitionError, match="dual_control must be True or False"):
        refund(dual_control="yes")


def test_members_of_groups_carry_it_into_the_planned_actions() -> None:
    release = Compensate("Release", operation="release", effect=EffectClass.KEYED_WRITE)
    saga = Saga(
        name="s",
        steps=[
            Parallel(
                "Both",
                branches=[
                    [refund(dual_control=True)],
                    [
                        Step(
                            "Reserve",
                            operation="reserve",
                            effect=EffectClass.KEYED_WRITE,
                            on_later_failure=release,
                        )
                    ],
                ],
            ),
            ForEach(
                "Lines",
                items="lines",
                item_key="id",
                step=Step(
                    "PayLine",
                    operation="pay_line",
                    effect=EffectClass.KEYED_WRITE,
                    on_later_failure=Compensate(
                        "Unpay", operation="unpay", effect=EffectClass.KEYED_WRITE
                    ),
                    dual_control=True,
                ),
            ),
        ],
    )
    case = CaseIdentity("acme", "C-1", 1, {"lines": [{"id": "L1"}]})
    flags = {(a.state, a.operation): a.dual_control for a in planned_actions(saga, case)}
    assert flags[("Refund", "refund")] is True
    assert flags[("Reserve", "reserve")] is False
    assert flags[("Release", "release")] is False
    assert flags[("PayLine", "pay_line#L1")] is True
    assert flags[("Unpay", "unpay")] is True  # a compensation's items follow its step
