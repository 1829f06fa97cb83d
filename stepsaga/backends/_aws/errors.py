"""botocore failures as stepsaga errors, so the CLI's exit codes mean the same on AWS.

Errors AWS names (``ExecutionAlreadyExists``, ``ExecutionNotRedrivable``,
``ExecutionDoesNotExist``, ``TaskTimedOut``…) become the classes of the same name the
embedded engine raises (``stepsaga.engine._errors``), so a script sees one error name on
both backends. Bad requests, denied access and missing credentials or region are the
caller's to fix (``InvalidInputError``: exit 2); throttling and unreachable endpoints are
``TransientError``; anything else is :class:`AwsCallError` (exit 1).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError
from botocore.exceptions import PartialCredentialsError as _PartialCredentials

from stepsaga.errors import (
    AwsCallError,
    ExecutionAlreadyExists,
    ExecutionDoesNotExist,
    ExecutionNotRedrivable,
    InvalidInputError,
    InvalidToken,
    NotFoundError,
    StateMachineDoesNotExist,
    StepSagaError,
    TaskDoesNotExist,
    TaskTimedOut,
    TransientError,
)

#: AWS error codes → the engine's class of the same name.
_SAME_NAME: dict[str, type[StepSagaError]] = {
    "ExecutionAlreadyExists": ExecutionAlreadyExists,
    "ExecutionNotRedrivable": ExecutionNotRedrivable,
    "ExecutionDoesNotExist": ExecutionDoesNotExist,
    "StateMachineDoesNotExist": StateMachineDoesNotExist,
    "TaskDoesNotExist": TaskDoesNotExist,
    "TaskTimedOut": TaskTimedOut,
    "InvalidToken": InvalidToken,
}
_NOT_FOUND = {"ResourceNotFound", "ResourceNotFoundException"}
_BAD_REQUEST = {
    "InvalidArn",
    "InvalidName",
    "InvalidExecutionInput",
    "InvalidOutput",
    "ValidationException",
    "ValidationError",
}
_DENIED = {
    "AccessDenied",
    "AccessDeniedException",
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "ExpiredToken",
    "ExpiredTokenException",
    "KMSAccessDeniedException",
}
_BUSY = {
    "ThrottlingException",
    "Throttling",
    "TooManyRequestsException",
    "ExecutionLimitExceeded",
    "ServiceUnavailable",
    "InternalServerError",
    "InternalFailure",
}


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def error_message(exc: ClientError) -> str:
    message = str(exc.response.get("Error", {}).get("Message", "")).strip()
    return " ".join(message.split()) or error_code(exc)


def translate(exc: ClientError, action: str) -> StepSagaError:
    """The stepsaga error for a failed ``action`` (e.g. ``states:StartExecution``)."""
    code, message = error_code(exc), error_message(exc)
    if code in _SAME_NAME:
        return _SAME_NAME[code](f"{action}: {message}", action=action, service_message=message)
    if code in _NOT_FOUND:
        return NotFoundError(f"{action}: {message}", action=action)
    if code in _BAD_REQUEST:
        return InvalidInputError(f"{action} refused the request ({code}): {message}", field=action)
    if code in _DENIED:
        return InvalidInputError(
            f"AWS denied {action} ({code}): {message}; check the credentials, profile and "
            "permissions (README: Deploy to AWS, Operate)",
            field="credentials",
        )
    if code in _BUSY:
        return TransientError(f"{action} is throttled or unavailable ({code}): {message}")
    return AwsCallError(
        f"{action} failed ({code or 'no code'}): {message}", action=action, code=code
    )


@contextmanager
def aws_call(action: str) -> Iterator[None]:
    """Run one AWS call; its failure leaves as a stepsaga error (``raise … from``)."""
    try:
        yield
    except ClientError as exc:
        raise translate(exc, action) from exc
    except NoRegionError as exc:
        raise InvalidInputError(
            "no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or use a profile "
            "(AWS_PROFILE) that names one",
            field="region",
        ) from exc
    except (NoCredentialsError, _PartialCredentials) as exc:
        raise InvalidInputError(
            f"no AWS credentials for {action}: set AWS_PROFILE or the AWS_ACCESS_KEY_ID/"
            "AWS_SECRET_ACCESS_KEY variables (boto3's usual chain)",
            field="credentials",
        ) from exc
    except BotoCoreError as exc:
        raise TransientError(f"{action}: cannot reach AWS ({exc})") from exc
