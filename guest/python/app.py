"""The component: the typed `nomos:continuation/policy` exports for the host,
and `wasi:cli/run` for `wasmtime run policy.wasm CMD < input`.

This module only adapts. The host's records arrive as componentize-py
dataclasses with the same attribute names as nomos_policy.types, so they are
handed to the policy as they are; the answers are converted to the binding's
variants on the way out.

componentize-py generates the `wit_world` package while it builds; it is not
kept in the repository (run build.sh with BINDINGS=1 to get stubs for an
editor).
"""

import sys

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import environment
from wit_world.imports import types as wit

import nomos_policy
from nomos_policy import cli, types
from nomos_policy.classify import classify, person_need
from nomos_policy.decide import decide
from nomos_policy.links import extract_links
from nomos_policy.soul import soul

_OUTCOMES = {
    types.Outcome.COMPLETED: wit.Outcome.COMPLETED,
    types.Outcome.FAILED: wit.Outcome.FAILED,
    types.Outcome.CANCELLED: wit.Outcome.CANCELLED,
}


_PERSON_NEEDS = {
    types.PersonNeed.INPUT: wit.PersonNeed.INPUT,
    types.PersonNeed.AUTHORIZATION: wit.PersonNeed.AUTHORIZATION,
}

_PROTOCOLS = {
    types.TaskProtocol.MCP: wit.TaskProtocol.MCP,
    types.TaskProtocol.A2A: wit.TaskProtocol.A2A,
}


def _link(found: types.LinkRef) -> wit.LinkRef:
    if isinstance(found, types.ExecutionLink):
        return wit.LinkRef_Execution(found.id)
    task = found.task
    return wit.LinkRef_Task(wit.TaskRef(protocol=_PROTOCOLS[task.protocol], id=task.id))


def _decision(answer: types.Decision) -> wit.Decision:
    if isinstance(answer, types.Continue):
        return wit.Decision_Continue(answer.note)
    if isinstance(answer, types.Drop):
        return wit.Decision_Drop(answer.reason)
    return wit.Decision_Wait()


class Policy(exports.Policy):
    """The typed exports the host calls.

    An exception escaping one of these methods is a trap: the host sees the
    call fail (and the policy's stderr, if it captures it) and falls back to
    its own safe answer, so there is no error value to return here.
    """

    def extract_links(self, text: str) -> list[wit.LinkRef]:
        return [_link(found) for found in extract_links(text)]

    def classify(self, status: str) -> wit.StatusClass:
        outcome = classify(status)
        if outcome is not None:
            return wit.StatusClass_Terminal(_OUTCOMES[outcome])
        need = person_need(status)
        if need is not None:
            return wit.StatusClass_AwaitingPerson(_PERSON_NEEDS[need])
        return wit.StatusClass_NonTerminal()

    def decide(self, input: wit.DecisionInput) -> wit.Decision:
        return _decision(decide(input))

    def decide_batch(self, inputs: list[wit.DecisionInput]) -> list[wit.Decision]:
        return [_decision(decide(one)) for one in inputs]

    def soul(self) -> str:
        return soul()

    def describe(self) -> wit.PolicyInfo:
        info = nomos_policy.describe()
        return wit.PolicyInfo(name=info.name, version=info.version, contract=info.contract)


class Run(exports.Run):
    """`wasmtime run policy.wasm CMD < input`."""

    def run(self) -> None:
        # sys.argv was fixed when the component was pre-initialised at build
        # time, so the arguments are asked for at run time.
        args = environment.get_arguments()[1:]
        status = cli.main(args, sys.stdin.buffer, sys.stdout.buffer, sys.stderr.buffer)
        if status != 0:
            # WASI 0.2 reports only failure, which wasmtime shows as status 1.
            raise Err(None)
