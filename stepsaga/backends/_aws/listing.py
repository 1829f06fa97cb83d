"""``list_executions`` on AWS: ``ListExecutions`` of the stack's state machine, page by page.

``ListExecutions`` filters by status only, newest first; the other filters are applied to
its items here: ``since`` ends the walk at the first older execution, ``tenant`` is read
from the execution name where it is plain (``acme-CASE-1-r1``) and from the input
(``DescribeExecution``) where it is hashed, and ``outcome`` by the one rule (a FAILED
execution is described for its error; a RUNNING one waits for a decision when its case
has an OPEN item with a task token). A call reads at most :data:`MAX_PAGES` pages, so a
filter that matches rarely returns a short page with a ``next_token`` instead of walking
the whole history at once. The token remembers the page it stopped in (its
``ListExecutions`` token, the page size, and how many items of it were read).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from stepsaga.backends._aws.errors import aws_call
from stepsaga.backends._listing import MAX_LIMIT, ExecutionQuery, PageToken
from stepsaga.backends._views import ExecutionPage, ExecutionSummary

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

#: ``ListExecutions`` calls one listing makes at most.
MAX_PAGES = 10

Summarize = Callable[[Mapping[str, Any]], ExecutionSummary | None]


def list_page(
    sfn: SFNClient,
    state_machine_arn: str,
    query: ExecutionQuery,
    token: PageToken | None,
    since: datetime | None,
    summarize: Summarize,
) -> ExecutionPage:
    """One page of ``query`` from where ``token`` says; ``summarize`` turns a listed item
    into a row (``None``: it does not match the tenant, or is not a stepsaga case)."""
    statuses = query.statuses()
    if statuses is not None and not statuses:
        return ExecutionPage(items=(), next_token=None)
    status_filter = next(iter(statuses)) if statuses is not None and len(statuses) == 1 else None
    filtered_here = query.tenant is not None or query.outcome is not None
    filtered_here = filtered_here or (statuses is not None and status_filter is None)
    size = token.size if token is not None else (MAX_LIMIT if filtered_here else query.limit)
    page_token = token.aws if token is not None else None
    skip = token.skip if token is not None else 0

    def resume_at(aws: str | None, read: int) -> ExecutionPage:
        following = PageToken(
            backend="aws",
            filters=query.filters,
            since=since.timestamp() if since is not None else None,
            aws=aws,
            skip=read,
            size=size,
        )
        return ExecutionPage(items=tuple(found), next_token=following.encode())

    found: list[ExecutionSummary] = []
    for _ in range(MAX_PAGES):
        request: dict[str, Any] = {"stateMachineArn": state_machine_arn, "maxResults": size}
        if status_filter is not None:
            request["statusFilter"] = status_filter
        if page_token is not None:
            request["nextToken"] = page_token
        with aws_call("states:ListExecutions"):
            response = sfn.list_executions(**request)
        listed = list(response["executions"])
        following = response.get("nextToken")
        for index in range(skip, len(listed)):
            item = listed[index]
            if since is not None and item["startDate"] < since:
                return ExecutionPage(items=tuple(found), next_token=None)  # newest first
            if statuses is not None and item["status"] not in statuses:
                continue
            summary = summarize(item)
            if summary is None or query.outcome not in (None, summary.outcome):
                continue
            found.append(summary)
            if len(found) == query.limit:
                if index + 1 < len(listed):
                    return resume_at(page_token, index + 1)
                return resume_at(following, 0) if following else ExecutionPage(items=tuple(found))
        if not following:
            return ExecutionPage(items=tuple(found), next_token=None)
        page_token, skip = following, 0
    return resume_at(page_token, 0)
