"""Resuming a case parked on a task token: the one callable both backends provide.

``TaskSuccessSender`` is ``(task_token, output) -> anything``: the embedded engine's
``LocalEngine.send_task_success`` fits as is; on AWS ``sfn_task_success(client)`` wraps
boto3's ``send_task_success`` (which wants the output as JSON text).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

TaskSuccessSender = Callable[[str, dict[str, Any]], object]


def sfn_task_success(client: SFNClient) -> TaskSuccessSender:
    def send(task_token: str, output: dict[str, Any]) -> None:
        client.send_task_success(taskToken=task_token, output=json.dumps(output))

    return send
