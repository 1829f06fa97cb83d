"""The interpreter's Pass, Choice, Wait and Fail states (part of ``Run``)."""

from __future__ import annotations

from stepsaga.engine._definition import ChoiceState, FailState, PassState, WaitState
from stepsaga.engine._errors import STATES_NO_CHOICE_MATCHED, describe, runtime_error
from stepsaga.engine._intrinsics import Call
from stepsaga.engine._jsonata_eval import Expression
from stepsaga.engine._models import DelayKind
from stepsaga.engine._paths import Path
from stepsaga.engine._run import Transition, _Failed, _Frame, _Next, _whole
from stepsaga.engine._task import RunTasks


class RunFlow(RunTasks):
    """Pass, Choice, Wait and Fail states."""

    # --- Pass, Choice, Wait, Fail --------------------------------------------------------

    def _run_pass(self, f: _Frame, state: PassState) -> Transition:
        data = f.input
        if state.jsonata:
            env = self._env(f, data)
            output = data if state.output is None else state.output.evaluate(env)
            return self._after(f, state, output, self._assigned(state.assign, env))
        effective = self._input(state.io, data)
        if state.parameters is not None:
            result = state.parameters.evaluate(self._env(f, effective))
        elif state.has_result:
            result = state.result
        else:
            result = effective
        assigned = self._assign_from(state.assign, f, result)
        return self._after(
            f,
            state,
            self._output(state.io, self._result_path(state.result_path, data, result)),
            assigned,
        )

    def _run_choice(self, f: _Frame, state: ChoiceState) -> Transition:
        """The first matching rule's ``Next`` (with that rule's ``Assign``/``Output``), else
        ``Default`` with the state's own ``Assign``/``Output``."""
        effective = self._input(state.io, f.input)
        env = self._env(f, effective)
        matched = next((i for i, (test, _) in enumerate(state.choices) if test(env)), None)
        if matched is None:
            target, assign, template = state.default, state.assign, state.output
        else:
            target = state.choices[matched][1]
            assign, template = state.rule_effects[matched] if state.rule_effects else (None, None)
        if target is None:
            return _Failed(STATES_NO_CHOICE_MATCHED, f"No Matches! (state '{state.name}')")
        if state.jsonata:
            output = effective if template is None else template.evaluate(env)
        else:
            output = self._output(state.io, effective)
        self._exit(f, state, output, self._assigned(assign, env))
        return _Next(target, output)

    def _run_wait(self, f: _Frame, state: WaitState) -> Transition:
        effective = self._input(state.io, f.input)
        env = self._env(f, effective)
        seconds: float
        if state.seconds_expr is not None:
            seconds = _whole(state.seconds_expr, env, minimum=0)
        elif state.timestamp_expr is not None:
            from stepsaga.engine._choice import parse_timestamp

            value = state.timestamp_expr.evaluate(env)
            moment = parse_timestamp(value)
            if moment is None:
                raise state.timestamp_expr.error(f"returned {describe(value)}, not a timestamp")
            seconds = max(0.0, moment.timestamp() - self._now())
        elif state.seconds is not None:
            seconds = state.seconds
        elif state.seconds_path is not None:
            value = self._read_in(f, state.seconds_path, effective, "SecondsPath")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise runtime_error(
                    f"The SecondsPath '{state.seconds_path.text}' must point to a non-negative "
                    f"integer, got {describe(value)}"
                )
            seconds = value
        else:
            from stepsaga.engine._choice import parse_timestamp

            when = state.timestamp
            if state.timestamp_path is not None:
                raw = self._read_in(f, state.timestamp_path, effective, "TimestampPath")
                when = parse_timestamp(raw)
                if when is None:
                    raise runtime_error(
                        f"The TimestampPath '{state.timestamp_path.text}' must point to an "
                        f"RFC 3339 timestamp, got {describe(raw)}"
                    )
            assert when is not None
            seconds = max(0.0, when.timestamp() - self._now())
        self._pause(f, state.name, DelayKind.WAIT, f.event, 0, None, float(seconds))
        if state.jsonata:
            output = effective if state.output is None else state.output.evaluate(env)
        else:
            output = self._output(state.io, effective)
        return self._after(f, state, output, self._assigned(state.assign, env))

    def _run_fail(self, f: _Frame, state: FailState) -> Transition:
        def text(
            value: str | None, source: Path | Call | Expression | None, field: str
        ) -> str | None:
            if source is None:
                return value
            if isinstance(source, Call | Expression):
                result = source.evaluate(self._env(f, f.input))
            else:
                result = self._read_in(f, source, f.input, field)
            if not isinstance(result, str):
                raise runtime_error(f"The {field} must resolve to a string, got {describe(result)}")
            return result

        error = text(state.error, state.error_path, "ErrorPath")
        cause = text(state.cause, state.cause_path, "CausePath")
        return _Failed(error or "", cause or "")
