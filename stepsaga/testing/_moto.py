"""moto's Step Functions interpreter, in-process, with Step Functions Local mock configs.

Why: moto 5.2 executes ASL with a copy of LocalStack's interpreter, including its mocked
``Task`` evaluation (``mock_eval_utils``), but nothing wires a mock config to it: its
``start_execution`` neither accepts ``<arn>#<TestCase>`` nor hands a test case to the
execution worker; and it picks a state's mocked response by its retry count, so a state
entered again (a compensation re-run after reconciliation) replays its first response for
ever. :func:`moto_stepfunctions` adds the two links and numbers responses by invocation, as
Step Functions Local documents and LocalStack 2026 does — the test case
built from moto's own mock types, so everything that runs is moto's — and so a scenario runs
on moto as on Step Functions Local and LocalStack. Retry delays are skipped (as the engine's
``time_scale=0`` does); paths and counts do not depend on them.

moto agrees with LocalStack wherever the copy is faithful: one vote, not two (DESIGN.md).
Pinned to moto 5.2.5's internals (tested in ``tests/framework/functional/test_testing_moto.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any
from unittest import mock

from stepsaga.testing._mockconfig import MockConfigBuilder

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

__all__ = ["moto_stepfunctions"]

MOTO_CONFIG: Any = {
    "stepfunctions": {"execute_state_machine": True},
    "lambda": {"use_docker": False},
}
_BACKEND = "moto.stepfunctions.parser.models.StepFunctionsParserBackend"
_EXECUTION = "moto.stepfunctions.parser.backend.execution.Execution"
_ENVIRONMENT = "moto.stepfunctions.parser.asl.eval.environment.Environment"
#: What moto's retrier sleeps with: patched so retry delays are skipped.
RETRY_CLOCK = "moto.stepfunctions.parser.asl.component.common.retry.retrier_decl.time"


@contextmanager
def moto_stepfunctions(
    mock_config: MockConfigBuilder | Mapping[str, Any] | None = None,
    *,
    region: str = "us-east-1",
) -> Iterator[SFNClient]:
    """A ``stepfunctions`` client on moto (executions run in moto's interpreter) that serves
    ``mock_config``'s test cases; moto (``mock_aws``) stays active inside the block."""
    import boto3
    from moto import mock_aws
    from moto.stepfunctions.parser.backend.execution import Execution
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    raw: Mapping[str, Any] = (
        {}
        if mock_config is None
        else mock_config.to_dict()
        if isinstance(mock_config, MockConfigBuilder)
        else mock_config
    )
    pending: list[Any] = []  # the test case of the execution being started
    start_execution = StepFunctionsParserBackend.start_execution
    start_worker = Execution._get_start_execution_worker

    def start(self: Any, state_machine_arn: str, *args: Any, **kwargs: Any) -> Any:
        arn, _, case = state_machine_arn.partition("#")
        if case:
            from moto.stepfunctions.exceptions import InvalidName

            machine = self.describe_state_machine(arn).name
            test_case = _test_case(raw, machine, case)
            if test_case is None:
                raise InvalidName(f"Invalid mock test case name '{case}' for '{machine}'")
            pending.append(test_case)
        try:
            return start_execution(self, arn, *args, **kwargs)
        finally:
            pending.clear()

    def worker(self: Any) -> Any:
        started = start_worker(self)
        if pending:
            started._mock_test_case = pending[0]  # type: ignore[misc]
        return started

    with (
        mock_aws(config=MOTO_CONFIG),
        mock.patch(f"{_BACKEND}.start_execution", start),
        mock.patch(f"{_EXECUTION}._get_start_execution_worker", worker),
        mock.patch(f"{_ENVIRONMENT}.get_current_mocked_response", _by_invocation),
        mock.patch(RETRY_CLOCK, SimpleNamespace(sleep=lambda seconds: None)),
    ):
        client: SFNClient = boto3.client(
            "stepfunctions",
            region_name=region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",  # noqa: S106 (moto accepts any key)
        )
        yield client


def _by_invocation(env: Any) -> Any:
    """The state's next mocked response: numbered by invocation (re-entries and retries
    alike), counted per execution on its test case."""
    case, state = env.mock_test_case, env.next_state_name
    counts: dict[str, int] = case.__dict__.setdefault("invocations", {})
    number = counts[state] = counts.get(state, -1) + 1
    responses = case.state_mocked_responses[state].mocked_responses
    if number >= len(responses):
        raise RuntimeError(f"no mocked response for state {state!r}, invocation {number}")
    return responses[number]


def _test_case(raw: Mapping[str, Any], machine: str, case: str) -> Any:
    """moto's ``MockTestCase`` for ``machine#case``, or ``None`` when the config lacks it."""
    from moto.stepfunctions.parser.mocking import mock_config as m

    states = raw.get("StateMachines", {}).get(machine, {}).get("TestCases", {}).get(case)
    if states is None:
        return None
    mocked = []
    for state, response_name in states.items():
        responses: list[Any] = []
        for numbers, response in raw["MockedResponses"][response_name].items():
            start, end = m._parse_mocked_response_range(numbers)
            if "Return" in response:
                responses.append(m.MockedResponseReturn(start, end, response["Return"]))
            else:
                thrown = response["Throw"]
                responses.append(
                    m.MockedResponseThrow(start, end, thrown["Error"], thrown["Cause"])
                )
        mocked.append(m.StateMockedResponses(state, response_name, responses))
    return m.MockTestCase(machine, case, mocked)
