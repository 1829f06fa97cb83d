"""``stepsaga console``: serve the operator console on this machine.

It opens the same backend the other verbs open (``--backend local|aws``, here or before
the verb) for every page, and prints a URL with a fresh random token, as Jupyter does:
without the token every request is refused. Bound to 127.0.0.1 unless ``--host`` says
otherwise.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer

from stepsaga.cli._common import BackendKind, cli_context, exit_codes, usage_error


def console(
    ctx: typer.Context,
    backend: Annotated[
        BackendKind | None,
        typer.Option("--backend", help="local or aws (default: the global --backend)."),
    ] = None,
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="TCP port (0: any free port).")
    ] = 8765,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (default: this machine only).")
    ] = "127.0.0.1",
    overdue_hours: Annotated[
        float,
        typer.Option("--overdue-hours", min=0, help="Mark OPEN items older than this overdue."),
    ] = 24,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            help="Keep the token in this file (created 0600 if absent) so the URL survives "
            "restarts.",
        ),
    ] = None,
    operators_file: Annotated[
        Path | None,
        typer.Option(
            "--operators-file",
            help="Personal tokens (hashed, 0600): a request signed by one acts as that person, "
            "so two people on this console can complete dual control (local backend).",
        ),
    ] = None,
    add_operator: Annotated[
        str | None,
        typer.Option(
            "--add-operator",
            metavar="NAME",
            help="Give NAME a personal token in --operators-file (replacing theirs), print "
            "their URL and exit.",
        ),
    ] = None,
) -> None:
    """Serve the operator console: executions, reconciliation queue, ledger."""
    try:
        from stepsaga.console import ConsoleConfig, serve
        from stepsaga.console._security import new_token, read_operators, token_from_file
        from stepsaga.console._serve import bind, url_of
    except ModuleNotFoundError as exc:
        usage_error(f"console needs the console extra (pip install 'stepsaga[console]'): {exc}")
    from stepsaga.cli._backend import open_backend
    from stepsaga.cli._ledger import ledger_of

    cli = cli_context(ctx)
    if backend is not None:
        cli = dataclasses.replace(cli, backend=backend)
    if operators_file is not None and cli.backend is BackendKind.aws:
        usage_error(
            "--operators-file: on the aws backend who acts is the caller's IAM identity "
            "(the server-side resolver); use it with the local backend"
        )
    if add_operator is not None:
        if operators_file is None:
            usage_error("--add-operator: name the file with --operators-file PATH")
        with exit_codes():
            from stepsaga._model.person import check_person
            from stepsaga.console._security import TOKEN_PARAMETER
            from stepsaga.console._security import add_operator as add

            personal = add(operators_file, check_person(add_operator, "--add-operator"))
        shown = f"[{host}]" if ":" in host else host
        typer.echo(
            f"{add_operator} signs in to the console (once started with --operators-file "
            f"{operators_file}) at:\n    http://{shown}:{port}/?{TOKEN_PARAMETER}={personal}"
        )
        typer.echo("Only its digest is kept; run this again to replace a lost one.")
        return
    with exit_codes():
        project = cli.project()
        try:
            sock = bind(host, port)
        except OSError as exc:
            usage_error(f"--port {port}: cannot listen on {host}:{port} ({exc.strerror})")
        token = token_from_file(token_file) if token_file is not None else new_token()
        operators = read_operators(operators_file) if operators_file is not None else {}
        config = ConsoleConfig(
            project=project,
            open_backend=lambda: open_backend(cli),
            open_ledger=lambda: ledger_of(cli),
            token=token,
            port=sock.getsockname()[1],
            backend_name=cli.backend.value,
            allowed_hosts=tuple(dict.fromkeys(("127.0.0.1", "localhost", host))),
            overdue_after=timedelta(hours=overdue_hours),
            operators=operators,
        )
    typer.echo(f"stepsaga console ({cli.backend.value} backend), open:\n    {url_of(sock, token)}")
    if operators:
        people = ", ".join(sorted(set(operators.values())))
        typer.echo(f"Personal URLs also sign in ({people}): each acts as that person.")
    typer.echo("Ctrl-C stops it.")
    serve(config, sock)
