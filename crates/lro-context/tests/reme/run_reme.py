"""Runs ReMe 0.3.1.10's own MessageOffloadOp on requests (a JSON array on
stdin) and prints what it did for each (a JSON array on stdout): the
resulting messages and write_file_dict. One process for every case: the
imports take seconds. Runs in the pinned venv (setup.sh), without any LLM: compact
mode needs only a token counter, and flowllm's service config names an LLM
whose counter is the `base` one (characters / 4).
"""

import asyncio
import json
import logging
import sys

from loguru import logger

logger.remove()  # ReMe logs every decision; keep stdout for the answer
logging.disable(logging.CRITICAL)

from flowllm.core.context import C  # noqa: E402
from flowllm.core.context.flow_context import FlowContext  # noqa: E402
from flowllm.core.schema.service_config import LLMConfig, LLMTokenCountConfig, ServiceConfig  # noqa: E402

C.service_config = ServiceConfig(
    llm={"default": LLMConfig(backend="openai_compatible", model_name="none", token_count=LLMTokenCountConfig(backend="base"))}
)

from reme_ai.summary.working.message_offload_op import MessageOffloadOp  # noqa: E402


def run(request: dict) -> dict:
    context = FlowContext(**request)
    op = MessageOffloadOp()
    op.raise_exception = True
    asyncio.run(op.async_call(context=context))
    return {
        "success": context.response.success,
        "messages": context.response.answer,
        "write_file_dict": context.response.metadata.get("write_file_dict", {}),
    }


def main() -> None:
    print(json.dumps([run(r) for r in json.load(sys.stdin)]))


main()
