"""`{{name}}`: a toolhost tool plugin."""

from typing import Annotated

from toolhost import WitWorld, plugin, tool  # noqa: F401 (WitWorld: the exports componentize-py looks for)

plugin("{{name}}", "0.1.0", "Count words in text")


@tool(name="{{name}}", agent_callable=True, example={"text": "one two three"})
def count(text: Annotated[str, "the text to count"]) -> dict:
    """Count the words in a text."""
    return {"words": len(text.split())}
