"""`textstats`: statistics about a text, and regular-expression search."""

import re
from collections import Counter
from typing import Annotated

from toolhost import InvalidArgs, WitWorld, plugin, tool  # noqa: F401 (WitWorld: the exports)

plugin("textstats", "0.1.0", "Statistics about text, and regular-expression search")

# The most matches `regex_find` returns, so a broad pattern cannot flood the reply.
MAX_MATCHES = 100
WORD = re.compile(r"[\w']+")
SENTENCE_END = re.compile(r"[.!?]+(?:\s|$)")


@tool(agent_callable=True, tags=["text"], example={"text": "The cat sat. The cat ran!", "top": 2})
def text_stats(text: Annotated[str, "the text to measure"],
               top: Annotated[int, "how many of the most frequent words to list"] = 5) -> dict:
    """Count the characters, words, sentences and lines of a text, and list its most frequent words."""
    if top < 0:
        raise InvalidArgs("`top` must be 0 or more")
    words = [w.lower() for w in WORD.findall(text)]
    return {
        "characters": len(text),
        "words": len(words),
        "sentences": len(SENTENCE_END.findall(text.strip() + " ")) if text.strip() else 0,
        "lines": len(text.splitlines()),
        "average_word_length": round(sum(map(len, words)) / len(words), 2) if words else 0,
        # Sorted, not `most_common(top)`: that imports heapq lazily, and
        # componentize-py bundles only the modules imported at build time.
        "top_words": sorted(Counter(words).items(), key=lambda item: (-item[1], item[0]))[:top],
    }


@tool(agent_callable=True, tags=["text", "regex"], example={"pattern": "[0-9]+", "text": "a1 b22"})
def regex_find(pattern: Annotated[str, "a Python regular expression"],
               text: Annotated[str, "the text to search"],
               ignore_case: Annotated[bool, "match letters in any case"] = False) -> dict:
    """Find every match of a regular expression in a text, with positions and groups."""
    try:
        compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as e:
        raise InvalidArgs(f"`pattern` is not a valid regular expression: {e}")
    matches = []
    for m in compiled.finditer(text):
        if len(matches) == MAX_MATCHES:
            break
        matches.append({"match": m.group(0), "start": m.start(), "end": m.end(), "groups": list(m.groups())})
    return {"count": len(matches), "truncated": len(matches) == MAX_MATCHES, "matches": matches}
