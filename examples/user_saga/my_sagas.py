"""A user's saga (the example of docs/how-to/write-a-saga.md): issue a return label, refund."""

from stepsaga import Compensate, EffectClass, Escalate, Saga, Step

returns = Saga(
    "returns",
    [
        Step(
            "IssueLabel",
            "issue_label",
            EffectClass.KEYED_WRITE,
            params="label",
            on_later_failure=Compensate("VoidLabel", "void_label", EffectClass.KEYED_WRITE),
        ),
        Step(
            "RefundPayment",
            "refund_payment",
            EffectClass.KEYED_WRITE,
            params="refund",
            on_later_failure=Escalate("refund issued, return not received"),
        ),
    ],
)
