"""Provider dicts in, the same provider dicts out.

Every strategy, :func:`ctxtrim.validate`, :func:`ctxtrim.repair` and ``describe`` take the
data an agent already has — an OpenAI Chat ``messages`` list, Responses ``input`` items, an
Anthropic message list or request body, Gemini ``contents`` or a request body, ctxtrim's own
dicts — as well as messages. A payload is
read with :mod:`ctxtrim.formats` (the format detected as the CLI detects it, or named with
``format=``), the call runs on the messages, and the result is written back in the payload's
own format and shape.

Invariants:

* **Same format, same shape.** A list comes back a list; a request body (``{"model": ...,
  "messages": [...]}``, ``{"input": [...]}``, Anthropic's ``{"system": ..., "messages": ...}``)
  comes back a body with every other key as it was. Entries written back equal the entries
  read (the formats' round trips are exact), as fresh dicts.
* **Nothing changed, same object.** When the call changes nothing, the payload given is
  returned itself, as a list of messages is (``out is payload``).
* **Indices count entries.** A report's ``dropped``/``changed`` and a violation's ``index``
  and ``related_index`` are positions in the payload's list (Anthropic: its ``messages``),
  not in the messages read from it: Chat's consecutive ``tool`` messages are one ctxtrim
  message and Responses' reasoning travels with the item after it, so one message may be
  several entries, and dropping it drops them all.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, TypeAlias

from ctxtrim.errors import FormatError, InvalidMessage
from ctxtrim.messages import Message

if TYPE_CHECKING:
    from ctxtrim.strategies import TrimReport
    from ctxtrim.validate import Violation

__all__ = ["Payload", "ProviderPayload", "is_payload"]

#: Provider data a strategy, ``validate`` or ``repair`` takes besides messages: a list of a
#: format's dicts, or a request body holding one.
ProviderPayload: TypeAlias = list[dict[str, Any]] | dict[str, Any]

#: Where a request body keeps its list, per format (Anthropic's ``system`` is handled apart).
_LIST_KEY = {
    "openai": "messages",
    "responses": "input",
    "anthropic": "messages",
    "gemini": "contents",
    "ctxtrim": "messages",
}
#: The keys a request body of some format keeps its list under.
_BODY_KEYS = frozenset(_LIST_KEY.values())
#: The keys besides the list a format's ``dump`` gives, for the formats that return a dict.
_SYSTEM_KEYS = {"anthropic": ("system",), "gemini": ("system_instruction", "systemInstruction")}


def is_payload(source: object) -> bool:
    """True when ``source`` is provider data rather than messages: a dict, or a list whose
    first item is a dict. O(1): only the first item is looked at."""
    if type(source) is dict:
        return True
    return type(source) is list and bool(source) and type(source[0]) is dict


class Payload:
    """A provider payload read into messages, and the way back to its format and shape."""

    __slots__ = ("_spans", "data", "format", "messages")

    def __init__(self, data: Any, format: str = "auto") -> None:
        if type(data) is dict and format == "auto" and data.keys().isdisjoint(_BODY_KEYS):
            raise FormatError(
                "expected a list of provider messages or a request body with 'messages' "
                f"(or 'input', or 'contents'); got a dict with keys "
                f"{', '.join(map(repr, list(data)[:5]))}"
            )
        from ctxtrim import formats as _formats  # on first use: `import ctxtrim` stays light

        self.data = data
        self.format = (
            _formats.detect(data) if format == "auto" else _formats._name(format, auto=False)
        )
        self.messages: list[Message] = _formats.load(data, self.format)
        self._spans: list[int] | None = None

    def write(self, messages: list[Message]) -> Any:
        """``messages`` in the payload's format and shape; the payload itself if
        ``messages`` is what was read."""
        if messages is self.messages:
            return self.data
        from ctxtrim.formats import dump

        written = dump(messages, self.format)
        if self.format in _SYSTEM_KEYS:
            list_key = _LIST_KEY[self.format]
            ours = (*_SYSTEM_KEYS[self.format], list_key)
            if type(self.data) is list:
                if len(written) > 1:  # a system message that was not in the list
                    what = "an Anthropic message" if list_key == "messages" else "a Gemini contents"
                    raise InvalidMessage(
                        f"a system message cannot be written into {what} list; pass the "
                        f"request body ({{{ours[0]!r}: ..., {list_key!r}: [...]}})",
                        list_key,
                    )
                return written[list_key]
            body = {}
            for key, value in self.data.items():  # the body's own key order
                if key not in ours:
                    body[key] = value
                elif key in written:
                    body[key] = written[key]
            body.update(written)  # a key the body did not have goes last
            return body
        if type(self.data) is dict:
            return {**self.data, _LIST_KEY[self.format]: written}
        return written

    # -- indices -------------------------------------------------------------------------------

    def _starts(self) -> list[int]:
        """For each message read, the index of its first entry; one more at the end."""
        if self._spans is None:
            counts = (self._entries(m) for m in self.messages)
            self._spans = [0, *itertools.accumulate(counts)]
        return self._spans

    def _entries(self, message: Message) -> int:
        from ctxtrim.formats import dump

        written = dump([message], self.format)
        if self.format in _SYSTEM_KEYS:
            return len(written[_LIST_KEY[self.format]])
        return len(written)

    def entry(self, index: int) -> int:
        """The payload index of message ``index``'s first entry."""
        return self._starts()[index]

    def entries(self, indices: tuple[int, ...]) -> tuple[int, ...]:
        """Every payload index the messages ``indices`` were read from."""
        starts = self._starts()
        return tuple(e for i in indices for e in range(starts[i], starts[i + 1]))

    def report(self, report: TrimReport, out: list[Message]) -> TrimReport:
        """``report`` (in message indices) with its indices and sizes counting entries."""
        before = self._starts()[-1]
        dropped = self.entries(report.dropped)
        changed = self.entries(report.changed)
        after = before if out is self.messages else sum(self._entries(m) for m in out)
        import dataclasses  # here: ``import ctxtrim`` loads no dataclasses (ctxtrim._records)

        return dataclasses.replace(
            report,
            messages_before=before,
            messages_after=after,
            dropped=dropped,
            changed=changed,
            dropped_messages=len(dropped),
            changed_messages=len(changed),
            inserted=after - (before - len(dropped)),
        )

    def violation(self, v: Violation) -> Violation:
        """``v`` with its indices, and the message numbers its description names, counting
        entries."""
        import dataclasses
        import re  # here, with the above: only a payload's violations need them

        description = re.sub(
            r"\bmessage (\d+)\b", lambda m: f"message {self.entry(int(m[1]))}", v.description
        )
        return dataclasses.replace(
            v,
            index=self.entry(v.index),
            related_index=None if v.related_index is None else self.entry(v.related_index),
            description=description,
        )
