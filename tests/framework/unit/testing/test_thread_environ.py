"""A deployed function's variables are seen by its own thread only, and iterating the
environment from another thread never meets a key that vanished (the KeyError that made
moto end-to-end tests flaky under load)."""

from __future__ import annotations

import threading

from stepsaga.testing._environ import ThreadEnviron


def test_a_function_sees_its_variables_over_the_process_and_no_other_thread_does() -> None:
    environ = ThreadEnviron({"HOME": "/root", "LEVEL": "INFO"})
    seen: dict[str, dict[str, str]] = {}
    inside = threading.Event()
    leave = threading.Event()

    def invocation() -> None:
        with environ.overlaid({"LEVEL": "DEBUG", "STEPSAGA_FUNCTION": "Refund"}):
            environ["WRITTEN_BY_HANDLER"] = "1"
            seen["handler"] = dict(environ)
            inside.set()
            leave.wait(5)
        seen["handler after"] = dict(environ)

    worker = threading.Thread(target=invocation)
    worker.start()
    assert inside.wait(5)
    seen["test thread"] = dict(environ)
    leave.set()
    worker.join(5)

    assert seen["handler"] == {
        "HOME": "/root",
        "LEVEL": "DEBUG",
        "STEPSAGA_FUNCTION": "Refund",
        "WRITTEN_BY_HANDLER": "1",
    }
    assert seen["test thread"] == {"HOME": "/root", "LEVEL": "INFO"}
    assert seen["handler after"] == {"HOME": "/root", "LEVEL": "INFO"}
    assert environ.base == {"HOME": "/root", "LEVEL": "INFO"}


def test_a_nested_invocation_sees_its_own_function_then_the_outer_one_again() -> None:
    environ = ThreadEnviron({"HOME": "/root"})
    with environ.overlaid({"STEPSAGA_FUNCTION": "Resolver"}):
        with environ.overlaid({"STEPSAGA_FUNCTION": "ReleaseReservation"}):
            assert environ["STEPSAGA_FUNCTION"] == "ReleaseReservation"
        assert environ["STEPSAGA_FUNCTION"] == "Resolver"
    assert "STEPSAGA_FUNCTION" not in environ


def test_iterating_while_invocations_come_and_go_never_fails() -> None:
    environ = ThreadEnviron({f"BASE_{i}": str(i) for i in range(50)})
    stop = threading.Event()

    def invocations() -> None:
        while not stop.is_set():
            with environ.overlaid({f"FN_{i}": "x" for i in range(50)}):
                pass

    worker = threading.Thread(target=invocations)
    worker.start()
    try:
        for _ in range(300):
            assert len(dict(environ.items())) == 50  # the test thread never sees FN_*
    finally:
        stop.set()
        worker.join(5)
