"""An Agents SDK run whose session is curator's, for test_agents_runner.py: run in a
subprocess so that it can be killed (SIGKILL, from inside the run) and resumed in a new
process.

    python _agent_run.py DB SESSION_ID MODE RUNS_LOG [INPUT]

MODE is ``kill_in_tool`` (the tool records its run, then the process kills itself),
``kill_after_result`` (the process kills itself when the model is called with the tool's
result, which the runner recorded first), or ``finish``. RUNS_LOG gets one line per tool run
and one ``model <n items>`` line per model call. The stand-in model calls the tool ``du``
once, then answers; it never reaches the network. The final output is printed.
"""

import asyncio
import json
import os
import signal
import sys

from agents import Agent, ModelSettings, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from openai.types.responses.response_reasoning_item import ResponseReasoningItem, Summary

from curator_context.agents import CuratorSession

db, session_id, mode, runs_log = sys.argv[1:5]
user_input = sys.argv[5] if len(sys.argv) > 5 else None


def log(line):
    with open(runs_log, "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


@function_tool
def du(path: str) -> str:
    """Disk usage of a folder."""
    log(f"tool du {path}")
    if mode == "kill_in_tool":
        os.kill(os.getpid(), signal.SIGKILL)
    return f"{path}: 4096 blocks"


class StandIn(Model):
    """Calls ``du`` when the input holds no call yet, answers once the call has its output."""

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, *, previous_response_id=None, conversation_id=None, prompt=None, **kwargs):
        items = [input] if isinstance(input, str) else list(input)
        log(f"model {len(items)}")
        with open(runs_log + ".input.json", "w") as f:
            json.dump(items, f)
        outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if outputs:
            if mode == "kill_after_result":
                os.kill(os.getpid(), signal.SIGKILL)
            text = ResponseOutputText(type="output_text", text=f"Found: {outputs[-1]['output']}", annotations=[])
            out = [ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed", content=[text])]
        else:
            n = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call")
            out = [
                ResponseReasoningItem(id=f"rs_{n}", type="reasoning", summary=[Summary(type="summary_text", text="check /var/log")]),
                ResponseFunctionToolCall(id=f"fc_{n}", type="function_call", call_id=f"call_{n}", name="du", arguments='{"path": "/var/log"}', status="completed"),
            ]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the stand-in model does not stream")


async def main():
    agent = Agent(name="shell", instructions="You are a shell agent.", model=StandIn(), tools=[du], model_settings=ModelSettings())
    max_tokens = os.environ.get("CURATOR_TEST_MAX_TOKENS")
    session = CuratorSession(session_id, db, max_tokens=int(max_tokens) if max_tokens else None)
    # Resuming: no new input, the session holds the conversation.
    result = await Runner.run(agent, user_input if user_input is not None else [], session=session)
    print(result.final_output)


asyncio.run(main())
