"""``stepsaga.cdk`` deploys any project's saga: two sagas of one stage in one app, the app's
own function settings, and a synth that refuses an asset lacking a module it would load."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import NagSuppressions
from cfnlint.api import ManualArgs, lint
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

from stepsaga._aws import auto_redrive
from stepsaga._aws.secrets import ENV_SECRET_SOURCES
from stepsaga._aws.signing import ENV_SIGNED_APIS
from stepsaga._project import deployment
from stepsaga._project.project import Project
from stepsaga.cdk import (
    AutoRedrive,
    Backup,
    BundlingMode,
    FunctionSettings,
    SagaStack,
    SignedApi,
    SignedService,
    StageSettings,
)
from stepsaga.cdk._access import APP_WRITE_ACTIONS
from stepsaga.cdk._alarms import RULES
from stepsaga.cdk._stack import BACKUP_BACKUP_ACTIONS, BACKUP_TABLE_ACTIONS
from stepsaga.errors import DeploymentError
from tests.framework.infra.test_cfn_lint import IGNORED

SAGAS = """
from stepsaga import EffectClass, Escalate, Saga, Step

alpha = Saga(
    name="alpha-order",
    steps=[
        Step("ChargeCard", operation="charge_card", effect=EffectClass.KEYED_WRITE,
             on_later_failure=Escalate("charged"), handler="acme_tasks.charge:ChargeCard"),
        Step("Notify", operation="notify", effect=EffectClass.BLIND_WRITE,
             on_later_failure=Escalate("sent"), handler="acme_tasks.notify:Notify"),
    ],
)
beta = Saga(
    name="beta-refresh",
    steps=[Step("Lookup", effect=EffectClass.READ, handler="acme_tasks.lookup:Lookup")],
)
broken = Saga(
    name="broken",
    steps=[Step("Ghost", effect=EffectClass.READ, handler="acme_tasks.ghost:Ghost")],
)
"""

PYPROJECT = """
[project]
name = "acme"
version = "0.1.0"

[tool.stepsaga]
dependencies = "acme_clients:dependencies"

[tool.stepsaga.sagas]
alpha-order = "acme_flows.sagas:alpha"
beta-refresh = "acme_flows.sagas:beta"
broken = "acme_flows.sagas:broken"
"""


TOKEN_ARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:acme/token-AbCdEf"
API_KEY_PARAMETER = "/acme/billing/api-key"
#: The app's IAM-authorized services: an API Gateway route and a function URL.
PAYMENTS_API = SignedApi(
    url="https://a1b2c3.execute-api.eu-west-1.amazonaws.com/prod",
    resources=("arn:aws:execute-api:eu-west-1:111122223333:a1b2c3/prod/POST/refunds",),
)
NOTIFIER_FUNCTION_ARN = "arn:aws:lambda:eu-west-1:111122223333:function:acme-notifier"
NOTIFIER_API = SignedApi(
    url="https://n0t1f13r.lambda-url.eu-west-1.on.aws",
    resources=(NOTIFIER_FUNCTION_ARN,),
    service=SignedService.LAMBDA,
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """A team's project outside this repository, with package names of its own."""
    root = tmp_path_factory.mktemp("acme")
    (root / "pyproject.toml").write_text(PYPROJECT)
    for package, files in {
        "acme_flows": {"sagas.py": textwrap.dedent(SAGAS)},
        # Handlers are named, never imported, by the synth: stubs are enough.
        "acme_tasks": {f"{m}.py": "" for m in ("charge", "notify", "lookup")},
    }.items():
        (root / package).mkdir()
        (root / package / "__init__.py").write_text("")
        for name, text in files.items():
            (root / package / name).write_text(text)
    (root / "acme_clients.py").write_text("dependencies = None\n")
    (root / "acme_tests").mkdir()  # not referenced: never bundled
    (root / "acme_tests" / "test_x.py").write_text("")
    yield Project.load(root)
    sys.path[:] = [p for p in sys.path if p != str(root)]
    for name in [m for m in sys.modules if m.split(".")[0] == "acme_flows"]:
        del sys.modules[name]


@dataclass(frozen=True)
class TwoSagas:
    alpha: SagaStack
    beta: SagaStack
    outdir: Path

    def template(self, stack: SagaStack) -> dict[str, Any]:
        return dict(Template.from_stack(stack).to_json())

    def resources(self, stack: SagaStack, type_name: str) -> dict[str, Any]:
        return {
            k: v for k, v in self.template(stack)["Resources"].items() if v["Type"] == type_name
        }


@pytest.fixture(scope="module")
def two_sagas(project: Project, tmp_path_factory: pytest.TempPathFactory) -> TwoSagas:
    outdir = tmp_path_factory.mktemp("two.out")
    app = App(outdir=str(outdir))
    settings = StageSettings(bundling=BundlingMode.SOURCES)

    def send_to_queue(function: Any) -> None:
        queue = sqs.Queue(
            function.stack, "Outbox", enforce_ssl=True, encryption=sqs.QueueEncryption.SQS_MANAGED
        )
        NagSuppressions.add_resource_suppressions(
            queue,
            [
                {
                    "id": "AwsSolutions-SQS3",
                    "reason": "A test queue of the app's own: no dead-letter queue is needed.",
                }
            ],
        )
        queue.grant_send_messages(function)

    shared = Stack(app, "AcmeShared")
    token = secretsmanager.Secret.from_secret_complete_arn(shared, "Token", TOKEN_ARN)
    api_key = ssm.StringParameter.from_secure_string_parameter_attributes(
        shared, "ApiKey", parameter_name=API_KEY_PARAMETER
    )
    alpha = SagaStack(
        app,
        project=project,
        saga="alpha-order",
        settings=replace(
            settings,
            auto_redrive=AutoRedrive(max_redrives=5, base_delay_seconds=30, max_concurrency=3),
            reserved_concurrency=20,
            ingress_max_concurrency=7,
            execution_timeout_seconds=14 * 24 * 3600,
            tags={"team": "payments", "cost-center": "cc-42"},
            backup=Backup(retention_days=35, hour_utc=2),
        ),
        defaults=FunctionSettings(environment={"ACME_BILLING_URL": "https://billing.example"}),
        functions={
            "ChargeCard": FunctionSettings(
                environment={"ACME_MODE": "strict"},
                grant=send_to_queue,
                memory_mb=1024,
                reserved_concurrency=50,
                parameters={"ACME_API_KEY_PARAMETER": api_key},
                signed_apis={"ACME_PAYMENTS_API_URL": PAYMENTS_API},
            ),
            "Notify": FunctionSettings(
                ledger_write_prefixes=("SESSION#",),
                secrets={"ACME_TOKEN_ARN": token},
                signed_apis={"ACME_NOTIFIER_URL": NOTIFIER_API},
            ),
        },
    )
    beta = SagaStack(
        app,
        project=project,
        saga="beta-refresh",
        settings=replace(settings, auto_redrive=None, canary=None),
    )
    app.synth()
    return TwoSagas(alpha=alpha, beta=beta, outdir=outdir)


def test_two_sagas_of_one_stage_get_their_own_names(two_sagas: TwoSagas) -> None:
    assert two_sagas.alpha.stack_name == "stepsaga-dev-alpha-order"
    assert two_sagas.beta.stack_name == "stepsaga-dev-beta-refresh"
    names = set()
    for stack in (two_sagas.alpha, two_sagas.beta):
        (machine,) = two_sagas.resources(stack, "AWS::StepFunctions::StateMachine").values()
        names.add(machine["Properties"]["StateMachineName"])
    assert names == {"dev-alpha-order", "dev-beta-refresh"}


def test_functions_run_the_generic_entry_with_the_projects_references(
    two_sagas: TwoSagas,
) -> None:
    functions = two_sagas.resources(two_sagas.alpha, "AWS::Lambda::Function").values()
    saga_functions = {
        f["Properties"]["Environment"]["Variables"].get(deployment.ENV_FUNCTION): f
        for f in functions
    }
    assert set(saga_functions) == {"ChargeCard", "Notify", "Reconcile", None}  # None: check
    for name in ("ChargeCard", "Notify", "Reconcile"):
        properties = saga_functions[name]["Properties"]
        assert properties["Handler"] == deployment.LAMBDA_HANDLER
        variables = properties["Environment"]["Variables"]
        assert variables[deployment.ENV_SAGA] == "acme_flows.sagas:alpha"
        assert variables[deployment.ENV_DEPENDENCIES] == "acme_clients:dependencies"
        assert variables["ACME_BILLING_URL"] == "https://billing.example"  # the defaults
    charge = saga_functions["ChargeCard"]["Properties"]
    assert charge["Environment"]["Variables"]["ACME_MODE"] == "strict"
    assert charge["MemorySize"] == 1024
    assert "ACME_MODE" not in saga_functions["Notify"]["Properties"]["Environment"]["Variables"]
    assert "ACME_BILLING_URL" not in json.dumps(saga_functions[None])  # the check is ours


def test_auto_redrive_takes_its_bounds_from_the_settings_and_none_turns_it_off(
    two_sagas: TwoSagas,
) -> None:
    def redrivers(stack: SagaStack) -> list[dict[str, str]]:
        return [
            f["Properties"]["Environment"]["Variables"]
            for f in two_sagas.resources(stack, "AWS::Lambda::Function").values()
            if f["Properties"]["Handler"] == "stepsaga.lambdas.auto_redrive"
        ]

    (alpha,) = redrivers(two_sagas.alpha)
    assert alpha[auto_redrive.ENV_MAX_REDRIVES] == "5"
    assert alpha[auto_redrive.ENV_BASE_DELAY_SECONDS] == "30"
    assert redrivers(two_sagas.beta) == []
    beta = two_sagas.template(two_sagas.beta)["Resources"]
    assert not [k for k in beta if k.startswith("AutoRedrive")]
    assert not [
        r
        for r in beta.values()
        if r["Type"] == "AWS::Events::Rule" and "EventPattern" in r["Properties"]
    ]


def test_concurrency_and_the_execution_timeout_come_from_the_settings(
    two_sagas: TwoSagas,
) -> None:
    """Reserved concurrency per saga function (the stage's, or the function's own), the
    queue triggers' ``MaximumConcurrency``, the execution's ``TimeoutSeconds``."""
    for stack, reserved, ingress_max, redrive_max, timeout in (
        (two_sagas.alpha, {"ChargeCard": 50, "Notify": 20, "Reconcile": 20}, 7, 3, 14 * 86400),
        (two_sagas.beta, {"Lookup": None}, 5, None, 30 * 86400),
    ):
        functions = two_sagas.resources(stack, "AWS::Lambda::Function").values()
        by_name = {
            f["Properties"]["Environment"]["Variables"].get(deployment.ENV_FUNCTION): f
            for f in functions
        }
        for name, expected in reserved.items():
            assert by_name[name]["Properties"].get("ReservedConcurrentExecutions") == expected
        mappings = two_sagas.resources(stack, "AWS::Lambda::EventSourceMapping").values()
        queues = [m for m in mappings if "StreamArn" not in json.dumps(m)]  # not the audit's
        maxima = sorted(m["Properties"]["ScalingConfig"]["MaximumConcurrency"] for m in queues)
        assert maxima == sorted(m for m in (ingress_max, redrive_max) if m is not None)
        (machine,) = two_sagas.resources(stack, "AWS::StepFunctions::StateMachine").values()
        assert json.loads(machine["Properties"]["DefinitionString"])["TimeoutSeconds"] == timeout


def test_the_settings_tags_reach_every_taggable_resource(two_sagas: TwoSagas) -> None:
    wanted = {"team": "payments", "cost-center": "cc-42", "stepsaga:saga": "alpha-order"}
    resources = two_sagas.template(two_sagas.alpha)["Resources"]
    for logical_id, resource in resources.items():
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", resource["Type"])
        fields = ("Tags", "BackupPlanTags", "BackupVaultTags")
        field = next((f for f in fields if f in schema.schema.get("properties", {})), None)
        if field is None:
            continue
        tags = resource["Properties"].get(field, [])
        found = {t["Key"]: t["Value"] for t in tags} if isinstance(tags, list) else dict(tags)
        assert wanted.items() <= found.items(), logical_id


def test_a_backup_plan_when_asked_and_canary_releases_unless_turned_off(
    two_sagas: TwoSagas,
) -> None:
    (table_id,) = two_sagas.resources(two_sagas.alpha, "AWS::DynamoDB::Table")
    (plan,) = two_sagas.resources(two_sagas.alpha, "AWS::Backup::BackupPlan").values()
    (rule,) = plan["Properties"]["BackupPlan"]["BackupPlanRule"]
    assert rule["ScheduleExpression"] == "cron(0 2 * * ? *)"
    assert rule["Lifecycle"] == {"DeleteAfterDays": 35}
    (selection,) = two_sagas.resources(two_sagas.alpha, "AWS::Backup::BackupSelection").values()
    assert selection["Properties"]["BackupSelection"]["Resources"] == [
        {"Fn::GetAtt": [table_id, "Arn"]}
    ]
    assert two_sagas.resources(two_sagas.alpha, "AWS::CodeDeploy::DeploymentGroup")
    beta = two_sagas.template(two_sagas.beta)["Resources"]
    kinds = ("AWS::Backup::", "AWS::CodeDeploy::")
    assert not [r for r in beta.values() if r["Type"].startswith(kinds)]
    assert not [r for r in beta.values() if "UpdatePolicy" in r]


def test_the_backup_role_is_inline_on_the_ledger_table_and_nag_and_cfn_lint_clean(
    two_sagas: TwoSagas,
) -> None:
    """No AWS managed policy (``AWSBackupServiceRolePolicyForBackup`` reaches every table of
    the account): the selection's role names the backup actions on this table and its
    backups, nothing else; cdk-nag finds nothing on the backup resources and cfn-lint passes
    the template that has them."""
    (table_id,) = two_sagas.resources(two_sagas.alpha, "AWS::DynamoDB::Table")
    (selection,) = two_sagas.resources(two_sagas.alpha, "AWS::Backup::BackupSelection").values()
    role_id = selection["Properties"]["BackupSelection"]["IamRoleArn"]["Fn::GetAtt"][0]
    role = two_sagas.template(two_sagas.alpha)["Resources"][role_id]
    assert "ManagedPolicyArns" not in role["Properties"]
    principal = role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]
    assert principal == {"Service": "backup.amazonaws.com"}
    (policy,) = role["Properties"]["Policies"]
    table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
    assert policy["PolicyDocument"]["Statement"] == [
        {
            "Sid": "BackUpTheLedger",
            "Effect": "Allow",
            "Action": list(BACKUP_TABLE_ACTIONS),
            "Resource": table_arn,
        },
        {
            "Sid": "ItsBackups",
            "Effect": "Allow",
            "Action": list(BACKUP_BACKUP_ACTIONS),
            "Resource": {"Fn::Join": ["", [table_arn, "/backup/*"]]},
        },
    ]
    # Only the selection uses the role: no other policy attaches to it.
    policies = two_sagas.resources(two_sagas.alpha, "AWS::IAM::Policy").values()
    assert not [p for p in policies if {"Ref": role_id} in p["Properties"]["Roles"]]
    rules = json.dumps(two_sagas.template(two_sagas.alpha))
    assert "AwsSolutions-IAM4" not in rules
    assert "AWSBackupServiceRolePolicyForBackup" not in rules
    nag = Annotations.from_stack(two_sagas.alpha)
    for found in (
        nag.find_error("*", Match.string_like_regexp("AwsSolutions-.*")),
        nag.find_warning("*", Match.string_like_regexp("AwsSolutions-.*")),
    ):
        assert [m.id for m in found if "Backup" in m.id] == []
    matches = lint(
        json.dumps(two_sagas.template(two_sagas.alpha)),
        config=ManualArgs(regions=["us-east-1"], ignore_checks=IGNORED),
    )
    assert [str(m) for m in matches if "Backup" in str(m)] == []


def test_the_apps_own_write_prefixes_reach_only_its_function_under_leading_keys(
    two_sagas: TwoSagas,
) -> None:
    """``ledger_write_prefixes`` adds one statement to that function's role: the extra
    writes' actions on the table, only for items whose key starts with the prefix; the
    framework's own write statement is unchanged."""
    (table_id,) = two_sagas.resources(two_sagas.alpha, "AWS::DynamoDB::Table")
    found = {}
    for policy in two_sagas.resources(two_sagas.alpha, "AWS::IAM::Policy").values():
        (role,) = policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement.get("Sid") == "LedgerWritesOfTheAppsItemKinds":
                found[role["Ref"].split("Role")[0]] = statement
            if statement.get("Sid") == "LedgerWritesOfItsItemKinds":
                keys = statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
                assert "SESSION#*" not in keys
    assert set(found) == {"Notify"}
    statement = found["Notify"]
    assert sorted(statement["Action"]) == sorted(APP_WRITE_ACTIONS)
    assert statement["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
    assert statement["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["SESSION#*"]},
        "Null": {"dynamodb:LeadingKeys": "false"},
    }


def test_the_apps_grant_reaches_only_its_function(two_sagas: TwoSagas) -> None:
    policies = two_sagas.resources(two_sagas.alpha, "AWS::IAM::Policy").values()
    with_send = [p for p in policies if "sqs:SendMessage" in json.dumps(p)]
    # The ingress starter sends to its own dead-letter queue, the redriver to its own queue
    # (the backoff): the framework's grants.
    framework = ("IngressStarter", "AutoRedriveRedriver")
    (policy,) = [
        p for p in with_send if not any(f in json.dumps(p["Properties"]) for f in framework)
    ]
    (role,) = policy["Properties"]["Roles"]
    assert role["Ref"].startswith("ChargeCardRole")


def test_a_secret_is_named_in_the_environment_and_readable_only_by_its_function(
    two_sagas: TwoSagas,
) -> None:
    functions = two_sagas.resources(two_sagas.alpha, "AWS::Lambda::Function").values()
    with_token = [
        f["Properties"]["Environment"]["Variables"].get(deployment.ENV_FUNCTION)
        for f in functions
        if f["Properties"]["Environment"]["Variables"].get("ACME_TOKEN_ARN") == TOKEN_ARN
    ]
    assert with_token == ["Notify"]
    policies = two_sagas.resources(two_sagas.alpha, "AWS::IAM::Policy").values()
    readers = [p for p in policies if "secretsmanager:GetSecretValue" in json.dumps(p)]
    (policy,) = readers
    (role,) = policy["Properties"]["Roles"]
    assert role["Ref"].startswith("NotifyRole")
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    (secret_statement,) = [s for s in statements if "secretsmanager:GetSecretValue" in s["Action"]]
    assert secret_statement["Resource"] == TOKEN_ARN


def test_secrets_are_named_never_valued_and_readable_only_by_their_function(
    two_sagas: TwoSagas,
) -> None:
    functions = two_sagas.resources(two_sagas.alpha, "AWS::Lambda::Function").values()
    by_name = {
        f["Properties"]["Environment"]["Variables"].get(deployment.ENV_FUNCTION): f["Properties"]
        for f in functions
    }
    charge = by_name["ChargeCard"]["Environment"]["Variables"]
    assert charge["ACME_API_KEY_PARAMETER"] == API_KEY_PARAMETER
    assert json.loads(charge[ENV_SECRET_SOURCES]) == {"ACME_API_KEY_PARAMETER": "ssm"}
    notify = by_name["Notify"]["Environment"]["Variables"]
    assert json.loads(notify[ENV_SECRET_SOURCES]) == {"ACME_TOKEN_ARN": "secretsmanager"}
    assert ENV_SECRET_SOURCES not in by_name["Reconcile"]["Environment"]["Variables"]
    policies = two_sagas.resources(two_sagas.alpha, "AWS::IAM::Policy").values()
    readers = [p for p in policies if "ssm:GetParameter" in json.dumps(p)]
    (policy,) = readers
    (role,) = policy["Properties"]["Roles"]
    assert role["Ref"].startswith("ChargeCardRole")
    (statement,) = [
        s
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if "ssm:GetParameter" in json.dumps(s["Action"])
    ]
    assert "/acme/billing/api-key" in json.dumps(statement["Resource"])
    assert "*" not in json.dumps(statement["Resource"])


def test_a_signed_api_is_a_url_in_the_environment_and_invocable_only_by_its_function(
    two_sagas: TwoSagas,
) -> None:
    """The variable holds the base URL, ``STEPSAGA_SIGNED_APIS`` its signing name; the role
    of that function alone may invoke exactly that API (``execute-api:Invoke`` on the
    route's ARN; ``lambda:InvokeFunctionUrl`` on the function, IAM-authorized URLs only)."""
    functions = two_sagas.resources(two_sagas.alpha, "AWS::Lambda::Function").values()
    by_name = {
        f["Properties"]["Environment"]["Variables"].get(deployment.ENV_FUNCTION): f["Properties"]
        for f in functions
    }
    charge = by_name["ChargeCard"]["Environment"]["Variables"]
    assert charge["ACME_PAYMENTS_API_URL"] == PAYMENTS_API.url
    assert json.loads(charge[ENV_SIGNED_APIS]) == {
        "ACME_PAYMENTS_API_URL": {"service": "execute-api"}
    }
    notify = by_name["Notify"]["Environment"]["Variables"]
    assert json.loads(notify[ENV_SIGNED_APIS]) == {"ACME_NOTIFIER_URL": {"service": "lambda"}}
    assert ENV_SIGNED_APIS not in by_name["Reconcile"]["Environment"]["Variables"]
    policies = two_sagas.resources(two_sagas.alpha, "AWS::IAM::Policy").values()
    granted: dict[str, list[tuple[str, Any, Any]]] = {}
    for policy in policies:
        (role,) = policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            action = statement["Action"]
            if action in ("execute-api:Invoke", "lambda:InvokeFunctionUrl"):
                granted.setdefault(role["Ref"], []).append(
                    (action, statement["Resource"], statement.get("Condition"))
                )
    assert {ref.split("Role")[0] for ref in granted} == {"ChargeCard", "Notify"}
    for ref, statements in granted.items():
        if ref.startswith("ChargeCard"):
            assert statements == [("execute-api:Invoke", PAYMENTS_API.resources[0], None)]
        else:
            assert statements == [
                (
                    "lambda:InvokeFunctionUrl",
                    NOTIFIER_FUNCTION_ARN,
                    {"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}},
                )
            ]


def test_signed_api_settings_are_checked() -> None:
    with pytest.raises(DeploymentError, match="name the resources"):
        SignedApi(url="https://x.example", resources=())
    with pytest.raises(DeploymentError, match="https:// base URL"):
        SignedApi(url="http://x.example", resources=("arn:aws:execute-api:eu-west-1:1:x/*",))
    with pytest.raises(DeploymentError, match="named twice"):
        FunctionSettings(environment={"PAY_URL": "x"}, signed_apis={"PAY_URL": PAYMENTS_API})
    with pytest.raises(DeploymentError, match="set by the construct"):
        FunctionSettings(signed_apis={"STEPSAGA_SIGNED_APIS": PAYMENTS_API})


def test_alarm_texts_name_the_saga(two_sagas: TwoSagas) -> None:
    for stack, saga in ((two_sagas.alpha, "alpha-order"), (two_sagas.beta, "beta-refresh")):
        alarms = two_sagas.resources(stack, "AWS::CloudWatch::Alarm").values()
        texts = [a["Properties"]["AlarmDescription"] for a in alarms]
        # beta runs without the automatic redrive (no alarm on its dead letters, its queue's
        # age, its refusals) and without canary releases (no alarms to roll them back)
        assert len(texts) == len(RULES) - 5 * (stack is two_sagas.beta)
        assert all(saga in text for text in texts), texts
        assert not any("replacement" in text for text in texts)


def test_each_sagas_alarms_watch_only_its_own_metrics(two_sagas: TwoSagas) -> None:
    services = {}
    for stack in (two_sagas.alpha, two_sagas.beta):
        alarms = two_sagas.resources(stack, "AWS::CloudWatch::Alarm").values()
        dimensions = {
            d["Value"]
            for a in alarms
            for d in a["Properties"].get("Dimensions", [])
            if d["Name"] == "service"
        }
        functions = two_sagas.resources(stack, "AWS::Lambda::Function").values()
        emitted = {
            f["Properties"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
            for f in functions
        }
        (service,) = dimensions
        assert emitted == {service}
        services[stack.saga.name] = service
    assert services == {
        "alpha-order": "stepsaga-dev-alpha-order",
        "beta-refresh": "stepsaga-dev-beta-refresh",
    }


def test_a_saga_without_effects_has_no_reconciler(two_sagas: TwoSagas) -> None:
    assert set(two_sagas.beta.resources.functions) == {"Lookup"}
    assert two_sagas.beta.resources.access["Lookup"].table_actions


def test_each_asset_holds_the_projects_referenced_packages(two_sagas: TwoSagas) -> None:
    layout_files = {
        f for f in two_sagas.outdir.rglob("*") if f.is_file() and "asset." in str(f.parent)
    }
    relative = {
        f.relative_to(next(p for p in f.parents if p.name.startswith("asset.")))
        for f in layout_files
    }
    names = {p.as_posix() for p in relative}
    assert {"acme_tasks/charge.py", "acme_flows/sagas.py", "acme_clients.py"} <= names
    assert "stepsaga/lambda_handler.py" in names
    assert not any(n.startswith(("acme_tests/", "stepsaga/cli/")) for n in names)


def test_cdk_nag_finds_nothing_unsuppressed(two_sagas: TwoSagas) -> None:
    for stack in (two_sagas.alpha, two_sagas.beta):
        annotations = Annotations.from_stack(stack)
        pattern = Match.string_like_regexp("AwsSolutions-.*")
        found = [*annotations.find_error("*", pattern), *annotations.find_warning("*", pattern)]
        assert [f"{m.id}: {m.entry.data}" for m in found] == []


def test_a_handler_module_missing_from_the_asset_fails_the_synth_in_one_line(
    project: Project,
) -> None:
    app = App()
    with pytest.raises(DeploymentError) as caught:
        SagaStack(app, project=project, saga="broken", stage="dev")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("Ghost handler 'acme_tasks.ghost:Ghost': module acme_tasks.ghost")
    assert "acme_tasks/ghost.py" in message


def test_settings_for_a_function_the_saga_lacks_are_refused(project: Project) -> None:
    with pytest.raises(DeploymentError, match="settings for Typo: saga beta-refresh has no"):
        SagaStack(
            App(), project=project, saga="beta-refresh", functions={"Typo": FunctionSettings()}
        )


def test_a_project_made_in_python_cannot_be_bundled() -> None:
    with pytest.raises(DeploymentError, match=r"Project\.load\(root\)"):
        SagaStack(App(), project=Project.of(), saga="x")


def test_both_templates_are_cfn_lint_clean(two_sagas: TwoSagas) -> None:
    for stack in (two_sagas.alpha, two_sagas.beta):
        matches = lint(
            json.dumps(two_sagas.template(stack)),
            config=ManualArgs(regions=["us-east-1"], ignore_checks=IGNORED),
        )
        assert [str(m) for m in matches] == [], stack.stack_name
