"""``ctx.secrets.get(variable)`` on moto: Secrets Manager and SSM by the name the construct
put in the environment; unconfigured names are one clear line; values never in messages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from stepsaga._aws.secrets import ENV_SECRET_SOURCES, Secrets
from stepsaga._project.dependencies import AwsContext
from stepsaga._util.clock import SystemClock
from stepsaga.errors import InvalidInputError, TransientError

REGION = "us-east-1"


@pytest.fixture
def stores() -> Iterator[dict[str, str]]:
    parameters.clear_caches()  # type: ignore[no-untyped-call]
    with mock_aws():
        sm = boto3.client("secretsmanager", region_name=REGION)
        arn = sm.create_secret(Name="acme/token", SecretString="s3cr3t-token")["ARN"]
        ssm = boto3.client("ssm", region_name=REGION)
        ssm.put_parameter(Name="/acme/api-key", Value="k3y-value", Type="SecureString")
        yield {
            "ACME_TOKEN_ARN": arn,
            "ACME_API_KEY_PARAMETER": "/acme/api-key",
            ENV_SECRET_SOURCES: json.dumps(
                {"ACME_TOKEN_ARN": "secretsmanager", "ACME_API_KEY_PARAMETER": "ssm"}
            ),
            "AWS_DEFAULT_REGION": REGION,
        }
    parameters.clear_caches()  # type: ignore[no-untyped-call]


def test_dependencies_read_both_stores_through_the_context(stores: dict[str, str]) -> None:
    ctx = AwsContext(clock=SystemClock(), environ=stores)
    assert ctx.secrets.get("ACME_TOKEN_ARN") == "s3cr3t-token"
    assert ctx.secrets.get("ACME_API_KEY_PARAMETER") == "k3y-value"
    assert "s3cr3t" not in repr(ctx.secrets)


def test_an_unconfigured_secret_names_what_is_configured(stores: dict[str, str]) -> None:
    secrets = Secrets.from_environ(stores)
    with pytest.raises(InvalidInputError) as caught:
        secrets.get("ACME_OTHER")
    assert caught.value.message == (
        "secret ACME_OTHER: not configured for this function "
        "(its secrets: ACME_API_KEY_PARAMETER, ACME_TOKEN_ARN)"
    )


def test_a_failing_read_is_transient_and_quotes_no_value(stores: dict[str, str]) -> None:
    def broken(store: Any, reference: str) -> str:
        raise RuntimeError("the SDK said: s3cr3t-token")

    secrets = Secrets.from_environ(stores, fetch=broken)
    with pytest.raises(TransientError) as caught:
        secrets.get("ACME_TOKEN_ARN")
    assert "s3cr3t" not in caught.value.message
    assert caught.value.message == (
        "secret ACME_TOKEN_ARN: could not be read from secretsmanager (RuntimeError)"
    )


def test_malformed_sources_are_one_line() -> None:
    with pytest.raises(InvalidInputError, match=f"^{ENV_SECRET_SOURCES}: not a JSON object"):
        Secrets.from_environ({ENV_SECRET_SOURCES: '{"X": "vault"}'})
