"""The core's cost: the manager per usage observation, and one masking pass.

Aims (issue 2): at most 20 microseconds per usage observation, at most 10 ms to
plan and apply one masking pass over a 2,000-message transcript. Medians of
many repetitions, measured with perf_counter_ns; a busy machine shifts them.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from dataclasses import replace

from mala_tui.config import Settings
from mala_tui.core.manager import ContextManager
from mala_tui.core.masking import plan_masking
from mala_tui.core.observations import MessageObserved, UsageObserved
from mala_tui.core.transcript import Message, Role, TextBlock, ToolCall, ToolResult, Transcript
from mala_tui.core.usage import CallUsage
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.run.session_limits import limits_from

WINDOW = 200_000


def conversation(messages: int, result_chars: int) -> list[Message]:
    """A prompt, then Read calls and their results alternating: `messages` messages in all."""
    body = ("    def handler(self, request):  # a typical line of source\n" * 64)[:result_chars]
    built = [Message.user_text("Refactor the request handlers.")]
    for index in range((messages - 1) // 2):
        tool_id = f"toolu_{index:06d}"
        path = f"/work/src/module_{index:04d}.py"
        built.append(
            Message(
                Role.ASSISTANT,
                (
                    TextBlock("Reading the next module."),
                    ToolCall(tool_id, "Read", {"file_path": path}),
                ),
            )
        )
        built.append(Message(Role.USER, (ToolResult(tool_id, body),)))
    return built


def time_usage_observations(
    transcript_messages: int, tokens: int, repeats: int, *, new_result_each_call: bool = False
) -> list[int]:
    """Nanoseconds per UsageObserved on a manager holding a real transcript."""
    manager = ContextManager(
        name="bench",
        task="bench",
        limits=replace(limits_from(Settings()), context_limit=WINDOW, mask_min_batch_tokens=10**9),
        prompts=load_prompts(),
    )
    manager.start(0.0)
    for message in conversation(transcript_messages, 400)[1:]:
        manager.observe(MessageObserved(0.0, message))
    samples = []
    for index in range(repeats):
        if new_result_each_call:
            # A new tool result since the last call: the manager has to plan again.
            manager.observe(MessageObserved(0.0, Message.user_text(f"note {index}")))
        observation = UsageObserved(float(index), CallUsage(7, 300, tokens + index % 50, 120))
        started = time.perf_counter_ns()
        manager.observe(observation)
        samples.append(time.perf_counter_ns() - started)
    return samples


def time_masking_pass(messages: int, repeats: int) -> list[int]:
    """Nanoseconds to plan a mask over `messages` messages and apply it to the transcript."""
    base = conversation(messages, 2_000)
    samples = []
    for _ in range(repeats):
        transcript = Transcript(base)
        started = time.perf_counter_ns()
        plan = plan_masking(
            transcript.exchanges(), tokens_to_free=60_000, keep_recent=4, min_batch_tokens=8_000
        )
        transcript.replace_results(plan.placeholders)
        samples.append(time.perf_counter_ns() - started)
        assert plan, "the benchmark transcript should have something to mask"
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench core")
    parser.add_argument("--repeats", type=int, default=20_000)
    parser.add_argument("--mask-repeats", type=int, default=60)
    args = parser.parse_args(argv)

    print(
        f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}"
    )
    normal = time_usage_observations(200, tokens=60_000, repeats=args.repeats)
    soft = time_usage_observations(
        2_000, tokens=150_000, repeats=max(200, args.repeats // 20), new_result_each_call=True
    )
    masking = time_masking_pass(2_000, args.mask_repeats)

    def micro(samples: list[int]) -> str:
        ordered = sorted(samples)
        p99 = ordered[int(len(ordered) * 0.99) - 1]
        return f"median {statistics.median(samples) / 1000:.1f} us, p99 {p99 / 1000:.1f} us"

    print(f"usage observation, normal zone, 200-message transcript: {micro(normal)} (aim <= 20 us)")
    print(
        "usage observation, soft zone, 2,000 messages, new message each call, batch never "
        f"reached: {micro(soft)} (worst case: plans a mask every call)"
    )
    print(
        f"masking pass over 2,000 messages (plan + apply): median "
        f"{statistics.median(masking) / 1e6:.2f} ms, max {max(masking) / 1e6:.2f} ms (aim <= 10 ms)"
    )
    return 0
