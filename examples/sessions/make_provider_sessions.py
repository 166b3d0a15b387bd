"""Write two agent sessions that use the providers' server-side and built-in tools, reproducibly.

Run: python examples/sessions/make_provider_sessions.py

Each session is written natively in its provider's wire shape, the way a client sends the
history back to the API, not through ctxtrim's converters, so the files test the converters
on the blocks and items ctxtrim keeps verbatim:

* ``anthropic_server_tools.json``  an Anthropic Messages request fragment
  ``{"system": ..., "messages": [...]}`` of a research agent: a PDF document (a real 3-page
  PDF, base64) and an image by URL from the user; server-side web search
  (``server_tool_use`` + ``web_search_tool_result`` in the same assistant message) and
  answers whose ``text`` blocks carry ``web_search_result_location`` and ``page_location``
  citations; MCP tool calls (``mcp_tool_use`` + ``mcp_tool_result``, one failed); client
  tools (``tool_use`` / ``tool_result``, parallel, one failed); code execution
  (``server_tool_use`` + ``code_execution_tool_result``); thinking with signatures, a
  redacted thinking block, and ``cache_control`` breakpoints.
* ``openai_responses_tools.json``  a Responses API ``input`` item list of a computer-use and
  research agent: developer and user messages, reasoning items (encrypted), web searches,
  assistant messages with ``url_citation`` annotations, a computer-use loop of screenshots
  (real PNGs) with a pending safety check acknowledged, a function call and its output, an
  MCP tool listing, an approval request and response and the approved ``mcp_call``, and a
  ``compaction`` item in the middle after which the conversation goes on.

Every payload is validated against the official SDKs' request types before it is written
(``anthropic.types.beta`` message and content block params, ``openai.types.responses``
input item params), strictly: no unknown key, no coercion, every nested list checked. A shape
that is off raises. Nothing is random (ids and opaque payloads are hashes of fixed labels):
running the script again rewrites byte-identical files.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

from anthropic.types.beta import BetaContentBlockParam, BetaMessageParam
from openai.types.responses import ResponseInputItemParam
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from typing_extensions import Required, is_typeddict

HERE = Path(__file__).resolve().parent

ANTHROPIC_FILE = "anthropic_server_tools.json"
RESPONSES_FILE = "openai_responses_tools.json"

# --------------------------------------------------------------------------------------------
# Deterministic ids and opaque payloads

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _bytes(label: str, n: int) -> bytes:
    """``n`` bytes derived from ``label`` (a SHA-256 chain): stable, and unique per label."""
    out = b""
    k = 0
    while len(out) < n:
        out += hashlib.sha256(f"{label}#{k}".encode()).digest()
        k += 1
    return out[:n]


def _b62(label: str, n: int) -> str:
    return "".join(_B62[b % 62] for b in _bytes(label, n))


def _hex(label: str, n: int) -> str:
    return _bytes(label, (n + 1) // 2).hex()[:n]


def _b64(label: str, n: int) -> str:
    """Base64 of ``n`` opaque bytes (a signature, an encrypted index or page content)."""
    return base64.b64encode(_bytes(label, n)).decode("ascii")


def _fernet(label: str, n: int) -> str:
    """An opaque token shaped like OpenAI's ``encrypted_content`` (urlsafe base64, ``gAAAAA``)."""
    return base64.urlsafe_b64encode(b"\x80\x00\x00\x00\x00" + _bytes(label, n)).decode("ascii")


# --------------------------------------------------------------------------------------------
# Real binary attachments, built by hand


def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf(title: str, pages: list[list[str]]) -> bytes:
    """A valid PDF 1.4 file: one page of Helvetica text per entry of ``pages``, a correct
    cross-reference table and an ``/Info`` dictionary with ``title``."""
    n = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n))
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode("ascii"),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for i, lines in enumerate(pages):
        ops = [
            "BT",
            "/F1 16 Tf",
            "72 720 Td",
            f"({_pdf_escape(lines[0])}) Tj",
            "/F1 11 Tf",
            "15 TL",
        ]
        ops += [f"({_pdf_escape(line)}) '" for line in lines[1:]]
        ops += ["ET", "BT", "/F1 9 Tf", "300 40 Td", f"(Page {i + 1} of {n}) Tj", "ET"]
        stream = "\n".join(ops).encode("cp1252")
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents "
            + f"{5 + 2 * i} 0 R >>".encode("ascii")
        )
        objects.append(
            f"<< /Length {len(stream)} >>\nstream\n".encode("ascii") + stream + b"\nendstream"
        )
    objects.append(
        f"<< /Title ({_pdf_escape(title)}) /Producer (make_provider_sessions.py) "
        "/CreationDate (D:20250314090000Z) >>".encode("cp1252")
    )
    out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
    offsets = []
    for k, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{k} 0 obj\n".encode("ascii") + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode("ascii")
    out += b"".join(f"{off:010d} 00000 n \n".encode("ascii") for off in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info {len(objects)} 0 R >>\n"
        f"startxref\n{xref}\n%%EOF\n"
    ).encode("ascii")
    return out


def png(width: int, height: int, shade: int) -> bytes:
    """A valid RGB PNG (a browser-ish frame: a title bar over a page): a tiny screenshot."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    rows = b""
    for y in range(height):
        row = b"\x00"
        for x in range(width):
            if y == 0:
                row += bytes((60, 60, 70))
            elif (x + y + shade) % 5 == 0:
                row += bytes(((shade * 40) % 256, 120, 200))
            else:
                row += bytes((250, 250, 250 - shade))
        rows += row
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x02\x00\x00\x00"
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


# --------------------------------------------------------------------------------------------
# Strict validation against the SDKs' request types

_STRICT = ConfigDict(extra="forbid", strict=True)


def _members_by_type(union: Any) -> dict[str | None, list[TypeAdapter[Any]]]:
    """The request (``TypedDict``) members of an SDK union, as strict validators, by the
    ``type`` they admit (None: the members whose ``type`` may be left out). Anthropic's block
    param union also admits its response models, which take a dict leniently and drop
    unknown keys: they are left out, and each value is checked only against the members of
    its own type, so an error names what is wrong with it."""
    out: dict[str | None, list[TypeAdapter[Any]]] = {}
    for member in get_args(union):
        if not is_typeddict(member):
            continue
        # A TypedDict takes no config of its own; in a list it takes the list's.
        adapter: TypeAdapter[Any] = TypeAdapter(list[member], config=_STRICT)  # type: ignore[valid-type]
        hint = get_type_hints(member, include_extras=True)["type"]
        required = get_origin(hint) is Required
        kinds: list[str | None] = [k for k in get_args(get_args(hint)[0] if required else hint)]
        if not required:  # total=False: the type may be left out
            kinds.append(None)
        for kind in kinds:
            out.setdefault(kind, []).append(adapter)
    if not out:
        raise TypeError(f"no TypedDict member in {union!r}")
    return out


_ANTHROPIC_BLOCKS = _members_by_type(BetaContentBlockParam)
_ANTHROPIC_MESSAGE: TypeAdapter[Any] = TypeAdapter(BetaMessageParam)
_RESPONSES_ITEMS = _members_by_type(ResponseInputItemParam)


def _materialize(value: Any, path: str) -> Any:
    """A validated value as plain data: pydantic validates ``Iterable`` fields lazily, so
    every nested iterator is consumed here (which validates its items)."""
    if isinstance(value, BaseModel):
        raise TypeError(f"{path}: matched the response model {type(value).__name__}")
    if isinstance(value, dict):
        return {k: _materialize(v, f"{path}.{k}") for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return [_materialize(v, f"{path}[{i}]") for i, v in enumerate(value)]


def _check(members: dict[str | None, list[TypeAdapter[Any]]], value: Any, path: str) -> None:
    """``value`` validates strictly against a member of its ``type`` and comes back unchanged
    (no unknown key dropped, nothing coerced); else raise, with each candidate's errors."""
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected an object, got {type(value).__name__}")
    candidates = members.get(value.get("type"), [])
    if not candidates:
        raise ValueError(f"{path}.type: {value.get('type')!r} is not a type of the SDK's union")
    errors = []
    for adapter in candidates:
        try:
            validated = _materialize(adapter.validate_python([value]), path)[0]
        except (ValidationError, TypeError) as e:
            errors.append(str(e))
            continue
        if validated == value:
            return
        errors.append(f"{adapter._type}: changed in validation")
    raise ValueError(f"{path} is not a valid SDK request shape:\n" + "\n".join(errors))


def check_anthropic(body: dict[str, Any]) -> None:
    """Every message is a ``BetaMessageParam`` and every content block a request member of
    ``BetaContentBlockParam`` (strictly); the roles alternate, starting with the user."""
    if set(body) != {"system", "messages"} or not isinstance(body["system"], str):
        raise ValueError("expected {'system': str, 'messages': [...]}")
    for i, message in enumerate(body["messages"]):
        path = f"messages[{i}]"
        try:
            _ANTHROPIC_MESSAGE.validate_python(message)
        except ValidationError as e:
            raise ValueError(f"{path} is not a BetaMessageParam: {e}") from None
        if set(message) != {"role", "content"}:
            raise ValueError(f"{path}: unexpected keys {sorted(message)}")
        if message["role"] != ("user", "assistant")[i % 2]:
            raise ValueError(f"{path}.role: the roles must alternate, starting with user")
        if isinstance(message["content"], str):
            continue
        for j, block in enumerate(message["content"]):
            _check(_ANTHROPIC_BLOCKS, block, f"{path}.content[{j}]")


def check_responses(items: list[dict[str, Any]]) -> None:
    """Every item is a member of ``ResponseInputItemParam`` (strictly)."""
    for i, item in enumerate(items):
        _check(_RESPONSES_ITEMS, item, f"input[{i}]")


# --------------------------------------------------------------------------------------------
# The Anthropic research session

PDF_TITLE = "Cold-Climate Heat Pump Pilot: Winter 2024 Field Report"
PDF_PAGES = [
    [
        "Cold-Climate Heat Pump Pilot - Winter 2024",
        "Summary. Twelve homes in Duluth, MN were retrofitted with ducted cold-climate",
        "air-source heat pumps between October and December 2023 and monitored",
        "through March 2024 at one-minute resolution.",
        "Seasonal COP across the fleet was 2.6, against a design target of 2.4.",
        "No home needed its backup resistance heat above -18 C outdoor temperature.",
        "Median occupant comfort score rose from 6.1 to 8.3 (scale of 10).",
    ],
    [
        "Measured performance by outdoor temperature",
        "Between 0 C and -10 C the fleet-average COP was 2.9.",
        "Between -10 C and -20 C the fleet-average COP was 2.1.",
        "Below -20 C the heat pumps delivered 71 percent of the heating load; the",
        "remainder came from the electric backup strips.",
        "Defrost cycles took 6 percent of compressor run time in January.",
        "Two homes with undersized return ducts showed a COP 0.4 below the fleet.",
    ],
    [
        "Costs and recommendations",
        "Average installed cost was 18,400 USD per home before incentives.",
        "Annual heating cost fell 41 percent against the propane furnaces replaced.",
        "Recommendations: size for the 99 percent design temperature, check return",
        "duct static pressure before install, and set the backup lockout to -18 C.",
        "Next phase: twenty additional homes in Aroostook County, Maine, winter 2025.",
    ],
]
CHART_URL = (
    "https://upload.wikimedia.org/wikipedia/commons/4/4f/Heat_pump_COP_vs_outdoor_temperature.png"
)


def _thinking(label: str, text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": _b64(f"sig:{label}", 240)}


def _text(text: str, *citations: dict[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if citations:
        block["citations"] = list(citations)
    return block


def _srv_id(label: str) -> str:
    return f"srvtoolu_01{_b62(f'srv:{label}', 22)}"


def _tool_id(label: str) -> str:
    return f"toolu_01{_b62(f'tool:{label}', 22)}"


def _mcp_id(label: str) -> str:
    return f"mcptoolu_01{_b62(f'mcp:{label}', 22)}"


_Source = tuple[str, str, str | None]  # (title, url, page_age)


def _web_search(label: str, query: str, sources: list[_Source]) -> list[dict[str, Any]]:
    """A web search call and its result, as the API returns them in one assistant message."""
    sid = _srv_id(label)
    return [
        {"type": "server_tool_use", "id": sid, "name": "web_search", "input": {"query": query}},
        {
            "type": "web_search_tool_result",
            "tool_use_id": sid,
            "content": [
                {
                    "type": "web_search_result",
                    "title": title,
                    "url": url,
                    "encrypted_content": _b64(f"page:{url}", 900),
                    "page_age": age,
                }
                for title, url, age in sources
            ],
        },
    ]


def _cite_web(source: _Source, cited_text: str) -> dict[str, Any]:
    title, url, _ = source
    return {
        "type": "web_search_result_location",
        "cited_text": cited_text,
        "url": url,
        "title": title,
        "encrypted_index": _b64(f"index:{url}:{cited_text}", 96),
    }


def _cite_page(page: int, cited_text: str) -> dict[str, Any]:
    for line in PDF_PAGES[page - 1]:  # the cited text is on the cited page
        if cited_text in line:
            break
    else:
        raise ValueError(f"{cited_text!r} is not on page {page}")
    return {
        "type": "page_location",
        "cited_text": cited_text,
        "document_index": 0,
        "document_title": PDF_TITLE,
        "start_page_number": page,
        "end_page_number": page + 1,
    }


NEEP = (
    "Cold Climate Air Source Heat Pump Specification and Product List",
    "https://neep.org/heating-electrification/ccashp-specification-product-list",
    "March 2, 2025",
)
NRCAN = (
    "Heating and Cooling With a Heat Pump - Natural Resources Canada",
    "https://natural-resources.canada.ca/energy-efficiency/home-energy-efficiency/"
    "heating-cooling-heat-pump",
    "November 18, 2024",
)
CARB = (
    "Field Performance of Cold-Climate Heat Pumps in Minnesota (CARD report)",
    "https://www.mncee.org/field-assessment-cold-climate-air-source-heat-pumps",
    "2 years ago",
)
MN_REBATE = (
    "Heat pump rebates - Minnesota Department of Commerce",
    "https://mn.gov/commerce/energy/consumer/energy-programs/heat-pump-rebates.jsp",
    "January 7, 2025",
)
ME_REBATE = (
    "Whole Home Heat Pump Rebates | Efficiency Maine",
    "https://www.efficiencymaine.com/at-home/heat-pump-system-rebates/",
    "3 weeks ago",
)
RECALL = (
    "Recalls: heat pumps and air conditioners | CPSC.gov",
    "https://www.cpsc.gov/Recalls?search_api_fulltext=heat%20pump",
    None,
)

SPEC_SHEET = "\n".join(
    [
        "Hyper-Heat H2i plus ducted air handler - submittal data (excerpt)",
        "Model: SVZ-KP36NA / SUZ-KA36NAHZ",
        "Rated heating capacity at 47 F: 38,000 Btu/h; at 17 F: 38,000 Btu/h; at 5 F: 38,000 Btu/h",
        "Maximum heating capacity at -13 F: 31,400 Btu/h",
        "HSPF2: 9.5   SEER2: 17.0   COP at 5 F: 1.85",
        "Operating range, heating: -13 F to 75 F outdoor (dry bulb)",
        "Refrigerant: R410A, factory charge 7 lbs 8 oz, line set up to 165 ft",
        "Electrical: 208/230 V, 1 phase, MCA 26 A, MOCP 40 A",
        "Sound pressure (outdoor, heating): 51 dB(A)",
    ]
    + [
        f"Capacity table row {t:+d} F: {38000 - max(0, 5 - t) * 370} Btu/h at "
        f"{round(1.85 + (t - 5) * 0.021, 2)} COP"
        for t in range(-13, 48, 4)
    ]
)


def anthropic_session() -> dict[str, Any]:
    """The research agent's session, checked against the SDK's types."""
    document = base64.b64encode(pdf(PDF_TITLE, PDF_PAGES)).decode("ascii")
    pay_id = _srv_id("payback")
    plot_id = _srv_id("sensitivity")
    quote_id = _mcp_id("quotes")
    crm_fail = _mcp_id("crm-1")
    crm_ok = _mcp_id("crm-2")
    note_id = _tool_id("note")
    spec_a, spec_b, spec_c = _tool_id("spec-a"), _tool_id("spec-b"), _tool_id("spec-c")
    memo_id = _tool_id("memo")
    payback_code = "\n".join(
        [
            "cost = 18400",
            "rebate = 8000",
            "propane_bill = 3150",
            "saving = propane_bill * 0.41",
            "print(f'annual saving: {saving:.0f} USD')",
            "print(f'payback: {(cost - rebate) / saving:.1f} years')",
            "print(f'payback without rebate: {cost / saving:.1f} years')",
        ]
    )
    sensitivity_code = "\n".join(
        [
            "for price in (2.2, 2.8, 3.4):",
            "    bill = 1150 * price",
            "    saving = bill * 0.41",
            "    print(f'propane {price:.1f} USD/gal: payback {(18400 - 8000) / saving:.1f} y')",
        ]
    )
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "url", "url": CHART_URL}},
                {
                    "type": "text",
                    "text": "I'm preparing a memo for our utility's board on cold-climate "
                    "heat pumps. This chart shows how COP drops with outdoor temperature. "
                    "First, what does recent field data say about performance below -15 °C?",
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                _thinking(
                    "t1",
                    "The user wants field data, not lab ratings. Search for cold-climate "
                    "field studies (NEEP list, Minnesota CARD study, NRCan guidance).",
                ),
                _text("I'll look for recent field studies of cold-climate units."),
                *_web_search(
                    "s1",
                    "cold climate air source heat pump field study COP below -15 C",
                    [NEEP, NRCAN, CARB],
                ),
                _text("Field data is more encouraging than the chart's lab curve suggests. "),
                _text(
                    "Listed cold-climate models must keep a COP of at least 1.75 at 5 °F (-15 °C)",
                    _cite_web(NEEP, "COP @ 5°F ≥ 1.75 at maximum capacity operation"),
                ),
                _text(", and "),
                _text(
                    "the Minnesota field assessment measured a seasonal COP of 2.0 to 2.6 "
                    "with backup heat needed mostly below -13 °F",
                    _cite_web(CARB, "seasonal COP between 2.0 and 2.6"),
                    _cite_web(CARB, "backup heat was used primarily below -13°F"),
                ),
                _text(". "),
                _text(
                    "Natural Resources Canada notes that capacity, not efficiency, is the "
                    "limit at the coldest hours",
                    _cite_web(NRCAN, "the heating capacity of the unit decreases"),
                ),
                _text(". So sizing and backup strategy matter more than the COP curve."),
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "document",
                    "source": {
                        "type": "base64",
                        "media_type": "application/pdf",
                        "data": document,
                    },
                    "title": PDF_TITLE,
                    "citations": {"enabled": True},
                    "cache_control": {"type": "ephemeral"},
                },
                {
                    "type": "text",
                    "text": "Here is our own pilot's field report. How do our numbers compare?",
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                _thinking(
                    "t2",
                    "Compare the pilot's seasonal COP and backup use with the CARD numbers. "
                    "Cite the report's pages.",
                ),
                _text("Your pilot sits at the top of the published range: "),
                _text(
                    "a fleet seasonal COP of 2.6 against a 2.4 target",
                    _cite_page(1, "Seasonal COP across the fleet was 2.6"),
                ),
                _text(", "),
                _text(
                    "with no backup heat above -18 °C",
                    _cite_page(1, "No home needed its backup resistance heat above -18 C"),
                ),
                _text(". The cold end is where it thins out: "),
                _text(
                    "between -10 °C and -20 °C the COP averaged 2.1, and below -20 °C the "
                    "heat pumps carried 71% of the load",
                    _cite_page(2, "Between -10 C and -20 C the fleet-average COP was 2.1"),
                    _cite_page(2, "Below -20 C the heat pumps delivered 71 percent"),
                ),
                _text(". Two homes lagged by 0.4 COP because of undersized return ducts"),
                _text(
                    ", which the report turns into a pre-install check",
                    _cite_page(3, "check return"),
                ),
                _text("."),
            ],
        },
        {
            "role": "user",
            "content": "Pull today's installed-cost quotes for the same equipment from our "
            "pricing database.",
        },
        {
            "role": "assistant",
            "content": [
                _thinking("t3", "Use the pricing MCP server's quote lookup for the model."),
                _text("Checking the pricing database."),
                {
                    "type": "mcp_tool_use",
                    "id": quote_id,
                    "name": "lookup_quotes",
                    "server_name": "pricing-db",
                    "input": {"model": "SVZ-KP36NA/SUZ-KA36NAHZ", "region": "MN", "limit": 3},
                },
                {
                    "type": "mcp_tool_result",
                    "tool_use_id": quote_id,
                    "is_error": False,
                    "content": [
                        {
                            "type": "text",
                            "text": json.dumps(
                                {
                                    "quotes": [
                                        {"installer": "North Shore Mechanical", "usd": 17650},
                                        {"installer": "Arrowhead HVAC", "usd": 18900},
                                        {"installer": "Lake Superior Comfort", "usd": 19425},
                                    ],
                                    "as_of": "2025-03-14",
                                },
                                separators=(",", ":"),
                            ),
                        }
                    ],
                },
                _text(
                    "Three current quotes: 17,650, 18,900 and 19,425 USD, averaging 18,658 USD "
                    "- within 1.5% of the pilot's 18,400 USD."
                ),
            ],
        },
        {
            "role": "user",
            "content": "Compute the simple payback with the 8,000 USD state rebate, against "
            "a 3,150 USD yearly propane bill.",
        },
        {
            "role": "assistant",
            "content": [
                _thinking("t4", "Run the numbers in the code execution sandbox."),
                {
                    "type": "server_tool_use",
                    "id": pay_id,
                    "name": "code_execution",
                    "input": {"code": payback_code},
                },
                {
                    "type": "code_execution_tool_result",
                    "tool_use_id": pay_id,
                    "content": {
                        "type": "code_execution_result",
                        "stdout": "annual saving: 1292 USD\npayback: 8.1 years\n"
                        "payback without rebate: 14.2 years\n",
                        "stderr": "",
                        "return_code": 0,
                        "content": [],
                    },
                },
                _text(
                    "At a 41% saving on a 3,150 USD propane bill (1,292 USD a year), the "
                    "payback is 8.1 years with the rebate and 14.2 years without it."
                ),
            ],
        },
        {"role": "user", "content": "Save these figures to the project notes."},
        {
            "role": "assistant",
            "content": [
                _thinking("t5", "Use the client's save_note tool."),
                {
                    "type": "tool_use",
                    "id": note_id,
                    "name": "save_note",
                    "input": {
                        "project": "ccashp-board-memo",
                        "title": "Payback",
                        "body": "Installed 18,400 USD (quotes 17,650-19,425). Rebate 8,000 USD. "
                        "Saving 1,292 USD/y. Payback 8.1 y (14.2 y without rebate).",
                    },
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": note_id,
                    "content": "Saved note 'Payback' to project ccashp-board-memo (rev 7).",
                }
            ],
        },
        {"role": "assistant", "content": [_text("Saved to the project notes (revision 7).")]},
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "Which rebates apply in Minnesota and in Maine, where the next "
                    "phase runs?",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                _thinking("t6", "Two searches: one per state program."),
                *_web_search("s2", "Minnesota heat pump rebate 2025 amount", [MN_REBATE]),
                *_web_search("s3", "Efficiency Maine whole home heat pump rebate", [ME_REBATE]),
                _text(
                    "In Minnesota the state program pays up to 8,000 USD for an income-"
                    "qualified household",
                    _cite_web(MN_REBATE, "up to $8,000 for a heat pump"),
                ),
                _text("; in Maine, "),
                _text(
                    "Efficiency Maine's whole-home rebate is up to 8,000 USD for low-income "
                    "households and 2,000 USD otherwise",
                    _cite_web(ME_REBATE, "$8,000 for low-income"),
                    _cite_web(ME_REBATE, "$2,000 for all other households"),
                ),
                _text("."),
            ],
        },
        {
            "role": "user",
            "content": "Fetch the submittal sheets for the outdoor unit and the air handler, "
            "and the installer's commissioning checklist.",
        },
        {
            "role": "assistant",
            "content": [
                _thinking("t7", "Three fetches in parallel with the client's fetch_url tool."),
                {
                    "type": "tool_use",
                    "id": spec_a,
                    "name": "fetch_url",
                    "input": {"url": "https://example-hvac-docs.com/submittals/SUZ-KA36NAHZ.pdf"},
                },
                {
                    "type": "tool_use",
                    "id": spec_b,
                    "name": "fetch_url",
                    "input": {"url": "https://example-hvac-docs.com/submittals/SVZ-KP36NA.pdf"},
                },
                {
                    "type": "tool_use",
                    "id": spec_c,
                    "name": "fetch_url",
                    "input": {"url": "https://arrowhead-hvac.example.com/commissioning.html"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": spec_a, "content": SPEC_SHEET},
                {
                    "type": "tool_result",
                    "tool_use_id": spec_b,
                    "content": [
                        {
                            "type": "text",
                            "text": "Air handler SVZ-KP36NA: 1,050 CFM high, 0.8 in. w.c. "
                            "maximum external static pressure, 10 kW backup strip option.",
                        }
                    ],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": spec_c,
                    "content": "HTTP 404 Not Found: /commissioning.html",
                    "is_error": True,
                    "cache_control": {"type": "ephemeral", "ttl": "1h"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                _thinking("t8", "The checklist moved; try the site's documents page."),
                _text("The checklist URL is gone; trying the installer's documents page."),
                {
                    "type": "tool_use",
                    "id": _tool_id("spec-d"),
                    "name": "fetch_url",
                    "input": {"url": "https://arrowhead-hvac.example.com/docs/"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": _tool_id("spec-d"),
                    "content": [
                        {
                            "type": "text",
                            "text": "Commissioning checklist (rev 2024-09): 1. Verify line "
                            "set evacuation to 500 microns. 2. Measure return static "
                            "pressure (< 0.5 in. w.c.). 3. Set backup lockout temperature. "
                            "4. Record outdoor unit COP at first cold snap.",
                        }
                    ],
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                _text(
                    "The outdoor unit holds its full 38,000 Btu/h down to 5 °F and 31,400 "
                    "Btu/h at -13 °F; the air handler allows 0.8 in. w.c. external static. "
                    "The installer's checklist already measures return static pressure, "
                    "matching your report's recommendation."
                )
            ],
        },
        {
            "role": "user",
            "content": "How many pilot customers have open service tickets? Check the CRM.",
        },
        {
            "role": "assistant",
            "content": [
                _thinking("t9", "Query the CRM MCP server for tickets tagged with the pilot."),
                {
                    "type": "mcp_tool_use",
                    "id": crm_fail,
                    "name": "search_tickets",
                    "server_name": "crm",
                    "input": {"tag": "ccashp-pilot", "status": "open", "since": "2023-10"},
                },
                {
                    "type": "mcp_tool_result",
                    "tool_use_id": crm_fail,
                    "is_error": True,
                    "content": [
                        {"type": "text", "text": "invalid 'since': expected YYYY-MM-DD"},
                    ],
                },
                _text("The CRM wants a full date; retrying."),
                {
                    "type": "mcp_tool_use",
                    "id": crm_ok,
                    "name": "search_tickets",
                    "server_name": "crm",
                    "input": {"tag": "ccashp-pilot", "status": "open", "since": "2023-10-01"},
                },
                {
                    "type": "mcp_tool_result",
                    "tool_use_id": crm_ok,
                    "is_error": False,
                    "content": "2 open tickets: #4471 (thermostat pairing), #4520 (defrost noise).",
                },
                _text(
                    "Two of the twelve pilot homes have open tickets, neither about heating "
                    "capacity: a thermostat pairing issue and defrost noise."
                ),
            ],
        },
        {
            "role": "user",
            "content": "How sensitive is the payback to the propane price?",
        },
        {
            "role": "assistant",
            "content": [
                _thinking("t10", "Vary propane between 2.2 and 3.4 USD/gal at 1,150 gal/y."),
                {
                    "type": "server_tool_use",
                    "id": plot_id,
                    "name": "code_execution",
                    "input": {"code": sensitivity_code},
                },
                {
                    "type": "code_execution_tool_result",
                    "tool_use_id": plot_id,
                    "content": {
                        "type": "code_execution_result",
                        "stdout": "propane 2.2 USD/gal: payback 10.0 y\n"
                        "propane 2.8 USD/gal: payback 7.9 y\n"
                        "propane 3.4 USD/gal: payback 6.5 y\n",
                        "stderr": "",
                        "return_code": 0,
                        "content": [],
                    },
                },
                _text(
                    "Between 2.20 and 3.40 USD a gallon the payback moves from 10.0 to 6.5 "
                    "years: the propane price matters about as much as the rebate."
                ),
            ],
        },
        {"role": "user", "content": "Draft the memo's key findings, five bullets."},
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": _b64("redacted:t11", 320)},
                _text(
                    "Key findings:\n"
                    "- Our pilot's seasonal COP of 2.6 beats its 2.4 target and the 2.0-2.6 "
                    "range of the Minnesota field assessment.\n"
                    "- No backup heat was needed above -18 °C; below -20 °C the heat pumps "
                    "still carried 71% of the load.\n"
                    "- Installed cost is 18,400 USD, in line with today's quotes "
                    "(17,650-19,425 USD).\n"
                    "- With the 8,000 USD rebate the payback is 8.1 years (6.5-10.0 across "
                    "propane prices).\n"
                    "- Duct static pressure is the main installation risk; the commissioning "
                    "checklist covers it."
                ),
            ],
        },
        {
            "role": "user",
            "content": "Good. Write it to memo.md with the sources listed at the end.",
        },
        {
            "role": "assistant",
            "content": [
                _thinking("t12", "write_file with the bullets and a sources section."),
                {
                    "type": "tool_use",
                    "id": memo_id,
                    "name": "write_file",
                    "input": {
                        "path": "memo.md",
                        "content": "# Cold-climate heat pumps: key findings\n\n"
                        "(five bullets as above)\n\n## Sources\n\n"
                        + "\n".join(f"- {s[0]}: {s[1]}" for s in (NEEP, NRCAN, CARB))
                        + f"\n- {PDF_TITLE} (internal)\n",
                    },
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": memo_id,
                    "content": "Wrote 612 bytes to memo.md",
                    "is_error": False,
                }
            ],
        },
        {
            "role": "assistant",
            "content": [_text("memo.md is written, with the four sources at the end.")],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "Last check: any recalls on these models?",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                _thinking("t13", "Search the CPSC recall database for the model family."),
                *_web_search("s4", "CPSC recall SUZ-KA36NAHZ heat pump", [RECALL]),
                _text(
                    "The CPSC database lists no recall for the SUZ-KA or SVZ-KP series",
                    _cite_web(RECALL, "No results found for SUZ-KA36NAHZ"),
                ),
                _text(". I'd still re-check before the board meeting."),
            ],
        },
        {"role": "user", "content": "Thanks, that's everything."},
        {
            "role": "assistant",
            "content": [_text("You're welcome - good luck with the board.")],
        },
    ]
    body: dict[str, Any] = {
        "system": "You are a research assistant for a utility's building-electrification "
        "team. Use web search for public facts and cite them; use the pricing and CRM MCP "
        "servers and the client tools for internal data. Be concise and quantitative.",
        "messages": messages,
    }
    check_anthropic(body)
    return body


# --------------------------------------------------------------------------------------------
# The OpenAI Responses computer-use session


def _item_id(prefix: str, label: str) -> str:
    return f"{prefix}_{_hex(f'{prefix}:{label}', 48)}"


def _call_id(label: str) -> str:
    return f"call_{_b62(f'call:{label}', 24)}"


def _reasoning(label: str, *summary: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": _item_id("rs", label),
        "summary": [{"type": "summary_text", "text": s} for s in summary],
        "encrypted_content": _fernet(f"rs:{label}", 720),
    }


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


_Cited = tuple[str, str, str]  # (text, title, url): a sentence and the page it cites


def _answer(label: str, parts: list[str | _Cited]) -> dict[str, Any]:
    """An assistant message; cited parts end with a markdown link, annotated as the API does."""
    text = ""
    annotations: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, str):
            text += part
            continue
        sentence, title, url = part
        text += sentence
        domain = url.split("/")[2].removeprefix("www.")
        link = f" ([{domain}]({url}?utm_source=openai))"
        annotations.append(
            {
                "type": "url_citation",
                "start_index": len(text) + 1,
                "end_index": len(text) + len(link),
                "title": title,
                "url": f"{url}?utm_source=openai",
            }
        )
        text += link
    return {
        "type": "message",
        "id": _item_id("msg", label),
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": text, "annotations": annotations, "logprobs": []}
        ],
    }


def _search(label: str, query: str) -> dict[str, Any]:
    return {
        "type": "web_search_call",
        "id": _item_id("ws", label),
        "status": "completed",
        "action": {"type": "search", "query": query},
    }


def _computer(label: str, action: dict[str, Any], *checks: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "computer_call",
        "id": _item_id("cu", label),
        "call_id": _call_id(f"cu:{label}"),
        "action": action,
        "pending_safety_checks": list(checks),
        "status": "completed",
    }


def _screenshot(label: str, shade: int, *acknowledged: dict[str, Any]) -> dict[str, Any]:
    image = base64.b64encode(png(12, 8, shade)).decode("ascii")
    item: dict[str, Any] = {
        "type": "computer_call_output",
        "call_id": _call_id(f"cu:{label}"),
        "output": {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{image}"},
    }
    if acknowledged:
        item["acknowledged_safety_checks"] = list(acknowledged)
    return item


FARES = (
    "Cheap Flights from Boston to Chicago | Google Flights",
    "https://www.google.com/travel/flights/flights-from-boston-to-chicago.html",
)
AIRLINE = (
    "Boston (BOS) to Chicago (ORD) flights | United Airlines",
    "https://www.united.com/en/us/flights-from-boston-to-chicago",
)
BAGS = (
    "Checked bag fees | United Airlines",
    "https://www.united.com/en/us/fly/baggage/checked-bags.html",
)
POLICY_DOC = (
    "Corporate travel policy 2025 (internal)",
    "https://intranet.example.com/policies/travel-2025",
)


def responses_session() -> list[dict[str, Any]]:
    """The computer-use agent's ``input`` items, checked against the SDK's types."""
    safety = {
        "id": f"cu_sc_{_hex('safety', 48)}",
        "code": "malicious_instructions",
        "message": "The page contains text that looks like instructions to the agent. "
        "Confirm before continuing.",
    }
    policy_tools = [
        {
            "name": "get_travel_policy",
            "description": "Return the travel policy limits for an employee grade.",
            "input_schema": {
                "type": "object",
                "properties": {"grade": {"type": "string"}, "trip_type": {"type": "string"}},
                "required": ["grade"],
                "additionalProperties": False,
            },
            "annotations": {"read_only": True},
        },
        {
            "name": "submit_expense",
            "description": "File an expense report line for approval.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "amount_usd": {"type": "number"},
                    "category": {"type": "string", "enum": ["airfare", "hotel", "meals"]},
                    "description": {"type": "string"},
                    "receipt_ref": {"type": "string"},
                },
                "required": ["amount_usd", "category", "description"],
                "additionalProperties": False,
            },
            "annotations": None,
        },
    ]
    expense_args = json.dumps(
        {
            "amount_usd": 238.4,
            "category": "airfare",
            "description": "UA 1127 BOS-ORD, 18 Mar 2025, basic economy + 1 checked bag",
            "receipt_ref": "UA-CONF-K7M2QX",
        },
        separators=(",", ":"),
    )
    items: list[dict[str, Any]] = [
        {
            "type": "message",
            "role": "developer",
            "content": [
                {
                    "type": "input_text",
                    "text": "You are a travel assistant with a browser (computer use), web "
                    "search, the company's travel-policy MCP server and a booking tracker "
                    "tool. Never enter payment details the user has not approved. Cite "
                    "public sources.",
                }
            ],
        },
        _user(
            "Book me a one-way flight Boston to Chicago O'Hare on March 18, arriving "
            "before noon, cheapest nonstop. Compare fares first, then book on the airline "
            "site (the browser is open and I'm logged in)."
        ),
        _reasoning(
            "r1",
            "**Comparing fares**\n\nSearch for nonstop BOS-ORD fares on March 18 before "
            "noon, then check the airline's own site.",
        ),
        _search("w1", "Boston to Chicago O'Hare nonstop flights March 18 morning fares"),
        _reasoning("r2"),
        _search("w2", "United BOS ORD basic economy checked bag fee"),
        _reasoning(
            "r3",
            "**Picking the flight**\n\nUA 1127 at 7:05 is the cheapest nonstop arriving "
            "before noon.",
            "**Bag fee**\n\nBasic economy adds a checked bag fee; mention it.",
        ),
        _answer(
            "a1",
            [
                "The cheapest nonstop arriving before noon is United 1127, departing BOS "
                "7:05 and arriving ORD 9:12, at 198.40 USD in basic economy.",
                ("", *FARES),
                " A checked bag adds 40 USD.",
                ("", *BAGS),
                " I'll book it on united.com.",
                ("", *AIRLINE),
            ],
        ),
        _user("Yes, book UA 1127."),
        _reasoning("r4", "**Starting the browser flow**\n\nTake a screenshot first."),
        _computer("c1", {"type": "screenshot"}),
        _screenshot("c1", 0),
        _reasoning("r5", "**Search form**\n\nClick the 'From' field."),
        _computer("c2", {"type": "click", "button": "left", "x": 412, "y": 288}),
        _screenshot("c2", 1),
        _computer("c3", {"type": "type", "text": "BOS"}),
        _screenshot("c3", 2),
        _reasoning(
            "r6",
            "**Suspicious banner**\n\nA banner asks the agent to change the destination; "
            "ignore it and continue with the user's request.",
        ),
        _computer("c4", {"type": "click", "button": "left", "x": 640, "y": 512}, safety),
        _screenshot("c4", 3, safety),
        _computer("c5", {"type": "scroll", "x": 640, "y": 600, "scroll_x": 0, "scroll_y": 480}),
        _screenshot("c5", 4),
        _computer("c6", {"type": "keypress", "keys": ["ENTER"]}),
        _screenshot("c6", 5),
        _answer(
            "a2",
            [
                "I've selected UA 1127 (7:05 BOS → 9:12 ORD, 198.40 USD) and reached the "
                "payment page. A banner on the page asked me to change the destination; I "
                "ignored it. Shall I pay with the card on file and add one checked bag?"
            ],
        ),
        {"role": "user", "content": "Yes, card on file, one bag. Then log it in the tracker."},
        _reasoning("r7", "**Paying**\n\nClick 'Purchase' with the saved card."),
        _computer("c7", {"type": "click", "button": "left", "x": 980, "y": 702}),
        _screenshot("c7", 6),
        _reasoning("r8", "**Tracker**\n\nLog the booking with log_booking."),
        {
            "type": "function_call",
            "id": _item_id("fc", "f1"),
            "call_id": _call_id("f1"),
            "name": "log_booking",
            "arguments": json.dumps(
                {
                    "traveller": "me",
                    "flight": "UA1127",
                    "date": "2025-03-18",
                    "route": "BOS-ORD",
                    "total_usd": 238.4,
                    "confirmation": "K7M2QX",
                }
            ),
            "status": "completed",
        },
        {
            "type": "function_call_output",
            "call_id": _call_id("f1"),
            "output": json.dumps({"ok": True, "booking_id": "BK-2025-0318-114"}),
        },
        _answer(
            "a3",
            [
                "Booked: UA 1127 on March 18, confirmation K7M2QX, 238.40 USD with one "
                "checked bag. Logged in the tracker as BK-2025-0318-114."
            ],
        ),
        _user("Is that within our travel policy (grade L5, domestic)? If so, file the expense."),
        {
            "type": "compaction",
            "id": _item_id("cmp", "k1"),
            "encrypted_content": _fernet("cmp:k1", 2400),
        },
        {
            "type": "mcp_list_tools",
            "id": _item_id("mcpl", "l1"),
            "server_label": "travel_policy",
            "tools": policy_tools,
        },
        _reasoning("r9", "**Policy check**\n\nLook up the L5 domestic airfare limit."),
        {
            "type": "mcp_call",
            "id": _item_id("mcp", "m1"),
            "server_label": "travel_policy",
            "name": "get_travel_policy",
            "arguments": json.dumps({"grade": "L5", "trip_type": "domestic"}),
            "output": json.dumps(
                {
                    "airfare_cap_usd": 450,
                    "cabin": "economy",
                    "checked_bags": 1,
                    "advance_booking_days": 7,
                }
            ),
            "error": None,
            "status": "completed",
        },
        _reasoning("r10", "**Filing**\n\nWithin the cap; submit the expense (needs approval)."),
        {
            "type": "mcp_approval_request",
            "id": _item_id("mcpr", "a1"),
            "server_label": "travel_policy",
            "name": "submit_expense",
            "arguments": expense_args,
        },
        {
            "type": "mcp_approval_response",
            "approval_request_id": _item_id("mcpr", "a1"),
            "approve": True,
            "reason": "User asked to file the expense if within policy.",
        },
        _reasoning("r11"),
        {
            "type": "mcp_call",
            "id": _item_id("mcp", "m2"),
            "server_label": "travel_policy",
            "name": "submit_expense",
            "arguments": expense_args,
            "approval_request_id": _item_id("mcpr", "a1"),
            "output": json.dumps({"expense_id": "EXP-88213", "state": "pending_manager"}),
            "error": None,
            "status": "completed",
        },
        _answer(
            "a4",
            [
                "It's within policy: the L5 domestic airfare cap is 450 USD in economy with "
                "one checked bag.",
                ("", *POLICY_DOC),
                " I filed expense EXP-88213 for 238.40 USD; it now waits for your manager.",
            ],
        ),
        _user("Great. Take a screenshot of the confirmation page for my records."),
        _reasoning("r12", "**Confirmation**\n\nScreenshot the confirmation page."),
        _computer("c8", {"type": "screenshot"}),
        _screenshot("c8", 7),
        _computer("c9", {"type": "wait"}),
        _screenshot("c9", 8),
        _answer(
            "a5",
            [
                "Here is the confirmation page: UA 1127, March 18, seat 23C, confirmation "
                "K7M2QX. Anything else?"
            ],
        ),
        _user("No, that's all. Thanks!"),
        _reasoning("r13"),
        _answer("a6", ["You're welcome, have a good trip to Chicago!"]),
    ]
    check_responses(items)
    return items


# --------------------------------------------------------------------------------------------
# Files


def render(data: Any) -> str:
    """The file text of a payload."""
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


#: The files this script writes, by name, and the builder of each.
BUILDERS: dict[str, Callable[[], Any]] = {
    ANTHROPIC_FILE: anthropic_session,
    RESPONSES_FILE: responses_session,
}


def build() -> dict[str, str]:
    """Every file's text, by name (validated)."""
    return {name: render(builder()) for name, builder in BUILDERS.items()}


def main() -> None:
    for name, text in build().items():
        (HERE / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
