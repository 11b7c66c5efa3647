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
import os
import resource
import shutil
import statistics
import sys
import time
from contextlib import asynccontextmanager

import httpx2
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.client import Client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def connect(args, **session_options):
    """One client connected to the server the arguments name: a
    `ClientSession` after the `initialize` handshake (`--mode session`, the
    default), or the SDK's `Client` in `--mode legacy`, `auto` (it probes
    `server/discover` first) or `2026-07-28` (no handshake at all)."""
    if args.mode != "session":
        async with connect_client(args, args.stdio, args.http, **session_options) as client:
            yield client
        return
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


@asynccontextmanager
async def connect_client(args, stdio, http, **options):
    """The SDK's `Client` in `args.mode`, to `stdio` (a command line) or
    `http` (a URL, with `args.token` if given)."""
    if stdio:
        async with Client(StdioServerParameters(command=stdio[0], args=stdio[1:]), mode=args.mode, **options) as client:
            yield client
        return
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0)) as client_http:
        transport = streamable_http_client(http, http_client=client_http)
        async with Client(transport, mode=args.mode, **options) as client:
            yield client


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
        if isinstance(session, Client):
            await session.list_tools(cursor="bogus")
        else:
            await session.list_tools(params=types.PaginatedRequestParams(cursor="bogus"))
        return {"error": None}
    except Exception as error:
        return {"error": str(error), "code": getattr(getattr(error, "error", None), "code", None)}


def answering(answer, asked):
    """An elicitation callback that answers every question as `answer`
    says (approve, always, deny with a reason, decline), noting each."""

    async def on_elicit(context, params):
        asked.append({"message": params.message, "schema": params.requested_schema})
        if answer == "approve":
            return types.ElicitResult(action="accept", content={"approve": True, "pass": True})
        if answer == "always":
            return types.ElicitResult(action="accept", content={"approve": True, "always": True, "pass": True})
        if answer == "deny":
            return types.ElicitResult(action="accept", content={"approve": False, "pass": False, "reason": "not today"})
        if answer == "withhold":
            # Runs the call, keeps its result: the two questions' forms
            # differ, one asking to approve, the other to pass.
            return types.ElicitResult(action="accept", content={"approve": True, "pass": False, "reason": "private"})
        return types.ElicitResult(action="decline")

    return on_elicit


async def approve(args):
    """Call `--tool` (write_file by default) with a client that answers
    every question as `--answer` says."""
    asked = []
    arguments = json.loads(args.arguments) if args.arguments else {"path": "note.txt", "content": "approved over MCP"}
    async with connect(args, elicitation_callback=answering(args.answer, asked)) as session:
        result = await call(session, args.tool, arguments)
        print(json.dumps({"result": result, "asked": asked, "version": getattr(session, "protocol_version", None)}))


async def start(args):
    """Connect and initialize, nothing more: what the server said if it
    could not start."""
    try:
        async with connect(args) as session:
            print(json.dumps({"started": True}))
    except Exception as error:  # the refusal is what is observed

        def flat(error):
            nested = getattr(error, "exceptions", None)
            return [m for inner in nested for m in flat(inner)] if nested else [str(error)]

        print(json.dumps({"started": False, "error": " | ".join(flat(error))}))


async def call_once(args):
    """Call `--tool` with `--arguments` from a client that cannot be asked
    anything (no elicitation)."""
    async with connect(args) as session:
        print(json.dumps({"result": await call(session, args.tool, json.loads(args.arguments))}))


async def at_once(args):
    """`--calls` calls of `wait_ms` for `--ms` each, all at once, from one
    client: what each returned."""
    async with connect(args) as session:
        results = await asyncio.gather(*(call(session, "wait_ms", {"ms": args.ms}) for _ in range(args.calls)))
        print(json.dumps({"results": list(results)}))


async def beside_a_busy_call(args):
    """Start `--busy` and, `--after-ms` later while it runs, time a call
    of `calculate`: how long that took, and whether the busy call was
    still running when it was answered."""
    async with connect(args) as session:
        busy = asyncio.create_task(call(session, args.busy, {}))
        await asyncio.sleep(args.after_ms / 1000)
        start = time.monotonic()
        quick = await call(session, "calculate", {"expression": "6*7"})
        quick_ms = (time.monotonic() - start) * 1000
        busy_meanwhile = not busy.done()
        print(json.dumps({"quick": quick, "quick_ms": quick_ms, "busy_meanwhile": busy_meanwhile, "busy": await busy}))


async def listen(args):
    """Listen for the tools changing (2026-07-28 `subscriptions/listen`),
    drop a component into the watched directory, and list again."""
    async with connect(args) as client:
        before = sorted(tool.name for tool in (await client.list_tools()).tools)
        async with client.listen(tools_list_changed=True) as subscription:
            shutil.copy(args.component, args.into)
            notified = False
            try:
                # The reload compiles the component on a cold cache, which a
                # loaded 2-core machine (a CI run beside builds) took over
                # 30 s to do.
                async with asyncio.timeout(90):
                    async for _event in subscription:
                        notified = True
                        break
            except TimeoutError:
                pass
        after = sorted(tool.name for tool in (await client.list_tools()).tools)
        print(json.dumps({"before": before, "notified": notified, "after": after}))


async def resume(args):
    """Drive the 2026-07-28 rounds of one call by hand: ask `--first` (a
    URL), answer as `--answer` says, and retry at `--second` (the same or
    another replica), then, as `--tamper` says, retry again with the state
    altered, with other arguments, or the same retry a second time
    (`replay`), after `--wait` seconds. What each round returned."""
    arguments = json.loads(args.arguments)
    asked = []
    on_elicit = answering(args.answer, asked)

    def shown(result):
        if isinstance(result, types.InputRequiredResult):
            return {"input_required": sorted(result.input_requests or {}), "has_state": bool(result.request_state)}
        return result_json(result)

    async def once(url, **options):
        async with connect_client(args, None, url, elicitation_callback=on_elicit) as client:
            try:
                return await client.session.call_tool(args.tool, options.pop("arguments", arguments), allow_input_required=True, **options)
            except Exception as error:
                return {"protocol_error": str(error), "code": getattr(getattr(error, "error", None), "code", None)}

    first = await once(args.first)
    seen = {"first": shown(first) if not isinstance(first, dict) else first}
    if not isinstance(first, types.InputRequiredResult):
        print(json.dumps(seen))
        return
    responses = {}
    for key, request in (first.input_requests or {}).items():
        answer = await on_elicit(None, request.params)
        responses[key] = answer.model_dump(by_alias=True, exclude_none=True)
    state = first.request_state
    await asyncio.sleep(args.wait)
    if args.tamper == "state":
        state = state[:-6] + ("AAAAAA" if not state.endswith("AAAAAA") else "BBBBBB")
    other = dict(arguments, **(json.loads(args.other) or {"tampered": True})) if args.tamper == "arguments" else arguments
    second = await once(args.second, arguments=other, input_responses=responses, request_state=state)
    seen["second"] = second if isinstance(second, dict) else shown(second)
    seen["asked"] = asked
    if args.tamper == "replay":
        again = await once(args.second, input_responses=responses, request_state=state)
        seen["again"] = again if isinstance(again, dict) else shown(again)
    print(json.dumps(seen))


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


async def change_tools(args):
    """What changes the tools: a component dropped into the watched
    directory (`--component`, `--into`), or a JSON POST (`--post URL
    --body JSON --bearer TOKEN`: a console's page turning a tool off)."""
    if args.post:
        headers = {"Authorization": f"Bearer {args.bearer}", "Content-Type": "application/json"}
        async with httpx2.AsyncClient(headers=headers) as http:
            (await http.post(args.post, content=args.body)).raise_for_status()
    else:
        shutil.copy(args.component, args.into)


async def list_changed(args):
    """List, change the tools (see `change_tools`), wait for
    `notifications/tools/list_changed`, list again."""
    changed = asyncio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification) or getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with connect(args, message_handler=on_message) as session:
        before = sorted(tool.name for tool in (await session.list_tools()).tools)
        await change_tools(args)
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


def children_cpu_us():
    """Processor time, µs, of this process's children that have ended
    and been waited for."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1e6


async def bench(args):
    """Round trips of `calculate`, after a warm-up: median and p99, µs;
    and over stdio the server's processor time, start-up included, µs."""
    if args.one_core:
        # The server inherits it. On a VM of few cores, where the kernel
        # puts them is what a round trip varies with most.
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    before = children_cpu_us()
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
        "median_us": statistics.median(times) if times else None,
        "p99_us": times[int(len(times) * 0.99) - 1] if times else None,
        # The server has ended and been waited for when the session closes.
        "server_cpu_us": children_cpu_us() - before if args.stdio else None,
    }))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stdio", nargs="+")
    parser.add_argument("--http")
    parser.add_argument("--token")
    sub = parser.add_subparsers(dest="scenario", required=True)
    parser.add_argument("--mode", default="session", help="session (ClientSession, the handshake), legacy, auto or 2026-07-28 (Client)")
    sub.add_parser("basics")
    approving = sub.add_parser("approve")
    approving.add_argument("--answer", choices=["approve", "always", "deny", "decline", "withhold"], required=True)
    approving.add_argument("--tool", default="write_file")
    approving.add_argument("--arguments")
    sub.add_parser("start")
    once = sub.add_parser("call_once")
    once.add_argument("--tool", required=True)
    once.add_argument("--arguments", default="{}")
    together = sub.add_parser("at_once")
    together.add_argument("--calls", type=int, required=True)
    together.add_argument("--ms", type=int, required=True)
    beside = sub.add_parser("beside_a_busy_call")
    beside.add_argument("--busy", required=True)
    beside.add_argument("--after-ms", type=int, default=300)
    listening = sub.add_parser("listen")
    listening.add_argument("--component", required=True)
    listening.add_argument("--into", required=True)
    resuming = sub.add_parser("resume")
    resuming.add_argument("--first", required=True)
    resuming.add_argument("--second", required=True)
    resuming.add_argument("--tool", default="write_file")
    resuming.add_argument("--arguments", required=True)
    resuming.add_argument("--answer", choices=["approve", "always", "deny", "decline"], required=True)
    resuming.add_argument("--tamper", choices=["none", "state", "arguments", "replay"], default="none")
    resuming.add_argument("--other", default="{}")
    resuming.add_argument("--wait", type=float, default=0.0)
    slow = sub.add_parser("slow_answer")
    slow.add_argument("--delay", type=float, required=True)
    slow.add_argument("--abandon-after", type=float)
    reloading = sub.add_parser("reload_while_asked")
    reloading.add_argument("--remove", required=True)
    changing = sub.add_parser("list_changed")
    changing.add_argument("--component")
    changing.add_argument("--into")
    changing.add_argument("--post")
    changing.add_argument("--body")
    changing.add_argument("--bearer")
    sub.add_parser("cancel")
    many = sub.add_parser("concurrent")
    many.add_argument("--clients", type=int, default=50)
    many.add_argument("--calls", type=int, default=100)
    timing = sub.add_parser("bench")
    timing.add_argument("--calls", type=int, default=2000)
    timing.add_argument("--one-core", action="store_true", help="run the client, and the server it starts, on one core")
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
    if not args.stdio and not args.http and args.scenario != "resume":
        parser.error("give --stdio CMD… or --http URL")
    scenario = {"call_once": call_once, "at_once": at_once}.get(args.scenario) or globals()[args.scenario]
    asyncio.run(scenario(args))


if __name__ == "__main__":
    main()
