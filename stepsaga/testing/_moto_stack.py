"""A synthesized stack on moto, its Lambda functions running the real handlers in-process.

Why: :func:`stepsaga.testing.moto_stepfunctions` runs a saga in moto's Step Functions
interpreter with *mocked* task results; nothing there proves that the functions the stack
deploys — their ``Handler`` strings, their environment, the ARNs substituted into the
definition — run the saga. :func:`moto_deployment` deploys the template's tables, topics,
queues, functions (with a published version per function and their aliases) and state
machines onto moto, as the template describes them, and answers every Lambda ``Invoke``
(the interpreter's ``lambda:invoke`` and ``lambda:invoke.waitForTaskToken`` go through it)
by importing the function's handler and calling it in-process with the function's
environment variables set and a Lambda-like context. A handler's exception reaches the
caller as Lambda reports it (``FunctionError: Unhandled``, payload ``errorType`` = the
exception's class name), so ``Retry``/``Catch`` match the same error names as on AWS.

An ``AWS::Lambda::Url`` with ``AuthType AWS_IAM`` (the resolver's) is served in process too:
its URL is ``https://<logical id>.lambda-url.<region>.on.aws/``, and a request to it (from
``stepsaga.backends._aws.decisions``, the only HTTP client stepsaga signs for Lambda) is
answered as Lambda does: an unsigned request gets 403 without running the function; a signed
one runs the function with a payload 2.0 event whose ``requestContext.authorizer.iam`` is
what moto's STS says of the signing access key (an assumed role's session, say) — never
anything in the body.

Every invocation is a cold start (stepsaga's entry point forgets the handlers it built):
in Lambda each function has processes of its own, here they share one. Invocations run one
at a time, each seeing its function's variables over ``os.environ`` in its own thread only.
Retry delays are skipped, as in ``moto_stepfunctions``.
Pinned to moto 5.2.5's internals (``LambdaSimpleBackend.invoke``; and the parser backend's
``start_execution``, which refuses a state machine alias moto itself created).
"""

from __future__ import annotations

import importlib
import io
import json
import re
import threading
import time
import uuid
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Final, cast
from unittest import mock

import httpx

from stepsaga._project import deployment
from stepsaga.engine import _lambda_invoke as lambda_invoke
from stepsaga.engine._lambda_invoke import LambdaContext
from stepsaga.errors import TemplateError
from stepsaga.testing._cloudformation import Resolver, substitute
from stepsaga.testing._environ import thread_environ
from stepsaga.testing._moto import MOTO_CONFIG, RETRY_CLOCK

__all__ = ["DeployedFunction", "FunctionCall", "MotoDeployment", "moto_deployment"]

_INVOKE: Final = "moto.awslambda_simple.models.LambdaSimpleBackend.invoke"
#: Where stepsaga's signed requests to function URLs go (None: the network).
_URL_TRANSPORT: Final = "stepsaga.backends._aws.decisions.default_transport"
_SIGNER: Final = re.compile(r"Credential=([^/,\s]+)/\d{8}/[a-z0-9-]+/lambda/aws4_request")
_START: Final = "moto.stepfunctions.parser.models.StepFunctionsParserBackend.start_execution"
#: moto's default account (what its ARNs carry unless told otherwise).
_ACCOUNT: Final = "123456789012"
_ROLE: Final = "stepsaga-moto-deployment"
#: Lambda's own defaults when a template leaves them out.
_DEFAULT_TIMEOUT: Final = 3
_DEFAULT_MEMORY: Final = 128
#: Output key → the CLI's environment variable (``stepsaga --backend aws`` without a stack).
_CLI_VARIABLES: Final = {
    deployment.OUTPUT_RESOLVER_URL: deployment.ENV_RESOLVER_URL,
    deployment.OUTPUT_STATE_MACHINE_ARN: deployment.ENV_STATE_MACHINE_ARN,
    deployment.OUTPUT_LEDGER_TABLE_NAME: deployment.ENV_LEDGER_TABLE_NAME,
    deployment.OUTPUT_RECONCILIATION_TOPIC_ARN: deployment.ENV_RECONCILIATION_TOPIC_ARN,
}


@dataclass(frozen=True)
class DeployedFunction:
    """One ``AWS::Lambda::Function`` as deployed: what an invocation runs."""

    logical_id: str
    name: str
    arn: str
    #: ``package.module.function``, as Lambda's Python runtime reads it.
    handler: str
    environment: Mapping[str, str]
    timeout_seconds: int = _DEFAULT_TIMEOUT
    memory_mb: int = _DEFAULT_MEMORY


@dataclass(frozen=True)
class FunctionCall:
    """One call of a function: its event and, if it raised, the Lambda ``errorType``."""

    function: DeployedFunction
    event: Any
    error: str | None = None


@dataclass(frozen=True)
class MotoDeployment:
    """What :func:`moto_deployment` created, by logical id, and every invocation so far."""

    region: str
    account: str
    stack_name: str
    functions: Mapping[str, DeployedFunction]
    tables: Mapping[str, str]
    topics: Mapping[str, str]
    queues: Mapping[str, str]
    state_machines: Mapping[str, str]
    #: The template's ``Outputs``, resolved (also the moto stack's outputs).
    outputs: Mapping[str, str]
    #: Each ``AWS_IAM`` function URL → the function it runs.
    urls: Mapping[str, DeployedFunction] = field(default_factory=dict)
    invocations: list[FunctionCall] = field(default_factory=list, compare=False)

    @property
    def state_machine_arn(self) -> str:
        """The stack's one state machine."""
        if len(self.state_machines) != 1:
            raise TemplateError(
                f"template: {len(self.state_machines)} state machines; pick one of "
                f"state_machines ({', '.join(self.state_machines)})"
            )
        return next(iter(self.state_machines.values()))

    def environ(self) -> dict[str, str]:
        """Environment variables for ``stepsaga --backend aws`` from the stack's outputs
        (``--stack <stack_name>`` reads the same values from moto's CloudFormation)."""
        variables = {
            variable: self.outputs[output]
            for output, variable in _CLI_VARIABLES.items()
            if output in self.outputs
        }
        return {"AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region, **variables}

    def function(self, name: str) -> DeployedFunction:
        """The function whose logical id, physical name or ``STEPSAGA_FUNCTION`` is ``name``."""
        for function in self.functions.values():
            if name in (
                function.logical_id,
                function.name,
                function.environment.get(deployment.ENV_FUNCTION),
            ):
                return function
        raise KeyError(f"no function {name!r} in the deployment ({', '.join(self.functions)})")

    def calls(self, name: str) -> list[FunctionCall]:
        """The invocations of one function (see :meth:`function`), in order."""
        wanted = self.function(name)
        return [call for call in self.invocations if call.function == wanted]

    def wait(
        self,
        execution_arn: str,
        *,
        until: Callable[[Mapping[str, Any]], bool] | None = None,
        timeout_seconds: float = 60,
    ) -> dict[str, Any]:
        """``DescribeExecution`` once the execution is no longer ``RUNNING`` (or ``until``
        holds); moto runs executions in a thread of their own."""
        import boto3

        client = boto3.client("stepfunctions", region_name=self.region)
        done = until or (lambda described: described["status"] != "RUNNING")
        deadline = time.monotonic() + timeout_seconds
        while True:
            described: dict[str, Any] = dict(client.describe_execution(executionArn=execution_arn))
            if done(described):
                return described
            if time.monotonic() > deadline:
                raise TimeoutError(f"{execution_arn}: still {described['status']}")
            time.sleep(0.05)


@contextmanager
def moto_deployment(
    template: Mapping[str, Any] | Path,
    *,
    stack_name: str = "stepsaga",
    environment: Mapping[str, str] | None = None,
    region: str = "us-east-1",
) -> Iterator[MotoDeployment]:
    """Deploy ``template`` (a synthesized CloudFormation template, or its JSON file under
    ``cdk.out``) onto moto; ``environment`` overrides variables of every function (e.g.
    ``STEPSAGA_SERVICES=simulated``). moto (``mock_aws``) stays active inside the block."""
    from moto import mock_aws
    from moto.awslambda_simple.models import LambdaSimpleBackend
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    body: Mapping[str, Any] = (
        json.loads(template.read_text()) if isinstance(template, Path) else template
    )
    lock = _ENVIRON_LOCK
    moto_invoke = LambdaSimpleBackend.invoke
    moto_start = StepFunctionsParserBackend.start_execution

    def start(backend: Any, state_machine_arn: str, *args: Any, **kwargs: Any) -> Any:
        return moto_start(backend, _unqualified(backend, state_machine_arn), *args, **kwargs)

    with mock_aws(config=MOTO_CONFIG):
        deployed = _deploy(body, stack_name, region, dict(environment or {}))
        by_name = {f.name: f for f in deployed.functions.values()}

        def answer(
            backend: Any, name: str, qualifier: Any, payload: Any, headers: Any, response: Any
        ) -> bytes | str | None:
            function = by_name.get(backend.get_function(name, qualifier).function_name)
            if function is None:  # created by the test, not by the template: moto's answer
                return moto_invoke(backend, name, qualifier, payload, headers, response)
            event = json.loads(payload) if payload else {}
            with lock:
                result = _run(function, event, region)
            deployed.invocations.append(FunctionCall(function, event, result.error or None))
            if not result.ok:
                response["x-amz-function-error"] = "Unhandled"
                return result.cause.encode()
            return result.payload_json.encode()

        def serve(function: DeployedFunction, event: dict[str, Any]) -> lambda_invoke.Invocation:
            with lock:
                result = _run(function, event, region)
            deployed.invocations.append(FunctionCall(function, event, result.error or None))
            return result

        with (
            mock.patch(_INVOKE, answer),
            mock.patch(_START, start),
            mock.patch(_URL_TRANSPORT, _FunctionUrls(deployed, serve)),
            mock.patch(RETRY_CLOCK, SimpleNamespace(sleep=lambda seconds: None)),
        ):
            yield deployed


@dataclass
class _FunctionUrls(httpx.BaseTransport):
    """An ``httpx`` transport answering requests to the deployment's function URLs."""

    deployed: MotoDeployment
    serve: Callable[[DeployedFunction, dict[str, Any]], lambda_invoke.Invocation]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        import boto3

        base = f"{request.url.scheme}://{request.url.host}/"
        function = self.deployed.urls.get(base)
        if function is None:
            raise httpx.ConnectError(f"no function URL {base} in the deployment")
        signed = _SIGNER.search(request.headers.get("authorization", ""))
        if signed is None:
            return httpx.Response(403, json={"Message": "Forbidden"})
        # moto's STS names the caller from the access key id alone (it checks no signature;
        # Lambda did, before the function ran).
        sts = boto3.client(
            "sts",
            region_name=self.deployed.region,
            aws_access_key_id=signed.group(1),
            aws_secret_access_key="unchecked",  # noqa: S106 - not a secret: moto ignores it
        )
        caller = sts.get_caller_identity()
        iam = {
            "accessKey": signed.group(1),
            "accountId": caller["Account"],
            "callerId": caller["UserId"],
            "userArn": caller["Arn"],
            "userId": caller["UserId"],
        }
        event = {
            "version": "2.0",
            "rawPath": request.url.path,
            "requestContext": {"http": {"method": request.method}, "authorizer": {"iam": iam}},
            "body": request.content.decode(),
            "isBase64Encoded": False,
        }
        result = self.serve(function, event)
        if not result.ok:
            return httpx.Response(502, json={"Message": "Internal Server Error"})
        answer = json.loads(result.payload_json)
        return httpx.Response(
            int(answer["statusCode"]),
            headers=answer.get("headers") or {},
            content=str(answer.get("body") or "").encode(),
        )


#: Handlers run one at a time: stepsaga's entry point keeps module-level state (the handlers
#: it built) that a cold start resets. One lock for every deployment, since an earlier
#: deployment's execution thread may still be inside a handler when the next test deploys;
#: each sees its function's variables through ``thread_environ``. Re-entrant: a function
#: served at a URL (the resolver) invokes others (cancel's compensations) in the same thread.
_ENVIRON_LOCK = threading.RLock()


def _run(function: DeployedFunction, event: Any, region: str) -> lambda_invoke.Invocation:
    """One cold invocation of ``function``'s handler with its environment set."""
    from stepsaga._aws import resolver
    from stepsaga._handlers import entrypoint

    variables = {
        **function.environment,
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_LAMBDA_FUNCTION_NAME": function.name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
    }
    context = _Context(
        function_name=function.name,
        aws_request_id=str(uuid.uuid4()),
        invoked_function_arn=function.arn,
        remaining_millis=function.timeout_seconds * 1000,
        memory_limit_in_mb=function.memory_mb,
    )
    with thread_environ().overlaid(variables):
        entrypoint.reset()
        resolver.reset()
        try:
            handler = _load(function.handler, context.aws_request_id)
            if isinstance(handler, lambda_invoke.Invocation):
                return handler
            return lambda_invoke.invoke(handler, event, context)
        finally:
            entrypoint.reset()


def _load(handler: str, request_id: str) -> lambda_invoke.Handler | lambda_invoke.Invocation:
    """The handler function, or the error Lambda's Python runtime reports when it cannot
    load it (awslambdaric's names and messages)."""
    module, dot, attribute = handler.rpartition(".")
    if not dot or not module:
        message = f"Bad handler '{handler}': not enough values to unpack (expected 2, got 1)"
        return lambda_invoke.failure("Runtime.MalformedHandlerName", message, request_id, [])
    try:
        loaded = importlib.import_module(module)
    except ImportError as exc:
        message = f"Unable to import module '{module}': {exc}"
        return lambda_invoke.failure("Runtime.ImportModuleError", message, request_id, [])
    found = getattr(loaded, attribute, None)
    if found is None:
        message = f"Handler '{attribute}' missing on module '{module}'"
        return lambda_invoke.failure("Runtime.HandlerNotFound", message, request_id, [])
    return cast(lambda_invoke.Handler, found)


@dataclass
class _Context(LambdaContext):
    """Lambda's context, its remaining time counting down from the function's timeout."""

    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        elapsed = int((time.monotonic() - self.started) * 1000)
        return max(0, self.remaining_millis - elapsed)


def _deploy(
    template: Mapping[str, Any], stack_name: str, region: str, overrides: dict[str, str]
) -> MotoDeployment:
    deployer = _Deployer(template, Resolver(region, _ACCOUNT, stack_name))
    deployer.name_everything()
    tables, topics, queues = deployer.create_stores()
    functions = deployer.create_functions(overrides)
    machines = deployer.create_state_machines()
    return MotoDeployment(
        region=region,
        account=_ACCOUNT,
        stack_name=stack_name,
        functions=functions,
        tables=tables,
        topics=topics,
        queues=queues,
        state_machines=machines,
        outputs=deployer.create_stack(),
        urls=deployer.function_urls(functions),
    )


class _Deployer:
    """Creates the template's resources on moto, recording each one's ``Ref``/``GetAtt``."""

    def __init__(self, template: Mapping[str, Any], resolver: Resolver) -> None:
        import boto3

        self.template = template
        self.resolver = resolver
        self.region, self.account = resolver.region, resolver.account
        names = ("dynamodb", "sns", "sqs", "lambda", "stepfunctions", "iam", "cloudformation")
        self.clients: dict[str, Any] = {
            name: boto3.client(name, region_name=self.region)  # type: ignore[call-overload]
            for name in names
        }
        trust = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": ["lambda.amazonaws.com", "states.amazonaws.com"]},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
        self.role: str = self.clients["iam"].create_role(
            RoleName=_ROLE, AssumeRolePolicyDocument=json.dumps(trust)
        )["Role"]["Arn"]

    def of_type(self, kind: str) -> list[tuple[str, Mapping[str, Any]]]:
        return [
            (logical_id, resource.get("Properties", {}))
            for logical_id, resource in self.template.get("Resources", {}).items()
            if resource["Type"] == kind
        ]

    def physical(self, logical_id: str, properties: Mapping[str, Any], key: str, limit: int) -> str:
        """The resource's name: the template's, else ``<stack>-<logical id>`` (as CloudFormation
        generates one, without its random suffix)."""
        name = properties.get(key)
        if name:
            return str(self.resolver.resolve(name))
        return f"{self.resolver.stack_name}-{logical_id}"[:limit]

    def _record(self, logical_id: str, ref: str, **attributes: str) -> None:
        self.resolver.refs[logical_id] = ref
        for attribute, value in attributes.items():
            self.resolver.attributes[(logical_id, attribute)] = value

    def name_everything(self) -> None:
        """Names and ARNs first (moto's are predictable), so any resource may refer to any
        other whatever the order of creation."""
        for logical_id, _ in self.of_type("AWS::IAM::Role"):  # one role serves all
            self._record(logical_id, _ROLE, Arn=self.role)
        for logical_id, properties in self.of_type("AWS::Lambda::Function"):
            name = self.physical(logical_id, properties, "FunctionName", 64)
            arn = f"arn:aws:lambda:{self.region}:{self.account}:function:{name}"
            self._record(logical_id, name, Arn=arn)
        for logical_id, properties in self.of_type("AWS::Lambda::Version"):
            function_arn = self.resolver.get_att(properties["FunctionName"]["Ref"], "Arn")
            self._record(logical_id, f"{function_arn}:1", Version="1")  # one per function
        for logical_id, properties in self.of_type("AWS::Lambda::Alias"):
            function_arn = self.resolver.get_att(properties["FunctionName"]["Ref"], "Arn")
            arn = f"{function_arn}:{properties['Name']}"
            self._record(logical_id, arn, AliasArn=arn)
        for logical_id, properties in self.of_type("AWS::Lambda::Url"):
            url = f"https://{logical_id.lower()}.lambda-url.{self.region}.on.aws/"
            target = str(self.resolver.resolve(properties["TargetFunctionArn"]))
            self._record(logical_id, target, FunctionUrl=url, FunctionArn=target)
        machines = []
        for logical_id, properties in self.of_type("AWS::StepFunctions::StateMachine"):
            name = self.physical(logical_id, properties, "StateMachineName", 80)
            arn = f"arn:aws:states:{self.region}:{self.account}:stateMachine:{name}"
            self._record(logical_id, arn, Arn=arn, Name=name)
            machines.append(arn)
        # One published version per machine (a stack publishes one per deploy).
        for logical_id, properties in self.of_type("AWS::StepFunctions::StateMachineVersion"):
            arn = f"{self.resolver.resolve(properties['StateMachineArn'])}:1"
            self._record(logical_id, arn, Arn=arn)
        for logical_id, properties in self.of_type("AWS::StepFunctions::StateMachineAlias"):
            version = str(
                self.resolver.resolve(_alias_routes(properties)[0]["stateMachineVersionArn"])
            )
            arn = f"{version.rpartition(':')[0]}:{properties['Name']}"
            self._record(logical_id, arn, Arn=arn)

    def create_stores(self) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        """Tables (keys, indexes and TTL as declared), topics and queues: by logical id."""
        tables, topics, queues = {}, {}, {}
        for logical_id, properties in self.of_type("AWS::DynamoDB::Table"):
            name = self.physical(logical_id, properties, "TableName", 255)
            _create_table(self.clients["dynamodb"], name, self.resolver.resolve(properties))
            arn = f"arn:aws:dynamodb:{self.region}:{self.account}:table/{name}"
            self._record(logical_id, name, Arn=arn)
            tables[logical_id] = name
        for logical_id, properties in self.of_type("AWS::SNS::Topic"):
            name = self.physical(logical_id, properties, "TopicName", 256)
            arn = self.clients["sns"].create_topic(Name=name)["TopicArn"]
            self._record(logical_id, arn, TopicArn=arn, TopicName=name)
            topics[logical_id] = arn
        for logical_id, properties in self.of_type("AWS::SQS::Queue"):
            name = self.physical(logical_id, properties, "QueueName", 80)
            url = self.clients["sqs"].create_queue(QueueName=name)["QueueUrl"]
            arn = f"arn:aws:sqs:{self.region}:{self.account}:{name}"
            self._record(logical_id, url, Arn=arn, QueueUrl=url, QueueName=name)
            queues[logical_id] = url
        return tables, topics, queues

    def create_functions(self, overrides: Mapping[str, str]) -> dict[str, DeployedFunction]:
        """Each function with its handler and environment (``overrides`` win), a published
        version and its aliases."""
        functions = {}
        for logical_id, properties in self.of_type("AWS::Lambda::Function"):
            resolved = self.resolver.resolve(properties)
            if not resolved.get("Handler"):
                raise TemplateError(f"template: {logical_id}: Handler is missing")
            declared = resolved.get("Environment", {}).get("Variables", {})
            function = DeployedFunction(
                logical_id=logical_id,
                name=self.resolver.refs[logical_id],
                arn=self.resolver.attributes[(logical_id, "Arn")],
                handler=resolved["Handler"],
                environment={**{k: str(v) for k, v in declared.items()}, **overrides},
                timeout_seconds=int(resolved.get("Timeout", _DEFAULT_TIMEOUT)),
                memory_mb=int(resolved.get("MemorySize", _DEFAULT_MEMORY)),
            )
            self.clients["lambda"].create_function(
                FunctionName=function.name,
                Runtime=resolved.get("Runtime", "python3.12"),
                Role=self.role,
                Handler=function.handler,
                Code={"ZipFile": _empty_zip()},
                Timeout=function.timeout_seconds,
                MemorySize=function.memory_mb,
                Environment={"Variables": dict(function.environment)},
            )
            functions[logical_id] = function
        for _, properties in self.of_type("AWS::Lambda::Version"):
            name = self.resolver.resolve(properties["FunctionName"])
            self.clients["lambda"].publish_version(FunctionName=name)
        for _, properties in self.of_type("AWS::Lambda::Alias"):
            self.clients["lambda"].create_alias(
                FunctionName=self.resolver.resolve(properties["FunctionName"]),
                Name=properties["Name"],
                FunctionVersion=str(self.resolver.resolve(properties["FunctionVersion"])),
            )
        return functions

    def create_state_machines(self) -> dict[str, str]:
        """Each state machine with its definition, ``DefinitionSubstitutions`` applied, its
        version published and its aliases."""
        versioned = {
            str(self.resolver.resolve(properties["StateMachineArn"]))
            for _, properties in self.of_type("AWS::StepFunctions::StateMachineVersion")
        }
        machines = {}
        for logical_id, properties in self.of_type("AWS::StepFunctions::StateMachine"):
            definition = self.resolver.resolve(properties.get("DefinitionString"))
            if definition is None:
                if "Definition" not in properties:
                    raise TemplateError(f"template: {logical_id}: DefinitionString is missing")
                definition = json.dumps(self.resolver.resolve(properties["Definition"]))
            substitutions = self.resolver.resolve(properties.get("DefinitionSubstitutions", {}))
            arn = self.resolver.attributes[(logical_id, "Arn")]
            machines[logical_id] = self.clients["stepfunctions"].create_state_machine(
                name=self.resolver.attributes[(logical_id, "Name")],
                definition=substitute(definition, substitutions),
                roleArn=self.role,
                type=properties.get("StateMachineType", "STANDARD"),
                publish=arn in versioned,
            )["stateMachineArn"]
        for _, properties in self.of_type("AWS::StepFunctions::StateMachineAlias"):
            self.clients["stepfunctions"].create_state_machine_alias(
                name=properties["Name"],
                routingConfiguration=self.resolver.resolve(_alias_routes(properties)),
            )
        return machines

    def function_urls(
        self, functions: Mapping[str, DeployedFunction]
    ) -> dict[str, DeployedFunction]:
        """Each ``AWS_IAM`` URL → its function (the target's name, an alias ARN's too)."""
        by_name = {f.name: f for f in functions.values()}
        urls = {}
        for logical_id, properties in self.of_type("AWS::Lambda::Url"):
            if properties.get("AuthType") != "AWS_IAM":
                raise TemplateError(f"template: {logical_id}: only AWS_IAM function URLs")
            target = self.resolver.attributes[(logical_id, "FunctionArn")]
            name = target.split(":")[6]
            urls[self.resolver.attributes[(logical_id, "FunctionUrl")]] = by_name[name]
        return urls

    def create_stack(self) -> dict[str, str]:
        """The template's outputs, resolved, on a moto stack of that name, so ``--stack NAME``
        finds the deployment; its one resource is a no-op moto knows it does not create (and
        says so in a warning)."""
        outputs = {
            key: str(self.resolver.resolve(output["Value"]))
            for key, output in self.template.get("Outputs", {}).items()
        }
        body = {
            "Resources": {"Outputs": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
            "Outputs": {key: {"Value": value} for key, value in outputs.items()},
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.clients["cloudformation"].create_stack(
                StackName=self.resolver.stack_name, TemplateBody=json.dumps(body)
            )
        return outputs


def _alias_routes(properties: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An alias's routing (``RoutingConfiguration``, or a ``DeploymentPreference``'s target
    version), in the API's spelling."""
    routes = properties.get("RoutingConfiguration")
    if routes:
        return [
            {"stateMachineVersionArn": r["StateMachineVersionArn"], "weight": r["Weight"]}
            for r in routes
        ]
    preference = properties.get("DeploymentPreference", {})
    if "StateMachineVersionArn" not in preference:
        raise TemplateError("template: a StateMachineAlias routes to no version")
    return [{"stateMachineVersionArn": preference["StateMachineVersionArn"], "weight": 100}]


def _unqualified(backend: Any, state_machine_arn: str) -> str:
    """moto 5.2.5 creates state machine aliases and versions but starts executions only on
    the machine: ``<machine>:<alias or version>`` → ``<machine>`` (it holds one version)."""
    machine, _, qualifier = state_machine_arn.rpartition(":")
    if state_machine_arn.count(":") != 7:
        return state_machine_arn
    found = backend.describe_state_machine(machine)
    if qualifier in found.aliases or (qualifier.isdigit() and int(qualifier) in found.versions):
        return machine
    return state_machine_arn


def _create_table(client: Any, name: str, properties: Mapping[str, Any]) -> None:
    """The table as the template declares it: keys, indexes, TTL."""
    arguments: dict[str, Any] = {
        "TableName": name,
        "KeySchema": properties["KeySchema"],
        "AttributeDefinitions": properties["AttributeDefinitions"],
        "BillingMode": properties.get("BillingMode", "PAY_PER_REQUEST"),
    }
    for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes", "ProvisionedThroughput"):
        if key in properties:
            arguments[key] = properties[key]
    client.create_table(**arguments)
    ttl = properties.get("TimeToLiveSpecification")
    if ttl:
        client.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={
                "Enabled": ttl["Enabled"],
                "AttributeName": ttl["AttributeName"],
            },
        )


def _empty_zip() -> bytes:
    """moto stores a function's code; the handler is imported from this process instead."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README", "stepsaga.testing._moto_stack runs handlers in-process")
    return buffer.getvalue()
