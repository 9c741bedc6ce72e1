"""The commands of `wasmtime run policy.wasm CMD < input`.

Each command reads all of stdin, calls the same function the typed export
calls, and writes one JSON document (or, for `soul`, the text) and a newline.
Bad input prints one line on stderr, `error: ...`, and fails: with status 2
natively (`python -m nomos_policy.cli`), and with status 1 under `wasmtime
run`, where a WASI 0.2 program can report only success or failure (as the
Rust policy does there).
"""

from __future__ import annotations

import sys
from typing import BinaryIO, Sequence

from . import describe, jsonform
from .classify import classify, person_need
from .decide import decide, decide_batch
from .links import extract_links
from .soul import soul
from .types import InputError

# Stdin is refused beyond this size, so a runaway pipe cannot exhaust the
# guest's memory.
MAX_INPUT = 4 * 1024 * 1024

# The exit status for bad input or bad usage.
EXIT_BAD_INPUT = 2

USAGE = "usage: policy.wasm <extract-links|classify|decide|decide-batch|soul|describe> < input"

COMMANDS = ("extract-links", "classify", "decide", "decide-batch", "soul", "describe")


class CliError(Exception):
    """Why a command could not run; shown as one line."""

    def line(self) -> str:
        return "error: " + str(self).replace("\n", " ")


def parse_command(args: Sequence[str]) -> str:
    """The command named by the arguments after the program name."""
    if not args:
        raise CliError(USAGE)
    if len(args) > 1:
        raise CliError(f"unexpected argument {jsonform.dumps(args[1])}; {USAGE}")
    if args[0] not in COMMANDS:
        raise CliError(f"unknown command {jsonform.dumps(args[0])}; {USAGE}")
    return args[0]


def read_input(stream: BinaryIO) -> str:
    """All of stdin as UTF-8, refusing more than MAX_INPUT bytes."""
    chunks = []
    size = 0
    # Read until end of input: a pipe may deliver less than asked per read.
    while size <= MAX_INPUT:
        chunk = stream.read(MAX_INPUT + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > MAX_INPUT:
        raise CliError(f"input is larger than {MAX_INPUT} bytes")
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as e:
        raise CliError(f"input is not UTF-8: {e}") from None


def run(command: str, text: str) -> str:
    """Runs one command on its input and returns what goes to stdout."""
    if command == "soul":
        return soul()
    if command == "extract-links":
        answer = [jsonform.link(found) for found in extract_links(text)]
    elif command == "classify":
        answer = jsonform.status_class(classify(text), person_need(text))
    elif command == "decide":
        answer = jsonform.decision(decide(_parse(text, jsonform.decision_input, "decision input")))
    elif command == "decide-batch":
        inputs = _parse(text, jsonform.decision_inputs, "decision inputs")
        answer = [jsonform.decision(d) for d in decide_batch(inputs)]
    else:
        answer = jsonform.policy_info(describe())
    return jsonform.dumps(answer) + "\n"


def _parse(text, read, what):
    try:
        return read(jsonform.loads(text))
    except InputError as e:
        raise CliError(f"invalid {what}: {e}") from None


def main(args: Sequence[str], stdin: BinaryIO, stdout: BinaryIO, stderr: BinaryIO) -> int:
    """The whole command line; returns the exit status."""
    try:
        command = parse_command(args)
        text = read_input(stdin) if command not in ("soul", "describe") else ""
        output = run(command, text)
    except CliError as e:
        stderr.write((e.line() + "\n").encode("utf-8"))
        stderr.flush()
        return EXIT_BAD_INPUT
    stdout.write(output.encode("utf-8"))
    stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], sys.stdin.buffer, sys.stdout.buffer, sys.stderr.buffer))
