"""Drop-in replacements for the context trimming of agent frameworks.

Each submodule imports its framework and raises :class:`ImportError` naming the pip extra
when the framework is missing, so importing this package itself costs nothing:

- ``.autogen``: autogen-core's ``*ChatCompletionContext`` classes (``ctxtrim[autogen]``);
- ``.langchain``: langchain-core's ``trim_messages`` (``ctxtrim[langchain]``);
- ``.langchain_middleware``: LangChain v1's ``SummarizationMiddleware`` and
  ``ContextEditingMiddleware`` (``ctxtrim[langchain]``, Python >= 3.11);
- ``.llama_index``: llama-index-core's ``Memory``, subclassed (``ctxtrim[llama-index]``);
- ``.openai_agents``: an openai-agents ``Session`` on any ctxtrim store, and a
  ``session_input_callback`` (``ctxtrim[openai-agents]``);
- ``.pydantic_ai``: a pydantic-ai history processor / capability (``ctxtrim[pydantic-ai]``);
- ``.axio``: ctxtrim stores as axio ``ContextStore`` objects, Python >= 3.12 (``ctxtrim[axio]``);
- ``.google_adk``: a Google ADK plugin / ``before_model_callback`` trimming the model
  request, Python >= 3.11 (``ctxtrim[adk]``).

Invariant shared by all of them: the framework's own message objects go in and come out
(never copies or dicts), and every history handed back is pair-safe — no tool result
without its call, no call cut from its result — because the cut is chosen by the Rust core
(:class:`ctxtrim.MessageLog`) on a skeleton of each message (its role, tool ids and token
count), not by the framework's list slicing.
"""

__all__: list[str] = []
