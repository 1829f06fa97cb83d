"""cdk-nag ``AwsSolutionsChecks`` (applied by ``infra.app.build``): nothing unsuppressed,
and every suppression says why in words."""

from __future__ import annotations

import csv
from typing import Any

from aws_cdk.assertions import Match

from tests.framework.infra.conftest import Synthesized


def _messages(found: list[Any]) -> list[str]:
    return [f"{m.id}: {m.entry.data}" for m in found]


def test_cdk_nag_ran_on_the_stack(synthesized: Synthesized) -> None:
    (report,) = synthesized.outdir.glob("AwsSolutions-*-NagReport.csv")
    with report.open() as f:
        rows = list(csv.DictReader(f))
    rules = {row["Rule ID"] for row in rows}
    # The rules that matter most here were evaluated (not skipped as not applicable).
    assert {"AwsSolutions-IAM5", "AwsSolutions-L1", "AwsSolutions-SF1", "AwsSolutions-SF2"} <= rules
    assert {"AwsSolutions-SNS3", "AwsSolutions-KMS5", "AwsSolutions-DDB3"} <= rules
    assert not [row for row in rows if row["Compliance"] == "Non-Compliant"]


def test_no_unsuppressed_nag_errors(synthesized: Synthesized) -> None:
    errors = synthesized.annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert _messages(errors) == []


def test_no_unsuppressed_nag_warnings(synthesized: Synthesized) -> None:
    warnings = synthesized.annotations.find_warning(
        "*", Match.string_like_regexp("AwsSolutions-.*")
    )
    assert _messages(warnings) == []


def test_every_suppression_has_a_written_reason(synthesized: Synthesized) -> None:
    suppressions = [
        rule
        for resource in synthesized.json["Resources"].values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    ]
    assert suppressions, "the stack documents its AWS-required wildcards"
    for rule in suppressions:
        assert rule["id"].startswith("AwsSolutions-")
        assert len(rule["reason"].split()) >= 8, rule
        assert rule.get("applies_to"), f"{rule['id']} must name the exact findings it covers"
