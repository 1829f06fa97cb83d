"""The resolver behind an ``AWS_IAM`` function URL, in process (moto serves no function URLs).

:class:`FunctionUrl` is an ``httpx`` transport doing what Lambda does before the function
runs: it reads the SigV4 ``Authorization`` header (signing name ``lambda``), finds whose
access key signed it (``people``: key → the identity STS issued it to), refuses an unsigned
or unknown request with 403 without calling the function, and otherwise builds the payload
2.0 event with that identity in ``requestContext.authorizer.iam``. Nothing of the body
reaches the identity. ``operator(...)`` switches the process's credentials to a person's key,
as an operator's own shell would have them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import httpx
import pytest

from stepsaga._aws.resolver import Resolver
from stepsaga.backends._aws import AwsBackend, AwsSettings, FixedClients
from stepsaga.backends._aws import decisions as decisions_module
from stepsaga.backends._aws.operators import CallerIdentity
from tests.framework.functional.aws_support import ACCOUNT, REGION, FakeAws, RedrivingSfn
from workflows.project import reference_project

RESOLVER_URL = "https://resolver.lambda-url.us-east-1.on.aws/"
_CREDENTIAL = re.compile(r"Credential=([^/,]+)/\d{8}/[a-z0-9-]+/lambda/aws4_request")


def person(role: str, session: str) -> tuple[str, CallerIdentity]:
    """An operator's access key and the identity Lambda would see for it."""
    arn = f"arn:aws:sts::{ACCOUNT}:assumed-role/{role}/{session}"
    key = "ASIA" + hashlib.sha256(arn.encode()).hexdigest()[:16].upper()
    return key, CallerIdentity(arn, ACCOUNT, f"AROA{role.upper()}:{session}")


@dataclass
class FunctionUrl(httpx.BaseTransport):
    resolver: Resolver
    people: dict[str, CallerIdentity] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        found = _CREDENTIAL.search(request.headers.get("authorization", ""))
        caller = self.people.get(found.group(1)) if found else None
        if caller is None:
            return httpx.Response(403, json={"Message": "Forbidden"})
        event = {
            "version": "2.0",
            "rawPath": request.url.path,
            "requestContext": {
                "http": {"method": request.method},
                "authorizer": {
                    "iam": {
                        "accessKey": found.group(1) if found else "",
                        "accountId": caller.account,
                        "callerId": caller.user_id,
                        "userArn": caller.arn,
                        "userId": caller.user_id,
                    }
                },
            },
            "body": request.content.decode(),
            "isBase64Encoded": False,
        }
        self.events.append(event)
        answer = self.resolver.handle(event)
        return httpx.Response(
            answer["statusCode"], headers=answer["headers"], content=answer["body"].encode()
        )


@dataclass
class Deployed:
    """The fake stack with its resolver: ``backend()`` is an operator's CLI backend."""

    aws: FakeAws
    url: FunctionUrl
    monkeypatch: pytest.MonkeyPatch

    @property
    def settings(self) -> AwsSettings:
        return AwsSettings(
            self.aws.state_machine_arn,
            self.aws.settings.ledger_table_name,
            self.aws.settings.reconciliation_topic_arn,
            resolver_url=RESOLVER_URL,
        )

    def backend(self, **changes: Any) -> AwsBackend:
        changes.setdefault("sleeper", self.aws.sleeps.append)
        return AwsBackend(
            self.settings,
            project=reference_project(),
            clients=FixedClients(self.aws.sfn, self.aws.ddb, self.aws.cfn),
            wait_seconds=0,
            **changes,
        )

    def add(self, role: str, session: str) -> str:
        key, identity = person(role, session)
        self.url.people[key] = identity
        return key

    @contextmanager
    def operator(self, key: str) -> Iterator[None]:
        """The process signs with ``key`` (boto3's chain reads the environment)."""
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("AWS_ACCESS_KEY_ID", key)
            patch.setenv("AWS_SECRET_ACCESS_KEY", "secret-of-" + key)
            patch.delenv("AWS_SESSION_TOKEN", raising=False)
            yield


def deploy_resolver(aws: FakeAws, monkeypatch: pytest.MonkeyPatch) -> Deployed:
    """The resolver over the fake stack, reachable at ``RESOLVER_URL`` from any client."""

    def server() -> AwsBackend:
        """As on Lambda: the function's own clients, made at its first request."""
        sfn = RedrivingSfn(boto3.client("stepfunctions", region_name=REGION))
        ddb = boto3.client("dynamodb", region_name=REGION)
        return AwsBackend(
            aws.settings,
            project=reference_project(),
            clients=FixedClients(sfn, ddb),  # type: ignore[arg-type]
            wait_seconds=0,
        )

    url = FunctionUrl(Resolver(server))
    monkeypatch.setattr(decisions_module, "default_transport", url)
    return Deployed(aws, url, monkeypatch)


@pytest.fixture
def stack(aws: FakeAws, monkeypatch: pytest.MonkeyPatch) -> Deployed:
    """The fake stack (the test module's ``aws`` fixture) with its resolver."""
    return deploy_resolver(aws, monkeypatch)
