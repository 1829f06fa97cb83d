"""``read_json_file``: what every case, faults and mock-config file goes through.

A repeated key, a special file, ``NaN`` and numbers Python would not hold exactly are each one
``InvalidInputError`` line; none of them may silently change what the file says, or hang.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services import load_faults
from stepsaga._model.inputs import MAX_JSON_DEPTH, read_json_file
from stepsaga.engine import MockConfig
from stepsaga.errors import InvalidInputError, MockConfigError
from tests.framework.functional.cli_support import case_data
from workflows.case import load_case

Loader = Callable[[Path], object]
#: The three file readers of the CLI, each over ``read_json_file``.
LOADERS: dict[str, Loader] = {
    "case": load_case,
    "faults": load_faults,
    "mock config": MockConfig.from_file,
}


def read(path: Path) -> object:
    return read_json_file(path, what="case file", max_bytes=64 * 1024)


@pytest.mark.parametrize(
    ("text", "key", "where"),
    [
        ('{"tenant_id": "acme", "tenant_id": "evil"}', "tenant_id", "the top-level object"),
        ('{"approval": {"revision": 1, "revision": 2}}', "revision", "approval"),
        ('{"a": [1, {"b": 1, "b": 2}]}', "b", "a.1"),
        ('{"a": [[[{"x": {"y": 1, "y": 1}}]]]}', "y", "a.0.0.0.x"),
        ('[{"k": 1}, [{"k": 1, "k": 2}]]', "k", "1.0"),
        ('{"a": {}, "a": {}}', "a", "the top-level object"),
        ('{"\\n": 1, "\\n": 2}', '"\\n"', "the top-level object"),
    ],
    ids=["top level", "nested", "in a list", "lists of lists", "top-level list", "equal", "odd"],
)
def test_a_duplicate_key_at_any_depth_is_refused_naming_key_and_path(
    tmp_path: Path, text: str, key: str, where: str
) -> None:
    path = tmp_path / "case.json"
    path.write_text(text)
    with pytest.raises(InvalidInputError) as caught:
        read(path)
    assert caught.value.message == f"{path}: duplicate key {key} in {where} (a key may appear once)"


def test_a_deep_duplicate_names_a_shortened_path(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"a":' * 50 + '{"z": 1, "z": 2}' + "}" * 50)
    with pytest.raises(InvalidInputError) as caught:
        read(path)
    assert "duplicate key z in a.a.a.….a.a.a.a" in caught.value.message
    assert len(caught.value.message) < 200


def test_without_duplicates_the_data_is_plain_dicts_and_lists(tmp_path: Path) -> None:
    data = {"a": [1, {"b": [[{"c": None}]]}], "d": {"e": 1.5, "f": -0.0}, "g": "x"}
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(data))
    assert read(path) == data
    assert type(read(path)) is dict


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_every_loader_refuses_duplicate_keys(tmp_path: Path, name: str) -> None:
    raw = json.dumps(case_data())
    text = raw.replace('"tenant_id": "acme"', '"tenant_id": "acme", "tenant_id": "evil"')
    assert text != raw
    path = tmp_path / "file.json"
    path.write_text(text)
    with pytest.raises(InvalidInputError, match="duplicate key tenant_id"):
        LOADERS[name](path)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"a": NaN}', "NaN is not a JSON value"),
        ('{"a": -Infinity}', "-Infinity is not a JSON value"),
        ('{"a": 1e400}', "cannot be held exactly"),
        ('{"a": 19.9999999999999999999999999999}', "cannot be held exactly"),
        ('{"a": 1e-400}', "cannot be held exactly"),
        ('{"a": ' + "9" * 5000 + "}", "more than 100 digits"),
        ('{"a": 0.' + "1" * 200 + "}", "more than 100 characters"),
    ],
)
def test_numbers_json_does_not_hold_exactly_are_refused(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "n.json"
    path.write_text(text)
    with pytest.raises(InvalidInputError) as caught:
        read(path)
    assert says in caught.value.message
    assert len(caught.value.message) < 200


@pytest.mark.parametrize("text", ['{"a": 0.1}', '{"a": 1E2}', '{"a": 20.10}', '{"a": -0.0}'])
def test_ordinary_floats_still_read(tmp_path: Path, text: str) -> None:
    path = tmp_path / "n.json"
    path.write_text(text)
    assert read(path) == json.loads(text)


def _in_thread(call: Callable[[], object], timeout: float) -> BaseException | None:
    """Run ``call``; return what it raised, or fail if it is still running after ``timeout``."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    return outcome[0] if outcome else TimeoutError(f"still running after {timeout} s")


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_a_fifo_is_refused_at_once_not_read_forever(tmp_path: Path, name: str) -> None:
    fifo = tmp_path / "case.json"
    os.mkfifo(fifo)
    try:
        raised = _in_thread(lambda: LOADERS[name](fifo), timeout=5)
    finally:
        # Release a reader that blocked in open() (the bug), so the thread can end.
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert isinstance(raised, InvalidInputError), raised
    assert "is a named pipe (FIFO), not a regular file" in raised.message
    if name == "mock config":
        assert isinstance(raised, MockConfigError)


def test_a_fifo_with_a_writer_is_still_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(writer, b"{}")
        raised = _in_thread(lambda: read(fifo), timeout=5)
    finally:
        os.close(writer)
        os.close(reader)
    assert isinstance(raised, InvalidInputError), raised


def test_devices_sockets_and_directories_are_refused(tmp_path: Path) -> None:
    sock_path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    try:
        cases = {
            Path("/dev/zero"): "is a character device, not a regular file",
            Path("/dev/null"): "is a character device, not a regular file",
            sock_path: "is a socket, not a regular file",
            tmp_path: "is a directory, not a case file",
        }
        for path, says in cases.items():
            if not path.exists():
                continue
            raised = _in_thread(lambda path=path: read(path), timeout=5)  # type: ignore[misc]
            assert isinstance(raised, InvalidInputError), (path, raised)
            assert raised.message == f"{path}: {says}" + (
                "; give the case file itself" if "regular" in says else ""
            )
    finally:
        server.close()


def test_a_symlink_to_a_regular_file_is_read(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text('{"a": 1}')
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert read(link) == {"a": 1}


def test_a_path_that_would_break_the_line_is_quoted(tmp_path: Path) -> None:
    path = tmp_path / "two\nlines.json"
    with pytest.raises(InvalidInputError) as caught:
        read(path)
    assert "\n" not in caught.value.message
    assert caught.value.message.endswith('lines.json": no such file')


def test_a_file_below_a_file_is_no_such_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("{}")
    with pytest.raises(InvalidInputError, match="no such file"):
        read(tmp_path / "f" / "case.json")


# --- "-": stdin under the file rules ---------------------------------------------------------


def _outcome(read_it: Callable[[], object], shown: str) -> tuple[str, object]:
    try:
        return "value", read_it()
    except InvalidInputError as exc:
        return "refused", exc.message.replace(shown, "NAME", 1)


@settings(max_examples=150, deadline=None)
@given(
    raw=st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=10,
        ).map(lambda value: json.dumps(value).encode()),
        st.sampled_from([b'{"a": 1, "a": 2}', b'{"x": [{"k": 1, "k": 1}]}', b"1e400", b"-"]),
    )
)
def test_stdin_reads_exactly_as_a_file_does(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "in.json"
        path.write_bytes(raw)
        from_file = _outcome(lambda: read_json_file(path, what="x", max_bytes=200), str(path))
    from_stdin = _outcome(
        lambda: read_json_file(Path("-"), what="x", max_bytes=200, stdin=io.BytesIO(raw)),
        "<stdin>",
    )
    assert from_stdin == from_file


def test_nesting_is_bounded_the_same_on_every_python(tmp_path: Path) -> None:
    """Python 3.13's decoder parses 5,000 levels that 3.11's refused: the bound is ours."""
    deepest = tmp_path / "deepest.json"
    deepest.write_text('{"a": ' + "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1) + "}")
    assert isinstance(read_json_file(deepest, what="case", max_bytes=1 << 20), dict)
    too_deep = tmp_path / "too-deep.json"
    too_deep.write_text('{"a": ' + "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH + "}")
    with pytest.raises(InvalidInputError, match=r"too-deep\.json: JSON nested too deeply$"):
        read_json_file(too_deep, what="case", max_bytes=1 << 20)
    in_a_string = tmp_path / "brackets-in-a-string.json"
    in_a_string.write_text(json.dumps({"note": "[" * (2 * MAX_JSON_DEPTH) + '\\"{'}))
    value = read_json_file(in_a_string, what="case", max_bytes=1 << 20)
    assert isinstance(value, dict)
    assert value["note"].startswith("[[")
