#!/usr/bin/env python3
"""Drive `sam deploy --guided` in a pseudo-terminal, as a person would.

    python sam_guided.py ANSWERS_JSON -- SAM_COMMAND...

ANSWERS_JSON maps a prompt's label (as SAM prints it, e.g. "Stack Name",
"Parameter JwtIssuer") to the line typed there; every other prompt gets an
empty line (its default), which is what the docs tell a new user to do.
SAM (click) asks again when it refuses a line, for example an empty line
where a parameter has no default: a prompt asked twice in a row is a
prompt the docs' answers cannot get past, and ends the run.

Prints one JSON report: the prompts in order ([label, default, answer]),
`asked_again` (the label, or null), `reached` (whether SAM got past every
prompt to "Initiating deployment"), SAM's exit status and the output's
tail (ANSI colours taken out).
"""

import json
import os
import pty
import re
import select
import sys
import time

ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")
# A click prompt: "\tLabel [default]: " (or "Label: ") at the end of the output.
PROMPT = re.compile(r"(?:^|\n)\t?#?(?P<label>[^\n\[\]#]+?)(?: \[(?P<default>[^\]\n]*)\])?: $")
QUIET_SECS = 120


def main():
    answers = json.loads(sys.argv[1])
    command = sys.argv[sys.argv.index("--") + 1 :]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    out = b""
    answered_at = 0
    prompts = []
    asked_again = None
    last_output = time.time()
    while True:
        # A prompt is what the output ends with once it pauses: a line that
        # merely ends in ": " mid-stream is not one.
        ready, _, _ = select.select([fd], [], [], 0.3)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                break
            out += data
            last_output = time.time()
            continue
        if time.time() - last_output > QUIET_SECS:
            os.kill(pid, 9)
            break
        text = ANSI.sub(b"", out[answered_at:]).decode("utf-8", "replace").replace("\r", "")
        m = PROMPT.search(text)
        if not m:
            continue
        label, default = m.group("label").strip(), m.group("default")
        if prompts and prompts[-1][0] == label:
            asked_again = label
            os.kill(pid, 9)
            break
        answer = answers.get(label, "")
        prompts.append([label, default, answer])
        answered_at = len(out)
        os.write(fd, answer.encode() + b"\r")
    _, status = os.waitpid(pid, 0)
    text = ANSI.sub(b"", out).decode("utf-8", "replace").replace("\r", "")
    print(
        json.dumps(
            {
                "prompts": prompts,
                "asked_again": asked_again,
                "reached": "Initiating deployment" in text,
                "exit": os.waitstatus_to_exitcode(status),
                "tail": text[-3000:],
            }
        )
    )


if __name__ == "__main__":
    main()
