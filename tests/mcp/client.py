"""Drives `toolhost mcp` with the official MCP Python client, for the Rust
tests in cli/tests/mcp.rs and the MCP benchmark.

    client.py (--stdio CMD ARG… | --http URL [--token TOKEN]) SCENARIO [ARG…]

Each scenario prints what it observed as one JSON object on stdout; the
Rust tests hold the assertions. Nothing here decides pass or fail, except
that a scenario that cannot run at all exits non-zero.
"""

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import time
from contextlib import asynccontextmanager

import httpx2
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def connect(args, **session_options):
    """One initialized client session to the server the arguments name."""
    if args.stdio:
        params = StdioServerParameters(command=args.stdio[0], args=args.stdio[1:])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, **session_options) as session:
                await session.initialize()
                yield session
    else:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0)) as http:
            async with streamable_http_client(args.http, http_client=http) as streams:
                async with ClientSession(streams[0], streams[1], **session_options) as session:
                    await session.initialize()
                    yield session


def result_json(result):
    """What the tests look at of a CallToolResult."""
    return {
        "is_error": bool(result.is_error),
        "text": "".join(part.text for part in result.content if getattr(part, "type", None) == "text"),
        "structured": result.structured_content,
        "meta": result.meta,
    }


async def call(session, name, arguments, **options):
    """A call's result, or the protocol error it raised."""
    try:
        return result_json(await session.call_tool(name, arguments, **options))
    except Exception as error:  # the protocol error is what is observed
        return {"protocol_error": str(error)}


async def basics(args):
    async with connect(args) as session:
        listed = await session.list_tools()
        tools = {tool.name: tool for tool in listed.tools}

        def described(name):
            tool = tools.get(name)
            if tool is None:
                return None
            hints = tool.annotations
            return {
                "title": tool.title,
                "read_only": hints.read_only_hint if hints else None,
                "destructive": hints.destructive_hint if hints else None,
                "schema": tool.input_schema,
            }

        print(json.dumps({
            "tools": sorted(tools),
            "calculate": described("calculate"),
            "write_file": described("write_file"),
            "sum": await call(session, "calculate", {"expression": "6*7"}),
            "bad_argument": await call(session, "calculate", {}),
            "limit": await call(session, "spin", {}),
            "sensitive": await call(session, "write_file", {"path": "note.txt", "content": "hello"}),
            "unknown": await call(session, "calculat", {"expression": "1"}),
            "after": await call(session, "calculate", {"expression": "1+1"}),
            "bogus_cursor": await bogus_cursor(session),
        }))


async def bogus_cursor(session):
    """The error a tools/list with a cursor the server never gave raises."""
    try:
        await session.list_tools(params=types.PaginatedRequestParams(cursor="bogus"))
        return {"error": None}
    except Exception as error:
        return {"error": str(error), "code": getattr(getattr(error, "error", None), "code", None)}


async def approve(args):
    """Call write_file with a client that answers every elicitation as
    `--answer` says: approve, deny (with a reason) or decline."""
    asked = []

    async def on_elicit(context, params):
        asked.append({"message": params.message, "schema": params.requested_schema})
        if args.answer == "approve":
            return types.ElicitResult(action="accept", content={"approve": True})
        if args.answer == "deny":
            return types.ElicitResult(action="accept", content={"approve": False, "reason": "not today"})
        return types.ElicitResult(action="decline")

    async with connect(args, elicitation_callback=on_elicit) as session:
        result = await call(session, "write_file", {"path": "note.txt", "content": "approved over MCP"})
        print(json.dumps({"result": result, "asked": asked}))


async def slow_answer(args):
    """Call write_file with a client whose user answers only after
    `--delay` seconds, abandoning the call after `--abandon-after` seconds
    if given: what came back, how soon, and whether the server withdrew
    its question (the client's SDK interrupts the question's handler when
    the server cancels it)."""
    withdrawn = asyncio.Event()

    async def on_elicit(context, params):
        try:
            await asyncio.sleep(args.delay)
        except asyncio.CancelledError:
            withdrawn.set()
            raise
        return types.ElicitResult(action="accept", content={"approve": True})

    async with connect(args, elicitation_callback=on_elicit) as session:
        start = time.monotonic()
        options = {"read_timeout_seconds": args.abandon_after} if args.abandon_after else {}
        result = await call(session, "write_file", {"path": "late.txt", "content": "answered too late"}, **options)
        took = time.monotonic() - start
        try:
            await asyncio.wait_for(withdrawn.wait(), timeout=5)
        except asyncio.TimeoutError:
            pass
        after = await call(session, "calculate", {"expression": "2+3"})
        print(json.dumps({"result": result, "took_s": took, "withdrawn": withdrawn.is_set(), "after": after}))


async def reload_while_asked(args):
    """Call write_file; while the user is asked, remove the component
    (`--remove`) and wait until the server says its tools changed; then
    approve. What ran, and what is offered after."""
    changed = asyncio.Event()
    waited = {}

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification) or getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async def on_elicit(context, params):
        import os
        os.remove(args.remove)
        try:
            await asyncio.wait_for(changed.wait(), timeout=30)
            waited["notified"] = True
        except asyncio.TimeoutError:
            waited["notified"] = False
        return types.ElicitResult(action="accept", content={"approve": True})

    async with connect(args, elicitation_callback=on_elicit, message_handler=on_message) as session:
        result = await call(session, "write_file", {"path": "during.txt", "content": "approved before the reload"})
        after = sorted(tool.name for tool in (await session.list_tools()).tools)
        again = await call(session, "write_file", {"path": "again.txt", "content": "x"})
        print(json.dumps({"result": result, "notified": waited.get("notified"), "after": after, "again": again}))


async def list_changed(args):
    """List, drop a component into the watched directory, wait for
    `notifications/tools/list_changed`, list again."""
    changed = asyncio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification) or getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with connect(args, message_handler=on_message) as session:
        before = sorted(tool.name for tool in (await session.list_tools()).tools)
        shutil.copy(args.component, args.into)
        try:
            await asyncio.wait_for(changed.wait(), timeout=30)
            notified = True
        except asyncio.TimeoutError:
            notified = False
        after = sorted(tool.name for tool in (await session.list_tools()).tools)
        print(json.dumps({"before": before, "notified": notified, "after": after}))


async def cancel(args):
    """Abandon a slow call after a second (the client sends
    `notifications/cancelled`), then make a quick one."""
    async with connect(args) as session:
        start = time.monotonic()
        slow = await call(session, "wait_ms", {"ms": 30000}, read_timeout_seconds=1.0)
        abandoned_after = time.monotonic() - start
        quick = await call(session, "calculate", {"expression": "2+2"})
        print(json.dumps({"slow": slow, "abandoned_after_s": abandoned_after, "quick": quick}))


async def concurrent(args):
    """`--clients` sessions at once, each making `--calls` calls whose
    answers differ: every answer must be its own."""

    async def one_client(index):
        mismatched, failed = 0, 0
        async with connect(args) as session:
            for j in range(args.calls):
                expected = index * 100000 + j
                result = await call(session, "calculate", {"expression": f"{index} * 100000 + {j}"})
                if "protocol_error" in result or result["is_error"]:
                    failed += 1
                elif (result["structured"] or {}).get("value") != expected:
                    mismatched += 1
        return mismatched, failed

    outcomes = await asyncio.gather(*(one_client(i) for i in range(args.clients)), return_exceptions=True)
    errors = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    done = [o for o in outcomes if not isinstance(o, BaseException)]
    print(json.dumps({
        "clients": len(done),
        "mismatched": sum(m for m, _ in done),
        "failed": sum(f for _, f in done),
        "client_errors": errors[:5],
    }))


async def bench(args):
    """Round trips of `calculate`, after a warm-up: median and p99, µs."""
    async with connect(args) as session:
        for _ in range(50):
            await session.call_tool("calculate", {"expression": "6*7"})
        times = []
        for _ in range(args.calls):
            start = time.perf_counter_ns()
            await session.call_tool("calculate", {"expression": "6*7"})
            times.append((time.perf_counter_ns() - start) / 1000)
        times.sort()
        print(json.dumps({
            "calls": len(times),
            "median_us": statistics.median(times),
            "p99_us": times[int(len(times) * 0.99) - 1],
        }))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stdio", nargs="+")
    parser.add_argument("--http")
    parser.add_argument("--token")
    sub = parser.add_subparsers(dest="scenario", required=True)
    sub.add_parser("basics")
    approving = sub.add_parser("approve")
    approving.add_argument("--answer", choices=["approve", "deny", "decline"], required=True)
    slow = sub.add_parser("slow_answer")
    slow.add_argument("--delay", type=float, required=True)
    slow.add_argument("--abandon-after", type=float)
    reloading = sub.add_parser("reload_while_asked")
    reloading.add_argument("--remove", required=True)
    changing = sub.add_parser("list_changed")
    changing.add_argument("--component", required=True)
    changing.add_argument("--into", required=True)
    sub.add_parser("cancel")
    many = sub.add_parser("concurrent")
    many.add_argument("--clients", type=int, default=50)
    many.add_argument("--calls", type=int, default=100)
    timing = sub.add_parser("bench")
    timing.add_argument("--calls", type=int, default=2000)
    # `--stdio CMD ARG…` takes the rest of the line: it goes last.
    argv = sys.argv[1:]
    if "--stdio" in argv:
        at = argv.index("--stdio")
        command = argv[at + 1:]
        argv = argv[:at]
        args = parser.parse_args(argv)
        args.stdio = command
    else:
        args = parser.parse_args(argv)
    if not args.stdio and not args.http:
        parser.error("give --stdio CMD… or --http URL")
    asyncio.run(globals()[args.scenario](args))


if __name__ == "__main__":
    main()
